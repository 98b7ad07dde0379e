// SPDX-License-Identifier: Apache-2.0

package place

import (
	"github.com/tcmprof/tcmprof/elf/thumb"
)

// stallFollowers is how many instructions after a line entry, in the same
// basic block, give the entry's own execution rate.
const stallFollowers = 4

// StallSamples estimates how many of a function's busy samples are
// instruction-fetch stalls, from where the samples fall; it is what ITCM
// would remove. On the board a sample taken while the core waits for a line
// fill stacks the PC of the instruction whose fetch missed, so stall
// samples pile up on line entries: the first instruction fetched from a
// cache line, i.e. one whose predecessor in execution can lie in another
// line (the function's entry, a return point after a call, a branch target
// reached from another line, the instruction after an unconditional
// branch, the first instruction of a line in straight-line code, one that
// crosses into the next line). Every instruction of a basic block executes
// as often as the block, so the samples of the instructions after an entry
// in its block (up to stallFollowers) estimate how many of the entry's
// samples are execution; the rest are stalls. An entry that ends its block
// at once takes the function's mean over instructions that are no entries.
//
// insns are the function's instructions (thumb.Instructions), samples its
// busy samples by PC, line the I-cache line size. The estimate lies in
// [0, the function's samples]; it is 0 for code that runs from a TCM.
func StallSamples(insns []thumb.Instruction, samples map[uint32]int, line uint32) float64 {
	total, _ := StallLines(insns, samples, line)
	return total
}

// LineHeat is what the samples say about one cache line of a flash
// function: the stall samples estimated on its line entries (Stalls, at
// least 0) and the execution samples of those entries (Entries: how often
// the line is entered, in samples of one instruction; a line that missed
// on every entry would stall about penalty × Entries samples).
type LineHeat struct {
	Addr    uint32  `json:"addr"` // the line's address in the planned-from image
	Stalls  float64 `json:"stalls"`
	Entries float64 `json:"entries"`
	// Insns counts the instructions that end in the line and Samples
	// their busy samples, stalls included: pooled over a function, the
	// samples less the stalls per instruction say how often its
	// straight-line code runs, with more samples behind it than a line
	// entry's few.
	Insns   int `json:"insns"`
	Samples int `json:"samples"`
}

// StallLines is StallSamples with the estimate split by cache line, for
// Func.Stalls and Func.Lines.
func StallLines(insns []thumb.Instruction, samples map[uint32]int, line uint32) (float64, []LineHeat) {
	if len(insns) == 0 || line == 0 {
		return 0, nil
	}
	lineOf := func(a uint32) uint32 { return a / line }
	farTarget := make(map[uint32]bool)
	for _, in := range insns {
		if in.Flow == thumb.FlowBranch && lineOf(in.Addr+in.Size-1) != lineOf(in.Target) {
			farTarget[in.Target] = true
		}
	}
	entry := make([]bool, len(insns))
	var total, rest, restCount int
	for i, in := range insns {
		total += samples[in.Addr]
		e := i == 0 || farTarget[in.Addr] || lineOf(in.Addr) != lineOf(in.Addr+in.Size-1)
		if i > 0 {
			prev := insns[i-1]
			e = e || !prev.FallsThrough() || prev.Flow == thumb.FlowCall ||
				lineOf(prev.Addr+prev.Size-1) != lineOf(in.Addr)
		}
		entry[i] = e
		if !e {
			rest += samples[in.Addr]
			restCount++
		}
	}
	if total == 0 {
		return 0, nil
	}
	mean := 0.0
	if restCount > 0 {
		mean = float64(rest) / float64(restCount)
	}
	var stalls float64
	var lines []LineHeat
	for i, in := range insns {
		// An instruction's heat goes to the line it ends in: a miss on
		// the line it starts in would have come at an earlier entry.
		addr := (in.Addr + in.Size - 1) / line * line
		if len(lines) == 0 || lines[len(lines)-1].Addr != addr {
			lines = append(lines, LineHeat{Addr: addr})
		}
		l := &lines[len(lines)-1]
		l.Insns++
		l.Samples += samples[in.Addr]
		if !entry[i] {
			continue
		}
		rate, n := 0, 0
		if in.Flow == thumb.FlowNext {
			for j := i + 1; j < len(insns) && !entry[j] && n < stallFollowers; j++ {
				rate += samples[insns[j].Addr]
				n++
				if insns[j].Flow != thumb.FlowNext {
					break // the block ends here
				}
			}
		}
		own, runs := float64(samples[in.Addr]), mean
		if n > 0 {
			runs = float64(rate) / float64(n)
		}
		stalls += own - runs
		l.Stalls += own - runs
		l.Entries += runs
	}
	for i := range lines {
		lines[i].Stalls = max(lines[i].Stalls, 0)
	}
	return min(max(stalls, 0), float64(total)), lines
}
