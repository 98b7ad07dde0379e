// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/tcmprof/tcmprof/elf/unwind"
	"github.com/tcmprof/tcmprof/internal/texttable"
	"github.com/tcmprof/tcmprof/internal/wording"
	"github.com/tcmprof/tcmprof/sample"
)

// ReportOptions shapes WriteReport.
type ReportOptions struct {
	Top int // functions listed; 0 lists all
	// Wide lists every column (samples per byte and library too) and
	// writes names whole and sentences on one line; otherwise the report
	// fits texttable.Width columns.
	Wide bool
}

// WriteReport prints a as text tables: busy and idle samples, busy share
// per region, per library and per function, the I-cache footprint of the
// busy flash samples, the top callers of the busiest functions, how many
// LRs were trusted and how far stacks were unwound.
func WriteReport(w io.Writer, a *Analysis, o ReportOptions) error {
	ew := &errWriter{w: w}
	width := texttable.Limit(o.Wide)
	say := func(phrases ...string) { fmt.Fprint(ew, texttable.Wrap(width, "  ", phrases...)) }
	say(a.summary()...)
	if a.Gaps != nil {
		say(fmt.Sprintf("warning: %s", a.Gaps))
	}
	fmt.Fprintln(ew)
	n := len(fmt.Sprint(a.Samples)) // the widest count, right-aligned
	fmt.Fprintf(ew, "samples  %*d\n", n, a.Samples)
	fmt.Fprintf(ew, "busy     %*d  %s\n", n, a.Busy.Count, a.Busy)
	fmt.Fprintf(ew, "idle     %*d  %s\n", n, a.Idle.Count, a.Idle)
	if a.Busy.Count == 0 {
		fmt.Fprintln(ew, "\nno busy samples")
	} else {
		groupTable(ew, "region", a.Regions, width)
		if len(a.Libraries) > 0 {
			groupTable(ew, "library", a.Libraries, width)
		}
		functionTable(ew, a, o.Top, o.Wide)
		fmt.Fprintln(ew)
		say(append([]string{"I-cache footprint of busy flash samples:", fmt.Sprintf("%d functions,", a.FlashFunctions)},
			texttable.Phrases(a.Footprint.String(), "; ")...)...)
	}
	if len(a.Callers) > 0 {
		callerTable(ew, a.Callers, width)
	}
	if a.LR.Records > 0 {
		fmt.Fprintln(ew)
		say("LR: " + a.LR.String())
	}
	if a.Unwind.Records > 0 {
		say("unwind: " + a.Unwind.String())
		fmt.Fprint(ew, texttable.Wrap(width, "    ", "  ended: "+stopCounts(a.Unwind.ByStop)))
	}
	for _, warn := range a.Warnings {
		say("warning: " + warn)
	}
	return ew.err
}

// summary is the analysis in one sentence, in phrases for texttable.Wrap
// to break between: the busy share, how much of it runs from flash, and
// the I-cache footprint of that flash code.
func (a *Analysis) summary() []string {
	if a.Busy.Count == 0 {
		return []string{fmt.Sprintf("%d samples, none busy", a.Samples)}
	}
	flash := 0
	for _, g := range a.Regions {
		if g.Name == "flash" {
			flash = g.Samples
		}
	}
	s := []string{fmt.Sprintf("%s busy; %s of it in flash", wording.Percent(a.Busy.Fraction()), wording.Percent(NewShare(flash, a.Busy.Count).Fraction()))}
	if flash > 0 {
		f := a.Footprint
		s[0] += ","
		s = append(s, fmt.Sprintf("in %d functions, %d distinct %d-byte lines = %s (I-cache %s)",
			a.FlashFunctions, f.Lines, f.Geometry.LineSize, kb(f.Bytes), kb(int(f.Geometry.Size))))
	}
	return s
}

// groupTable is the busy share per region or library, the name last as in
// every table.
func groupTable(w io.Writer, what string, gs []Group, width int) {
	fmt.Fprintf(w, "\nbusy by %s\n", what)
	t := texttable.New("  ", "samples", "share", wording.IntervalHeading, what)
	for _, g := range gs {
		t.Row(g.Name, fmt.Sprint(g.Samples), wording.Percent(g.Share.Fraction()), interval(g.Share))
	}
	t.Write(w, width)
}

// functionTable is the busy share per function. Within 80 columns it
// leaves out the samples per byte (rank's key, which lists them) and the
// library (the library table sums them); --wide shows both.
func functionTable(w io.Writer, a *Analysis, top int, wide bool) {
	fs := a.Functions
	title := fmt.Sprintf("busy by function (%d functions)", len(fs))
	if top > 0 && top < len(fs) {
		fs = fs[:top]
		title = fmt.Sprintf("busy by function (top %d of %d)", top, len(a.Functions))
	}
	fmt.Fprintf(w, "\n%s\n", title)
	titles := []string{"samples", "share", wording.IntervalHeading, "size", "region", "function"}
	if wide {
		titles = []string{"samples", "share", wording.IntervalHeading, "size", "samples/B", "region", "library", "function"}
	}
	t := texttable.New("  ", titles...)
	names, sources := make([]string, len(fs)), make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
		if f.Function != nil {
			sources[i] = f.Function.Source
		}
	}
	names = texttable.Disambiguate(names, sources)
	for i, f := range fs {
		cells := []string{fmt.Sprint(f.Samples), wording.Percent(f.Share.Fraction()), interval(f.Share), fmt.Sprint(f.Size)}
		region := wording.Region(string(f.Region))
		if wide {
			lib := f.Library
			if lib == "" {
				lib = "-"
			}
			cells = append(cells, fmt.Sprintf("%.3f", f.Density), region, lib)
		} else {
			cells = append(cells, region)
		}
		t.Row(names[i], cells...)
	}
	t.Write(w, texttable.Limit(wide))
}

// callerTable prints who called the hottest functions.
func callerTable(w io.Writer, fs []FunctionCallers, width int) {
	fmt.Fprintf(w, "\ntop callers of the %d busiest functions\n", len(fs))
	t := texttable.New("  ", "samples", "share", "function, then who called it")
	for _, f := range fs {
		t.Row(f.Name, fmt.Sprint(f.Samples), "")
		for _, c := range f.Callers {
			t.RowUnder(c.Name, fmt.Sprint(c.Samples), wording.Percent(c.Share.Fraction()))
		}
	}
	t.Write(w, width)
}

// stopCounts lists why unwinds ended, most frequent first.
func stopCounts(m map[unwind.Stop]int) string {
	stops := make([]unwind.Stop, 0, len(m))
	for s := range m {
		stops = append(stops, s)
	}
	sort.Slice(stops, func(i, j int) bool {
		if m[stops[i]] != m[stops[j]] {
			return m[stops[i]] > m[stops[j]]
		}
		return stops[i] < stops[j]
	})
	parts := make([]string, len(stops))
	for i, s := range stops {
		parts[i] = fmt.Sprintf("%d %s", m[s], s)
	}
	return strings.Join(parts, ", ")
}

func interval(s Share) string { return wording.Interval(s.Lo, s.Hi) }

// WriteJSON writes a as one JSON document (the same figures as the text).
func WriteJSON(w io.Writer, a *Analysis) error {
	type footprint struct {
		Functions      int    `json:"functions"`
		Lines          int    `json:"lines"`
		Bytes          int    `json:"bytes"`
		CacheBytes     uint32 `json:"cache_bytes"`
		Ways           uint32 `json:"ways"`
		LineSize       uint32 `json:"line_size"`
		SetsOverWays   int    `json:"sets_over_ways"`
		LinesOverWays  int    `json:"lines_over_ways"`
		MaxLinesPerSet int    `json:"max_lines_per_set"`
	}
	type lr struct {
		Records      int `json:"records"`
		Accepted     int `json:"accepted"`
		ByCFI        int `json:"by_cfi"`
		ByCallTarget int `json:"by_call_target"`
		ExcReturn    int `json:"exc_return"`
		NoCall       int `json:"no_call"`
		Stale        int `json:"stale"`
	}
	type unwind struct {
		Records        int            `json:"records"`
		Complete       int            `json:"complete"`
		Completed      int            `json:"completed"`
		CompletedFrame int            `json:"completed_frames"`
		TruncatedDepth int            `json:"truncated_by_depth"`
		Truncated      int            `json:"truncated_other"`
		Failed         int            `json:"failed"`
		FallbackLR     int            `json:"fallback_lr"`
		Frames         int            `json:"frames"`
		ByStop         map[string]int `json:"ended"`
	}
	f := a.Footprint
	doc := struct {
		Samples   int               `json:"samples"`
		Busy      Share             `json:"busy"`
		Idle      Share             `json:"idle"`
		Regions   []Group           `json:"regions"`
		Libraries []Group           `json:"libraries,omitempty"`
		Functions []FunctionStat    `json:"functions"`
		Footprint footprint         `json:"icache_footprint"`
		Callers   []FunctionCallers `json:"callers,omitempty"`
		LR        *lr               `json:"lr,omitempty"`
		Unwind    *unwind           `json:"unwind,omitempty"`
		Warnings  []string          `json:"warnings,omitempty"`
		Missing   *sample.Gaps      `json:"missing,omitempty"`
	}{
		Samples: a.Samples, Busy: a.Busy, Idle: a.Idle, Regions: a.Regions, Libraries: a.Libraries, Functions: a.Functions,
		Footprint: footprint{a.FlashFunctions, f.Lines, f.Bytes, f.Geometry.Size, f.Geometry.Ways, f.Geometry.LineSize, f.SetsOver, f.LinesOver, f.MaxPerSet},
		Callers:   a.Callers,
		Warnings:  a.Warnings,
		Missing:   a.Gaps,
	}
	if a.LR.Records > 0 {
		doc.LR = &lr{a.LR.Records, a.LR.Accepted(), a.LR.ByCFI, a.LR.ByCallTarget, a.LR.ExcReturn, a.LR.NoCall, a.LR.Stale}
	}
	if u := a.Unwind; u.Records > 0 {
		doc.Unwind = &unwind{u.Records, u.Complete, u.Completed, u.CompletedFrames, u.TruncatedDepth, u.Truncated, u.Failed, u.FallbackLR, u.Frames, map[string]int{}}
		for s, n := range u.ByStop {
			doc.Unwind.ByStop[s.String()] = n
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// errWriter keeps the first write error so a report is checked once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
