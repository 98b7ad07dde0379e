// SPDX-License-Identifier: Apache-2.0

package place

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/tcmprof/tcmprof/internal/wording"
	"github.com/tcmprof/tcmprof/profile"
)

// DefaultMinSamples is the fewest samples a function needs to be ranked
// and planned. With k samples the relative standard error of its count is
// about 1/sqrt(k): at 10 samples that is ~32 %, so below it the ordering by
// density is mostly noise, and moving such a function is a guess.
const DefaultMinSamples = 10

// Interval is a closed interval [Lo, Hi].
type Interval struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// RankRow is one function in the ranking.
type RankRow struct {
	Func      *Func
	Samples   int
	Share     float64  // Samples / BusySamples
	ShareCI   Interval // 95 % Wilson interval of Share (profile.NewShare)
	Density   float64  // busy samples per byte
	DensityCI Interval // ShareCI scaled to samples per byte
	// Ranked is false when the function has fewer than the minimum samples;
	// such rows are listed for completeness but never planned.
	Ranked bool
}

// Rank lists the functions that have samples (call in.Validate first),
// densest first (ties by more
// samples, then by symbol, so the order is stable). minSamples <= 0 means
// DefaultMinSamples.
func Rank(in *Input, minSamples int) []RankRow {
	if minSamples <= 0 {
		minSamples = DefaultMinSamples
	}
	var rows []RankRow
	for i := range in.Funcs {
		f := &in.Funcs[i]
		if f.Samples == 0 {
			continue
		}
		// The share and its interval come from profile, like every
		// share report and diff print.
		share := profile.NewShare(f.Samples, in.BusySamples)
		ci := Interval{Lo: share.Lo, Hi: share.Hi}
		scale := float64(in.BusySamples) / float64(f.Size)
		rows = append(rows, RankRow{
			Func:      f,
			Samples:   f.Samples,
			Share:     share.Fraction(),
			ShareCI:   ci,
			Density:   profile.Density(f.Samples, f.Size),
			DensityCI: Interval{Lo: ci.Lo * scale, Hi: ci.Hi * scale},
			Ranked:    f.Samples >= minSamples,
		})
	}
	sort.SliceStable(rows, func(a, b int) bool {
		ra, rb := &rows[a], &rows[b]
		if ra.Density != rb.Density {
			return ra.Density > rb.Density
		}
		if ra.Samples != rb.Samples {
			return ra.Samples > rb.Samples
		}
		return ra.Func.Symbol < rb.Func.Symbol
	})
	return rows
}

// WriteRankTable prints rows as an aligned text table.
func WriteRankTable(w io.Writer, rows []RankRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "samples\tshare\t%s\tsize\tsamples/B\tregion\tlibrary\t  function\n", wording.IntervalHeading)
	for _, r := range rows {
		mark := ""
		if !r.Ranked {
			mark = " (too few samples)"
		}
		lib := r.Func.Library()
		if lib == "" {
			lib = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%.3f\t%s\t%s\t  %s%s\n",
			r.Samples, wording.Percent(r.Share), wording.Interval(r.ShareCI.Lo, r.ShareCI.Hi), r.Func.Size, r.Density,
			wording.Region(string(r.Func.Kind)), lib, r.Func.Key, mark)
	}
	return tw.Flush()
}
