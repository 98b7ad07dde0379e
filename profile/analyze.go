// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"sort"

	"github.com/tcmprof/tcmprof/elf"
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
	Warnings       []string
}

// Group is the busy samples of one region or library.
type Group struct {
	Name    string `json:"name"`
	Samples int    `json:"samples"`
	Share   Share  `json:"share"`
}

// FunctionStat is the busy samples of one physical function (inlined code
// counts for the function it was inlined into, since that is what moves).
type FunctionStat struct {
	Name     string        `json:"name"`
	Addr     uint32        `json:"addr"` // the function's start; the PC for samples outside every function
	Function *elf.Function `json:"-"`    // nil for samples outside every function
	Samples  int           `json:"samples"`
	Share    Share         `json:"share"`
	Size     uint32        `json:"size"`
	// Density is busy samples per byte, the ranking key for placement.
	Density float64        `json:"samples_per_byte"`
	Region  elf.RegionKind `json:"region"`
	Library string         `json:"library,omitempty"`
}

// Analyze reads c against img and computes its figures.
func Analyze(c *sample.Capture, img *elf.Image, opts Options) (*Analysis, error) {
	s, err := Symbolize(c, img, opts)
	if err != nil {
		return nil, err
	}
	return s.Analyze(), nil
}

// Analyze computes the figures of the symbolized samples.
func (s *Symbolized) Analyze() *Analysis {
	a := &Analysis{Samples: len(s.Capture.Records), LR: s.LR, Warnings: s.Warnings}
	busy, idle := 0, 0
	regions := make(map[string]int)
	libraries := make(map[string]int)
	type fkey struct {
		fn   *elf.Function
		addr uint32 // for samples outside every function, the address
	}
	funcs := make(map[fkey]*FunctionStat)
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
		if st.PC.Region == elf.KindFlash {
			flashPCs = append(flashPCs, st.PC.Addr)
			flashFuncs[k] = true
		}
	}
	a.Busy, a.Idle = NewShare(busy, a.Samples), NewShare(idle, a.Samples)
	a.Regions = groups(regions, busy)
	a.Libraries = groups(libraries, busy)
	for _, f := range funcs {
		f.Share = NewShare(f.Samples, busy)
		f.Density = Density(f.Samples, f.Size)
		a.Functions = append(a.Functions, *f)
	}
	sortFunctions(a.Functions)
	a.FlashFunctions = len(flashFuncs)
	a.Footprint = NewFootprint(s.cacheGeometry(), flashPCs)
	return a
}

// cacheGeometry is the I-cache the footprint is measured against.
func (s *Symbolized) cacheGeometry() elf.CacheGeometry {
	if s.Options.ICache != (elf.CacheGeometry{}) {
		return s.Options.ICache
	}
	return s.Board.ICache
}

func groups(counts map[string]int, total int) []Group {
	var gs []Group
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
