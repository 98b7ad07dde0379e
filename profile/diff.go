// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"text/tabwriter"

	pprof "github.com/google/pprof/profile"
	"github.com/tcmprof/tcmprof/elf/board"
	"github.com/tcmprof/tcmprof/internal/wording"
)

// Change is one function's or region's busy share before and after.
type Change struct {
	Name   string `json:"name"`
	Before Share  `json:"before"`
	After  Share  `json:"after"`
	// Delta is the change of the share of busy samples, After − Before, as
	// a fraction: normalised per busy sample, so captures of different
	// lengths compare.
	Delta float64 `json:"delta"`
}

// Diff compares two analyses.
type Diff struct {
	Before, After *Analysis
	Regions       []Change
	Functions     []Change // largest |Delta| first
}

// Compare returns the per-region and per-function changes from before to
// after.
func Compare(before, after *Analysis) *Diff {
	d := &Diff{Before: before, After: after}
	rb, ra := map[string]int{}, map[string]int{}
	for _, g := range before.Regions {
		rb[g.Name] = g.Samples
	}
	for _, g := range after.Regions {
		ra[g.Name] = g.Samples
	}
	d.Regions = changes(rb, ra, before.Busy.Count, after.Busy.Count)
	fb, fa := map[string]int{}, map[string]int{}
	for _, f := range before.Functions {
		fb[f.Name] += f.Samples
	}
	for _, f := range after.Functions {
		fa[f.Name] += f.Samples
	}
	d.Functions = changes(fb, fa, before.Busy.Count, after.Busy.Count)
	return d
}

func changes(before, after map[string]int, nb, na int) []Change {
	names := map[string]bool{}
	for n := range before {
		names[n] = true
	}
	for n := range after {
		names[n] = true
	}
	cs := []Change{} // empty, not null, in diff --json
	for n := range names {
		c := Change{Name: n, Before: NewShare(before[n], nb), After: NewShare(after[n], na)}
		c.Delta = c.After.Fraction() - c.Before.Fraction()
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool {
		if di, dj := math.Abs(cs[i].Delta), math.Abs(cs[j].Delta); di != dj {
			return di > dj
		}
		return cs[i].Name < cs[j].Name
	})
	return cs
}

// WriteDiff prints d as text tables.
func WriteDiff(w io.Writer, d *Diff, o ReportOptions) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "busy  before %s of %d samples, after %s of %d samples\n",
		wording.Percent(d.Before.Busy.Fraction()), d.Before.Samples, wording.Percent(d.After.Busy.Fraction()), d.After.Samples)
	fmt.Fprintln(ew, "shares are of busy samples; change in percentage points")
	changeTable(ew, "region", d.Regions, 0)
	changeTable(ew, "function", d.Functions, o.Top)
	return ew.err
}

func changeTable(w io.Writer, what string, cs []Change, top int) {
	title := fmt.Sprintf("\nby %s\n", what)
	if top > 0 && top < len(cs) {
		title = fmt.Sprintf("\nby %s (largest %d changes of %d)\n", what, top, len(cs))
		cs = cs[:top]
	}
	fmt.Fprint(w, title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "before\tafter\tchange\t  %s\n", what)
	for _, c := range cs {
		fmt.Fprintf(tw, "%s\t%s\t%+.1f pp\t  %s\n", wording.Percent(c.Before.Fraction()), wording.Percent(c.After.Fraction()), 100*c.Delta, c.Name)
	}
	tw.Flush()
}

// DiffBase returns base scaled so that its busy samples count as many as
// after's: given to pprof as -diff_base against after, every difference
// pprof shows is then a change per busy sample, not a change in capture
// length.
func DiffBase(base *pprof.Profile, baseBusy, afterBusy int) (*pprof.Profile, error) {
	if baseBusy <= 0 || afterBusy <= 0 {
		return nil, errors.New("a capture without busy samples cannot be normalised")
	}
	p := base.Copy()
	ratios := make([]float64, len(p.SampleType))
	for i := range ratios {
		ratios[i] = float64(afterBusy) / float64(baseBusy)
	}
	if err := p.ScaleN(ratios); err != nil {
		return nil, err
	}
	p.Comments = append(p.Comments, fmt.Sprintf("tcmprof: diff base, scaled by %d/%d busy samples", afterBusy, baseBusy))
	return p, p.CheckValid()
}

// AnalyzeProfile computes the per-region and per-function figures of a
// profile tcmprof wrote, from its labels (state, region, library) and each
// sample's leaf location (the physical function is the outermost line of
// the inline chain). Sizes are unknown in a profile, so densities are 0.
func AnalyzeProfile(p *pprof.Profile) (*Analysis, error) {
	vi := -1
	for i, st := range p.SampleType {
		if st.Type == "samples" {
			vi = i
		}
	}
	if vi < 0 {
		return nil, errors.New("profile has no samples/count values (not written by tcmprof?)")
	}
	a := &Analysis{}
	busy, idle := 0, 0
	regions, libraries, funcs := map[string]int{}, map[string]int{}, map[string]*FunctionStat{}
	for _, s := range p.Sample {
		n := int(s.Value[vi])
		a.Samples += n
		if len(s.Label[LabelState]) > 0 && s.Label[LabelState][0] == "idle" {
			idle += n
			continue
		}
		busy += n
		region := first(s.Label[LabelRegion], "unknown")
		regions[region] += n
		if lib := s.Label[LabelLibrary]; len(lib) > 0 {
			libraries[lib[0]] += n
		}
		name := "unknown"
		if len(s.Location) > 0 {
			loc := s.Location[0]
			if len(loc.Line) > 0 && loc.Line[len(loc.Line)-1].Function != nil {
				name = loc.Line[len(loc.Line)-1].Function.Name
			} else {
				name = fmt.Sprintf("0x%08x", loc.Address)
			}
		}
		f := funcs[name]
		if f == nil {
			f = &FunctionStat{Name: name, Region: board.RegionKind(region), Library: first(s.Label[LabelLibrary], "")}
			funcs[name] = f
		}
		f.Samples += n
	}
	a.Busy, a.Idle = NewShare(busy, a.Samples), NewShare(idle, a.Samples)
	a.Regions, a.Libraries = groups(regions, busy), groups(libraries, busy)
	a.Functions = []FunctionStat{}
	for _, f := range funcs {
		f.Share = NewShare(f.Samples, busy)
		a.Functions = append(a.Functions, *f)
	}
	sortFunctions(a.Functions)
	return a, nil
}

func first(v []string, def string) string {
	if len(v) == 0 {
		return def
	}
	return v[0]
}
