// SPDX-License-Identifier: Apache-2.0

package loadtest

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Comparison is the before/after figure of the reports: the two runs'
// lossless rates and peaks, and how many times faster the second is.
type Comparison struct {
	Before, After Summary
	// LosslessSpeedup is After.Lossless / Before.Lossless (0 when the
	// first run had no lossless rate); PeakSpeedup the same for the peaks.
	LosslessSpeedup, PeakSpeedup float64
}

// Compare compares two runs.
func Compare(before, after *Run) Comparison {
	c := Comparison{Before: before.Summary, After: after.Summary}
	if c.Before.Lossless > 0 {
		c.LosslessSpeedup = c.After.Lossless / c.Before.Lossless
	}
	if c.Before.Peak > 0 {
		c.PeakSpeedup = c.After.Peak / c.Before.Peak
	}
	return c
}

// WriteComparison prints the comparison as a small table; names label the
// two runs.
func WriteComparison(w io.Writer, c Comparison, before, after string) error {
	lossless := func(s Summary) string {
		if s.Lossless == 0 {
			return "none"
		}
		if s.LosslessIsHighest {
			return fmt.Sprintf("≥ %.0f/s", s.Lossless)
		}
		return fmt.Sprintf("%.0f/s", s.Lossless)
	}
	// A lossless rate that is the highest rate tried is a lower bound, and
	// so is a ratio over it (or an upper bound, below it). So is the peak
	// of such a run: it answered all it was offered, which says how much
	// was offered, not how much it could take.
	speedup := func(v float64, afterBound, beforeBound bool) string {
		switch {
		case v == 0:
			return "-"
		case afterBound && beforeBound:
			return "- (neither run reached its limit)"
		case afterBound:
			return fmt.Sprintf("≥ %.2f×", v)
		case beforeBound:
			return fmt.Sprintf("≤ %.2f×", v)
		}
		return fmt.Sprintf("%.2f×", v)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\t%s\t%s\tspeed-up\t\n", before, after)
	fmt.Fprintf(tw, "lossless rate\t%s\t%s\t%s\t\n", lossless(c.Before), lossless(c.After),
		speedup(c.LosslessSpeedup, c.After.LosslessIsHighest, c.Before.LosslessIsHighest))
	fmt.Fprintf(tw, "peak goodput\t%.1f ± %.1f/s\t%.1f ± %.1f/s\t%s\t\n", c.Before.Peak, c.Before.PeakSD, c.After.Peak, c.After.PeakSD,
		speedup(c.PeakSpeedup, c.After.LosslessIsHighest, c.Before.LosslessIsHighest))
	at := func(s Summary) string {
		if len(s.Curve) == 0 {
			return "-"
		}
		v := fmt.Sprintf("%.1f/s at %.0f/s", s.AtHighest, s.Curve[len(s.Curve)-1].Offered)
		if s.Livelock {
			v += " (livelock)"
		}
		return v
	}
	fmt.Fprintf(tw, "at the highest rate\t%s\t%s\t\t\n", at(c.Before), at(c.After))
	return tw.Flush()
}
