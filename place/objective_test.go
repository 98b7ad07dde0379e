// SPDX-License-Identifier: Apache-2.0

package place

import (
	"math"
	"slices"
	"testing"

	"github.com/tcmprof/tcmprof/elf/thumb"
)

// objectiveInput is three flash functions whose best choice differs by
// objective (no calls, so no veneers; sizes and the block start are
// 4-aligned, so no padding):
//
//	name   bytes  samples  stalls  misses   samples/B  misses/B
//	loop    1000      300       0       5       0.300     0.005
//	parse    600      200     180      90       0.333     0.150
//	filter   600      150     140     100       0.250     0.167
//
// loop is a tight loop that hits in the cache: dense in samples, without
// stalls.
func objectiveInput() *Input {
	in := &Input{ITCMSize: 64 << 10, ITCMUsed: 0x100, BusySamples: 1000}
	addr := uint32(flashBase)
	for _, f := range []struct {
		name            string
		size            uint32
		samples, misses int
		stalls          float64
	}{{"loop", 1000, 300, 5, 0}, {"parse", 600, 200, 90, 180}, {"filter", 600, 150, 100, 140}} {
		in.Funcs = append(in.Funcs, Func{Key: KeyFor(f.name+".c", f.name), Symbol: f.name, Section: ".text." + f.name,
			Object: f.name + ".o", Addr: addr, Size: f.size, Align: 4, Region: "FLASH",
			Samples: f.samples, Stalls: f.stalls, Misses: int64(f.misses)})
		addr += f.size
	}
	return in
}

func planned(p *Plan) []string {
	var names []string
	for _, e := range p.Entries {
		names = append(names, e.Symbol)
	}
	slices.Sort(names)
	return names
}

// TestObjectivesHandComputed checks each objective's choice against the
// optimum worked out by hand, at 1,600 and 1,200 bytes:
//
//   - density (greedy by samples per byte): parse (600 B), then loop
//     (1,600 B in all) fits; filter does not. At 1,200 B loop does not
//     fit after parse, filter does.
//   - samples (exact): {loop, parse} = 500 beats {loop, filter} = 450
//     and {parse, filter} = 350; at 1,200 B only pairs without loop fit
//     or loop alone: {parse, filter} = 350 beats {loop} = 300.
//   - stalls (exact on estimated stalls): {parse, filter} = 320 stall
//     samples beats {loop, parse} = 180, at both budgets.
//   - misses (greedy by measured misses per byte): filter, then parse;
//     loop no longer fits.
func TestObjectivesHandComputed(t *testing.T) {
	for _, tc := range []struct {
		objective Objective
		budget    int64
		want      []string
		stalls    float64
	}{
		{ObjectiveDensity, 1600, []string{"loop", "parse"}, 180},
		{ObjectiveSamples, 1600, []string{"loop", "parse"}, 180},
		{ObjectiveStalls, 1600, []string{"filter", "parse"}, 320},
		{ObjectiveMisses, 1600, []string{"filter", "parse"}, 320},
		{ObjectiveDensity, 1200, []string{"filter", "parse"}, 320},
		{ObjectiveSamples, 1200, []string{"filter", "parse"}, 320},
		{ObjectiveStalls, 1200, []string{"filter", "parse"}, 320},
		{ObjectiveStalls, 1000, []string{"parse"}, 180},
		{ObjectiveSamples, 1000, []string{"loop"}, 0},
	} {
		p, err := Build(objectiveInput(), Options{Budget: tc.budget, Objective: tc.objective, MinSamples: 1,
			CurveBudgets: []uint32{0, 1200, 1600}})
		if err != nil {
			t.Fatal(err)
		}
		if got := planned(p); !slices.Equal(got, tc.want) || p.Objective != tc.objective {
			t.Errorf("%s at %d B: planned %v (objective %q), want %v", tc.objective, tc.budget, got, p.Objective, tc.want)
		}
		if p.Prediction.Stalls != tc.stalls || math.Abs(p.Prediction.StallShare-tc.stalls/1000) > 1e-12 {
			t.Errorf("%s at %d B: predicted %.0f stall samples (share %.3f), want %.0f", tc.objective, tc.budget,
				p.Prediction.Stalls, p.Prediction.StallShare, tc.stalls)
		}
		// The interval, by hand: every stall of the image (320) gone, less
		// twice its error, at least; the predicted stalls less twice
		// theirs, plus the layout allowance, at most.
		low := 1 - (320+2*math.Sqrt(320))/1000
		high := (1 - max(0, tc.stalls-2*math.Sqrt(tc.stalls))/1000) * (1 + LayoutLuck)
		if pr := p.Prediction; math.Abs(pr.CyclesLow-low) > 1e-12 || math.Abs(pr.CyclesHigh-high) > 1e-12 ||
			pr.CyclesLow > 1-pr.StallShare || pr.CyclesHigh < 1-pr.StallShare {
			t.Errorf("%s at %d B: cycles between %.4f and %.4f of now (prediction %.4f), want %.4f and %.4f",
				tc.objective, tc.budget, pr.CyclesLow, pr.CyclesHigh, 1-pr.StallShare, low, high)
		}
		// The baseline beside every plan is density-greedy.
		if tc.budget == 1600 && p.Greedy.Samples != 500 {
			t.Errorf("%s at %d B: density-greedy baseline covers %d samples, want 500", tc.objective, tc.budget, p.Greedy.Samples)
		}
		if tc.objective.exact() != p.Optimal {
			t.Errorf("%s: Optimal = %v: only the knapsack objectives are proven", tc.objective, p.Optimal)
		}
	}
}

// TestObjectiveNeedsItsInput: the misses objective without measured
// misses, and an unknown objective, are errors, not empty plans.
func TestObjectiveNeedsItsInput(t *testing.T) {
	in := objectiveInput()
	for i := range in.Funcs {
		in.Funcs[i].Misses = 0
	}
	if _, err := Build(in, Options{Objective: ObjectiveMisses}); err == nil {
		t.Error("misses objective without misses: no error")
	}
	if _, err := Build(objectiveInput(), Options{Objective: "speed"}); err == nil {
		t.Error("unknown objective: no error")
	}
}

// TestStallSamplesHandComputed lays out a function over two 32-byte lines
// (16-bit instructions unless marked) and places samples by hand:
//
//	0x1000  entry (line 0)           12  followers 0x1002-0x1008: 3 each -> 9
//	0x1002-0x1008                     3
//	0x100a  bl (4 bytes)              2  a call: ends its block
//	0x100e  return point (a site)     5  followers 0x1010-0x1012: 2, then b.n -> (2+2+2)/3 = 2 -> 3
//	0x1010, 0x1012                    2
//	0x1014  b.n 0x1000                2  same line: 0x1000 is no far target (it is the entry anyway)
//	0x1016  after the branch (site)   1  followers: 0x1018-0x101e (4) 1 each -> 0
//	0x1018-0x101e                     1
//	0x1020  first of line 1 (site)    7  followers 0x1022-0x1028: 1 each -> 6
//	0x1022-0x103e                     1  (0x103e: bx lr)
//
// Stalls: 9 + 3 + 0 + 6 = 18.
func TestStallSamplesHandComputed(t *testing.T) {
	var insns []thumb.Instruction
	samples := map[uint32]int{}
	add := func(addr, size uint32, flow thumb.Flow, target uint32, n int) {
		insns = append(insns, thumb.Instruction{Addr: addr, Size: size, Flow: flow, Target: target})
		samples[addr] = n
	}
	add(0x1000, 2, thumb.FlowNext, 0, 12)
	for a := uint32(0x1002); a <= 0x1008; a += 2 {
		add(a, 2, thumb.FlowNext, 0, 3)
	}
	add(0x100a, 4, thumb.FlowCall, 0x8000, 2)
	add(0x100e, 2, thumb.FlowNext, 0, 5)
	add(0x1010, 2, thumb.FlowNext, 0, 2)
	add(0x1012, 2, thumb.FlowNext, 0, 2)
	add(0x1014, 2, thumb.FlowBranch, 0x1000, 2)
	add(0x1016, 2, thumb.FlowNext, 0, 1)
	for a := uint32(0x1018); a <= 0x101e; a += 2 {
		add(a, 2, thumb.FlowNext, 0, 1)
	}
	add(0x1020, 2, thumb.FlowNext, 0, 7)
	for a := uint32(0x1022); a < 0x103e; a += 2 {
		add(a, 2, thumb.FlowNext, 0, 1)
	}
	add(0x103e, 2, thumb.FlowJump, 0, 1)
	if got := StallSamples(insns, samples, 32); math.Abs(got-18) > 1e-9 {
		t.Errorf("StallSamples = %v, want 18", got)
	}
	// No samples beyond the execution rate: no stalls; the estimate never
	// goes below 0 or above the function's samples.
	flat := map[uint32]int{}
	for _, in := range insns {
		flat[in.Addr] = 4
	}
	if got := StallSamples(insns, flat, 32); got != 0 {
		t.Errorf("evenly spread samples: StallSamples = %v, want 0", got)
	}
	if got := StallSamples(insns, map[uint32]int{0x1000: 5}, 32); got != 5 {
		t.Errorf("all samples on the entry: StallSamples = %v, want 5", got)
	}
	if got := StallSamples(insns, map[uint32]int{0x1002: 5}, 32); got != 0 {
		t.Errorf("all samples after the entry: StallSamples = %v, want 0 (clamped)", got)
	}
}
