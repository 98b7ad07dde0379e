// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"sort"

	"github.com/tcmprof/tcmprof/elf/board"
	"github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/sample"
)

// Analysis is the figures of one capture: how the samples split into busy
// and idle, and how the busy samples split over memories, libraries and
// functions. Every share is of busy samples.
type Analysis struct {
	Samples    int   // records read
	Busy, Idle Share // of Samples
	Regions    []Group
	Libraries  []Group // empty without a map file
	Functions  []FunctionStat
	// FlashFunctions counts the functions with busy samples in flash, and
	// Footprint is the I-cache footprint of those samples.
	FlashFunctions int
	Footprint      Footprint
	LR             LRStats
	Unwind         UnwindStats // captures with stacks
	// Callers are who called the hottest functions, for captures with LR
	// or stacks: HotFunctions functions, busiest first.
	Callers  []FunctionCallers
	Warnings []string
	// Gaps is what the capture misses (nil when complete): the figures
	// are of the records that arrived, which a report must say first.
	Gaps *sample.Gaps
}

// HotFunctions and TopCallers bound Analysis.Callers: the busiest
// functions, and the callers listed for each (the rest are summed up).
const (
	HotFunctions = 5
	TopCallers   = 5
)

// FunctionCallers is who called one function in its busy samples: the
// function holding the call instruction right above it in each stack.
type FunctionCallers struct {
	Name    string       `json:"name"`
	Samples int          `json:"samples"`
	Callers []CallerStat `json:"callers"`
}

// CallerStat is one caller's part of a function's busy samples.
type CallerStat struct {
	Name    string `json:"name"` // NoCaller when no caller is known; OtherCallers for the rest
	Samples int    `json:"samples"`
	Share   Share  `json:"share"` // of the function's busy samples
}

// Names of CallerStat for samples without a caller and for the callers
// beyond TopCallers.
const (
	NoCaller     = "(no caller known)"
	OtherCallers = "(other callers)"
)

// Group is the busy samples of one region or library.
type Group struct {
	Name    string `json:"name"`
	Samples int    `json:"samples"`
	Share   Share  `json:"share"`
}

// FunctionStat is the busy samples of one physical function (inlined code
// counts for the function it was inlined into, since that is what moves).
type FunctionStat struct {
	Name     string          `json:"name"`
	Addr     uint32          `json:"addr"` // the function's start; the PC for samples outside every function
	Function *image.Function `json:"-"`    // nil for samples outside every function
	Samples  int             `json:"samples"`
	Share    Share           `json:"share"`
	Size     uint32          `json:"size"`
	// Density is busy samples per byte, the ranking key for placement.
	Density float64          `json:"samples_per_byte"`
	Region  board.RegionKind `json:"region"`
	Library string           `json:"library,omitempty"`
}

// Analyze reads c against img and computes its figures.
func Analyze(c *sample.Capture, img *image.Image, opts Options) (*Analysis, error) {
	s, err := Symbolize(c, img, opts)
	if err != nil {
		return nil, err
	}
	return s.Analyze(), nil
}

// Analyze computes the figures of the symbolized samples.
func (s *Symbolized) Analyze() *Analysis {
	a := &Analysis{Samples: len(s.Capture.Records), LR: s.LR, Unwind: s.Unwind, Warnings: s.Warnings, Gaps: s.Capture.Gaps()}
	busy, idle := 0, 0
	regions := make(map[string]int)
	libraries := make(map[string]int)
	type fkey struct {
		fn   *image.Function
		addr uint32 // for samples outside every function, the address
	}
	funcs := make(map[fkey]*FunctionStat)
	callers := make(map[fkey]map[string]int)
	var flashPCs []uint32
	flashFuncs := make(map[fkey]bool)
	for i := range s.Stacks {
		st := &s.Stacks[i]
		if st.Idle {
			idle += st.Count
			continue
		}
		busy += st.Count
		region := string(st.PC.Region)
		if region == "" {
			region = "unknown"
		}
		regions[region] += st.Count
		if s.Options.Map != nil {
			lib := st.PC.Library
			if lib == "" {
				lib = "unknown"
			}
			libraries[lib] += st.Count
		}
		k := fkey{fn: st.PC.Function}
		if k.fn == nil {
			k.addr = st.PC.Addr
		}
		f := funcs[k]
		if f == nil {
			f = &FunctionStat{Name: st.PC.Name(), Function: st.PC.Function, Region: st.PC.Region, Library: st.PC.Library}
			f.Addr = st.PC.Addr
			if st.PC.Function != nil {
				f.Addr, f.Size = st.PC.Function.Addr, st.PC.Function.Size
			}
			funcs[k] = f
		}
		f.Samples += st.Count
		caller := NoCaller
		if len(st.Callers) > 0 {
			caller = st.Callers[0].Name()
		}
		if callers[k] == nil {
			callers[k] = map[string]int{}
		}
		callers[k][caller] += st.Count
		if st.PC.Region == board.KindFlash {
			flashPCs = append(flashPCs, st.PC.Addr)
			flashFuncs[k] = true
		}
	}
	a.Busy, a.Idle = NewShare(busy, a.Samples), NewShare(idle, a.Samples)
	a.Regions = groups(regions, busy)
	a.Libraries = groups(libraries, busy)
	a.Functions = []FunctionStat{}
	for _, f := range funcs {
		f.Share = NewShare(f.Samples, busy)
		f.Density = Density(f.Samples, f.Size)
		a.Functions = append(a.Functions, *f)
	}
	sortFunctions(a.Functions)
	if s.Capture.Header.Fields&sample.FieldLR != 0 {
		for _, f := range a.Functions[:min(HotFunctions, len(a.Functions))] {
			k := fkey{fn: f.Function}
			if k.fn == nil {
				k.addr = f.Addr
			}
			a.Callers = append(a.Callers, topCallers(f, callers[k]))
		}
	}
	a.FlashFunctions = len(flashFuncs)
	a.Footprint = NewFootprint(s.cacheGeometry(), flashPCs)
	return a
}

// cacheGeometry is the I-cache the footprint is measured against.
func (s *Symbolized) cacheGeometry() board.CacheGeometry {
	if s.Options.ICache != (board.CacheGeometry{}) {
		return s.Options.ICache
	}
	return s.Board.ICache
}

func groups(counts map[string]int, total int) []Group {
	gs := []Group{} // empty, not null, in report --json
	for name, n := range counts {
		gs = append(gs, Group{Name: name, Samples: n, Share: NewShare(n, total)})
	}
	sort.Slice(gs, func(i, j int) bool {
		if gs[i].Samples != gs[j].Samples {
			return gs[i].Samples > gs[j].Samples
		}
		return gs[i].Name < gs[j].Name
	})
	return gs
}

// sortFunctions orders by busy samples, most first, then by name.
func sortFunctions(fs []FunctionStat) {
	sort.Slice(fs, func(i, j int) bool {
		if fs[i].Samples != fs[j].Samples {
			return fs[i].Samples > fs[j].Samples
		}
		return fs[i].Name < fs[j].Name
	})
}

// topCallers lists f's TopCallers busiest callers, the rest summed up.
func topCallers(f FunctionStat, counts map[string]int) FunctionCallers {
	fc := FunctionCallers{Name: f.Name, Samples: f.Samples}
	for name, n := range counts {
		fc.Callers = append(fc.Callers, CallerStat{Name: name, Samples: n, Share: NewShare(n, f.Samples)})
	}
	sort.Slice(fc.Callers, func(i, j int) bool {
		a, b := fc.Callers[i], fc.Callers[j]
		if a.Samples != b.Samples {
			return a.Samples > b.Samples
		}
		return a.Name < b.Name
	})
	if len(fc.Callers) > TopCallers {
		rest := 0
		for _, c := range fc.Callers[TopCallers:] {
			rest += c.Samples
		}
		fc.Callers = append(fc.Callers[:TopCallers], CallerStat{Name: OtherCallers, Samples: rest, Share: NewShare(rest, f.Samples)})
	}
	return fc
}
