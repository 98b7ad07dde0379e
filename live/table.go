// SPDX-License-Identifier: Apache-2.0

package live

import (
	"sort"
	"time"

	"github.com/tcmprof/tcmprof/elf/board"
	"github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/internal/wording"
	"github.com/tcmprof/tcmprof/profile"
	"github.com/tcmprof/tcmprof/sample"
)

// SortKey orders the function rows of a table.
type SortKey int

const (
	// ByShare: most busy samples first.
	ByShare SortKey = iota
	// ByDensity: most busy samples per byte first, the ranking placement
	// uses; rows without a size (inlined code) come last.
	ByDensity
)

func (k SortKey) String() string {
	if k == ByDensity {
		return "samples/B"
	}
	return "share"
}

// View says which figures a table shows.
type View struct {
	Cumulative bool // since the start or the last reset; otherwise the window
	Sort       SortKey
}

// Table is what one refresh shows. Every share is of busy samples, as in
// report.
type Table struct {
	View
	Inline  bool          // functions are physical functions, inlined code folded in
	Elapsed time.Duration // from the start of the run to the last tick
	Span    time.Duration // the time the figures cover
	Samples int           // records received in the span
	Rate    float64       // records received per second over the span
	Busy    profile.Share // of Samples
	Loss    Loss          // in the span
	// Functions has every function with busy samples, in Sort order;
	// Regions and Contexts (exception or thread; nil unless the run
	// records either) by share.
	Functions []Row
	Regions   []Row
	Contexts  []Row
}

// Row is the busy samples of one function, region or context.
type Row struct {
	Name    string        `json:"name"`
	Samples int           `json:"samples"`
	Share   profile.Share `json:"share"`
	// Size and Density are the physical function's bytes and busy samples
	// per byte; 0 for inlined code, regions and contexts.
	Size    uint32  `json:"size,omitempty"`
	Density float64 `json:"samples_per_byte,omitempty"`
	// Region is where a function's code is ("mixed" for inlined code found
	// in several regions).
	Region string `json:"region,omitempty"`
}

// count is the records of one stack in the span of a table.
type count struct {
	key stackKey
	n   int64
}

// Table builds the table of the last closed interval's figures.
func (a *Aggregator) Table(v View) *Table {
	a.mu.Lock()
	t := &Table{View: v, Inline: a.opts.Inline, Elapsed: a.lastTick.Sub(a.runStart)}
	counts, samples := a.window, a.windowSamples
	t.Loss = a.windowLoss
	if len(a.closed) > 0 {
		t.Span = a.closed[len(a.closed)-1].end.Sub(a.closed[0].start)
	}
	if v.Cumulative {
		counts, samples, t.Loss, t.Span = a.total, a.totalSamples, a.totalLoss, a.lastTick.Sub(a.totalStart)
	}
	var cs []count
	for id, n := range counts {
		if n > 0 {
			cs = append(cs, count{a.keys[id], n})
		}
	}
	a.mu.Unlock()

	t.Samples = samples
	if t.Span > 0 {
		t.Rate = float64(samples) / t.Span.Seconds()
	}
	a.symMu.Lock()
	defer a.symMu.Unlock()
	functions := make(map[functionKey]*Row)
	regions := make(map[string]*Row)
	contexts := make(map[string]*Row)
	busy := 0
	for _, c := range cs {
		site := a.sites.At(c.key.pc)
		thread := ""
		if a.fields&sample.FieldThread != 0 {
			thread = profile.ThreadName(a.threadNames, c.key.thread)
		}
		if a.idle.IdleSample(site, c.key.exc, thread) {
			continue
		}
		n := int(c.n)
		busy += n
		fk, name, fn := a.function(site)
		f := functions[fk]
		if f == nil {
			f = &Row{Name: name, Region: regionName(site.Region)}
			if fn != nil {
				f.Size = fn.Size
			}
			functions[fk] = f
		} else if f.Region != regionName(site.Region) {
			f.Region = "mixed"
		}
		f.Samples += n
		addTo(regions, regionName(site.Region), n)
		if a.fields&(sample.FieldExc|sample.FieldThread) != 0 {
			ctx := profile.ContextName(c.key.exc)
			if c.key.exc == 0 && thread != "" {
				ctx = thread
			}
			addTo(contexts, ctx, n)
		}
	}
	t.Busy = profile.NewShare(busy, samples)
	t.Functions = rows(functions, busy)
	for i := range t.Functions {
		f := &t.Functions[i]
		f.Density = profile.Density(f.Samples, f.Size)
	}
	sortRows(t.Functions, v.Sort)
	t.Regions = rows(regions, busy)
	sortRows(t.Regions, ByShare)
	if a.fields&(sample.FieldExc|sample.FieldThread) != 0 {
		t.Contexts = rows(contexts, busy)
		sortRows(t.Contexts, ByShare)
	}
	return t
}

// functionKey tells function rows apart: a physical function (or, outside
// every function, an address), or an inlined function by name.
type functionKey struct {
	fn      *image.Function
	addr    uint32
	inlined string
}

// function is the row a sample at site counts for: its innermost inlined
// function, or (Inline, or code not inlined) its physical function, which
// is then returned too.
func (a *Aggregator) function(site *profile.Site) (functionKey, string, *image.Function) {
	if !a.opts.Inline && len(site.Frames) > 1 {
		name := site.Frames[0].Function
		return functionKey{inlined: name}, name, nil
	}
	if site.Function == nil {
		return functionKey{addr: site.Addr}, site.Name(), nil
	}
	return functionKey{fn: site.Function}, site.Name(), site.Function
}

func regionName(k board.RegionKind) string { return wording.Region(string(k)) }

func addTo(m map[string]*Row, name string, n int) {
	r := m[name]
	if r == nil {
		r = &Row{Name: name}
		m[name] = r
	}
	r.Samples += n
}

func rows[K comparable](m map[K]*Row, busy int) []Row {
	out := make([]Row, 0, len(m))
	for _, r := range m {
		r.Share = profile.NewShare(r.Samples, busy)
		out = append(out, *r)
	}
	return out
}

func sortRows(rs []Row, by SortKey) {
	sort.Slice(rs, func(i, j int) bool {
		a, b := &rs[i], &rs[j]
		if by == ByDensity && a.Density != b.Density {
			return a.Density > b.Density
		}
		if a.Samples != b.Samples {
			return a.Samples > b.Samples
		}
		return a.Name < b.Name
	})
}
