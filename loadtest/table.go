// SPDX-License-Identifier: Apache-2.0

package loadtest

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the run per offered rate (mean ± sd over passes) and
// its summary.
func WriteTable(w io.Writer, r *Run) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "offered/s\tsent/s\tgoodput/s\t± sd\tloss %\tlate\tdup\treord\tRTT p50 ms\tp99 ms\t\t")
	for _, p := range r.Summary.Curve {
		fmt.Fprintf(tw, "%.0f\t%.0f\t%.1f\t%.1f\t%.2f\t%d\t%d\t%d\t%.3f\t%.3f\t%s\t\n", p.Offered, p.Achieved, p.Goodput, p.GoodputSD,
			p.LossPct, p.Late, p.Duplicates, p.Reordered, p.RTTP50, p.RTTP99, flags(p))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, summaryText(r))
	return err
}

// flags marks a rate that was not answered in every pass, or that the host
// could not send.
func flags(p RatePoint) string {
	var f []string
	if !p.Answered {
		f = append(f, "<99%")
	}
	if p.HostLimited {
		f = append(f, "HOST-LIMITED")
	}
	return strings.Join(f, " ")
}

// summaryText is the run's verdict in a few lines.
func summaryText(r *Run) string {
	s := r.Summary
	var b strings.Builder
	passes := "the pass"
	if n := r.Settings.Passes; n > 1 {
		passes = fmt.Sprintf("all %d passes", n)
	}
	switch {
	case len(s.Curve) == 0:
		b.WriteString("no steps\n")
		return b.String()
	case s.Lossless == 0:
		fmt.Fprintf(&b, "lossless rate: none (%.0f/s, the lowest rate, already lost more than 1 %%)\n", s.Curve[0].Offered)
	case s.LosslessIsHighest:
		fmt.Fprintf(&b, "lossless rate: ≥ %.0f/s (every rate answered in %s; the limit is higher)\n", s.Lossless, passes)
	default:
		fmt.Fprintf(&b, "lossless rate: %.0f/s (every step of %s up to it answered at ≥ 99 %%)\n", s.Lossless, passes)
	}
	fmt.Fprintf(&b, "peak goodput: %.1f ± %.1f/s (mean ± sd of each pass's highest; the mean curve peaks at %.0f/s offered)\n", s.Peak, s.PeakSD, s.PeakAt)
	last := s.Curve[len(s.Curve)-1]
	verdict := "no livelock"
	if s.Livelock {
		verdict = "receive livelock: goodput falls as the offered rate grows"
	}
	share := 0.0
	if s.Peak > 0 {
		share = 100 * s.AtHighest / s.Peak
	}
	fmt.Fprintf(&b, "at the highest rate (%.0f/s): %.1f ± %.1f/s, %.0f %% of peak: %s\n", last.Offered, s.AtHighest, s.AtHighestSD, share, verdict)
	if s.HostLimitedFrom > 0 {
		fmt.Fprintf(&b, "host-limited from %.0f/s: this host sent less than 99 %% of the offered rate; those steps measure the host, not the target\n", s.HostLimitedFrom)
	}
	if r.Unmatched > 0 {
		fmt.Fprintf(&b, "%d datagrams arrived that match nothing sent (truncated, merged, corrupted or another sender's)\n", r.Unmatched)
	}
	return b.String()
}

// csvHeader names WriteCSV's columns: one row per step of each pass.
var csvHeader = []string{"pass", "offered", "sent", "send_errors", "achieved", "echoes", "in_window", "goodput",
	"late", "duplicates", "reordered", "loss_pct", "rtt_p50_ms", "rtt_p99_ms", "host_limited", "answered"}

// WriteCSV writes every step of every pass, one row each.
func WriteCSV(w io.Writer, r *Run) error {
	cw := csv.NewWriter(w)
	cw.Write(csvHeader)
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, s := range r.Steps {
		cw.Write([]string{strconv.Itoa(s.Pass), f(s.Offered), strconv.Itoa(s.Sent), strconv.Itoa(s.SendErrors), f(s.Achieved),
			strconv.Itoa(s.Echoes), strconv.Itoa(s.InWindow), f(s.Goodput), strconv.Itoa(s.Late), strconv.Itoa(s.Duplicates),
			strconv.Itoa(s.Reordered), f(s.LossPct), f(s.RTTP50), f(s.RTTP99), strconv.FormatBool(s.HostLimited), strconv.FormatBool(s.Answered)})
	}
	cw.Flush()
	return cw.Error()
}
