// SPDX-License-Identifier: Apache-2.0

package sim

// Result is what one run counted in its window. Addresses are the trace's
// (where the traced image ran the code); lines are where the code runs
// under the run's layout.
type Result struct {
	Config Config
	Layout Layout

	Instructions uint64 // executed in the window (excluded code not counted)
	Fetches      uint64 // cached line fetches (consecutive fetches of one line in a block count once)
	Misses       uint64 // of those, line fills
	Units        uint64 // whole units in the window; 0 without a unit marker
	// TailInstructions ran after the last marker entry of a window that
	// runs to the end of the trace: counted, but in no whole unit.
	TailInstructions uint64

	Code    []Code   // executions of each instruction, by address
	Sites   []Site   // fetches and fills of each fetching instruction and line, by address
	Samples []uint32 // the modelled PC samples, with Config.Sampling
}

// Code is the executions of the instruction at Addr in the window.
type Code struct {
	Addr  uint32
	Count uint64
}

// Site is the fetches of one line by one instruction (the first of its
// block on that line; an instruction crossing a line boundary has two).
type Site struct {
	Addr            uint32 // the instruction
	Line            uint32 // line number: address / line size
	Fetches, Misses uint64
}

// StallCycles are the cycles spent waiting for line fills.
func (r *Result) StallCycles() uint64 { return r.Misses * uint64(r.Config.Penalty) }

// Cycles is the first-order cycle count: one per instruction plus the fills.
func (r *Result) Cycles() uint64 { return r.Instructions + r.StallCycles() }

// StallShare is the share of cycles spent in fills.
func (r *Result) StallShare() float64 { return ratio(r.StallCycles(), r.Cycles()) }

// PerUnit is v per whole unit of the window (0 without units).
func (r *Result) PerUnit(v uint64) float64 { return ratio(v, r.Units) }

// Set is the cache set of a line.
func (r *Result) Set(line uint32) uint32 { return line & (r.Config.Cache.Sets() - 1) }

func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
