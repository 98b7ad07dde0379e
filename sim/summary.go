// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"fmt"
	"sort"

	"github.com/tcmprof/tcmprof/elf/board"
	"github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/elf/mapfile"
)

// Symbols name the traced image's code for a Summary.
type Symbols struct {
	Image *image.Image
	Map   *mapfile.Map // optional: libraries
	Board *board.Board // optional: memory regions
}

// Summary is a Result attributed to functions, libraries and cache sets.
// Its JSON keys are stable (docs/sim.md).
type Summary struct {
	Instructions        uint64  `json:"instructions"`
	Units               uint64  `json:"units"`
	Fetches             uint64  `json:"fetches"`
	Misses              uint64  `json:"misses"`
	StallCycles         uint64  `json:"stall_cycles"`
	Cycles              uint64  `json:"cycles"`
	InstructionsPerUnit float64 `json:"instructions_per_unit"`
	MissesPerUnit       float64 `json:"misses_per_unit"`
	CyclesPerUnit       float64 `json:"cycles_per_unit"`
	StallShare          float64 `json:"stall_share"`
	TailInstructions    uint64  `json:"tail_instructions"`
	// DistinctLines are the cached lines fetched in the window (as
	// report's footprint counts lines with samples); an over-subscribed
	// set has more of them than the cache has ways, so they evict each
	// other as the window runs.
	DistinctLines      int `json:"distinct_lines"`
	OversubscribedSets int `json:"oversubscribed_sets"`

	Functions []Cost    `json:"functions"`
	Libraries []Cost    `json:"libraries"` // empty without a map file
	Sets      []SetCost `json:"sets"`      // sets with fetches, most stalls first
}

// Cost is what one function or library cost in the window.
type Cost struct {
	Name         string           `json:"name"`
	Addr         uint32           `json:"addr,omitempty"` // functions: the start (the PC for code outside every function)
	Size         uint32           `json:"size,omitempty"`
	Region       board.RegionKind `json:"region,omitempty"`
	Library      string           `json:"library,omitempty"`
	Instructions uint64           `json:"instructions"`
	Misses       uint64           `json:"misses"`
	StallCycles  uint64           `json:"stall_cycles"`
	Cycles       uint64           `json:"cycles"`
	CycleShare   float64          `json:"cycle_share"` // of all cycles of the window
}

// SetCost is one cache set's fetches and fills in the window.
type SetCost struct {
	Set         uint32 `json:"set"`
	Lines       int    `json:"lines"` // distinct lines fetched
	Fetches     uint64 `json:"fetches"`
	Misses      uint64 `json:"misses"`
	StallCycles uint64 `json:"stall_cycles"`
}

// Summarize attributes r to the functions of sym.Image (by the trace's
// addresses), to libraries with sym.Map, and to cache sets.
func (r *Result) Summarize(sym Symbols) *Summary {
	penalty := uint64(r.Config.Penalty)
	s := &Summary{
		Instructions: r.Instructions, Units: r.Units, Fetches: r.Fetches, Misses: r.Misses,
		StallCycles: r.StallCycles(), Cycles: r.Cycles(),
		InstructionsPerUnit: r.PerUnit(r.Instructions), MissesPerUnit: r.PerUnit(r.Misses),
		CyclesPerUnit: r.PerUnit(r.Cycles()), StallShare: r.StallShare(), TailInstructions: r.TailInstructions,
	}
	funcs := make(map[any]*Cost)
	libs := make(map[string]*Cost)
	cost := func(addr uint32) (*Cost, *Cost) {
		var key any = addr
		fn := sym.Image.FunctionAt(addr)
		if fn != nil {
			key = fn
		}
		f := funcs[key]
		if f == nil {
			f = &Cost{Name: fmt.Sprintf("0x%08x", addr), Addr: addr}
			if fn != nil {
				f.Name, f.Addr, f.Size = fn.Name, fn.Addr, fn.Size
				if fn.Display != "" {
					f.Name = fn.Display
				}
			}
			if sym.Board != nil {
				f.Region, _ = sym.Board.Classify(addr, func(uint32) bool { return fn != nil && fn.Veneer })
			}
			if sym.Map != nil {
				f.Library = sym.Map.Library(addr)
				if f.Library == "" {
					f.Library = "unknown"
				}
			}
			funcs[key] = f
		}
		if sym.Map == nil {
			return f, nil
		}
		l := libs[f.Library]
		if l == nil {
			l = &Cost{Name: f.Library}
			libs[f.Library] = l
		}
		return f, l
	}
	for _, c := range r.Code {
		f, l := cost(c.Addr)
		f.Instructions += c.Count
		if l != nil {
			l.Instructions += c.Count
		}
	}
	sets := make(map[uint32]*SetCost)
	lines := make(map[uint32]bool)
	for _, site := range r.Sites {
		f, l := cost(site.Addr)
		f.Misses += site.Misses
		if l != nil {
			l.Misses += site.Misses
		}
		set := r.Set(site.Line)
		sc := sets[set]
		if sc == nil {
			sc = &SetCost{Set: set}
			sets[set] = sc
		}
		sc.Fetches += site.Fetches
		sc.Misses += site.Misses
		lines[site.Line] = true
	}
	for line := range lines {
		sets[r.Set(line)].Lines++
	}
	s.DistinctLines = len(lines)
	cycles := r.Cycles()
	finish := func(m map[string]*Cost) []Cost {
		out := make([]Cost, 0, len(m))
		for _, c := range m {
			c.StallCycles = c.Misses * penalty
			c.Cycles = c.Instructions + c.StallCycles
			c.CycleShare = ratio(c.Cycles, cycles)
			out = append(out, *c)
		}
		sort.Slice(out, func(i, j int) bool {
			if out[i].Cycles != out[j].Cycles {
				return out[i].Cycles > out[j].Cycles
			}
			if out[i].Name != out[j].Name {
				return out[i].Name < out[j].Name
			}
			return out[i].Addr < out[j].Addr
		})
		return out
	}
	byName := make(map[string]*Cost, len(funcs))
	for _, f := range funcs {
		// Same-named statics stay apart: the key is the name and address.
		byName[fmt.Sprintf("%s@%08x", f.Name, f.Addr)] = f
	}
	s.Functions = finish(byName)
	s.Libraries = finish(libs)
	for _, sc := range sets {
		sc.StallCycles = sc.Misses * penalty
		if sc.Lines > int(r.Config.Cache.Ways) {
			s.OversubscribedSets++
		}
		s.Sets = append(s.Sets, *sc)
	}
	sort.Slice(s.Sets, func(i, j int) bool {
		if s.Sets[i].Misses != s.Sets[j].Misses {
			return s.Sets[i].Misses > s.Sets[j].Misses
		}
		return s.Sets[i].Set < s.Sets[j].Set
	})
	return s
}
