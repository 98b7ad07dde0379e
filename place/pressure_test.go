// SPDX-License-Identifier: Apache-2.0

package place

import (
	"math"
	"slices"
	"testing"

	"github.com/tcmprof/tcmprof/elf/board"
)

// pressureInput is six one-line functions in a 128-byte cache of two sets
// of two 32-byte ways, set = (address / 32) mod 2:
//
//	name  addr  set  stalls  entries  samples
//	A     +0x00  0     100     0.02      310
//	B     +0x20  1       0     0.50      600
//	C     +0x40  0     100     0.02      300
//	D     +0x60  1       0     0.50      200
//	E     +0x80  0     100     0.02      300
//	F     +0xa0  1       0     0         100
//
// Both sets hold three lines, over two ways: A, C and E thrash (300 stall
// samples), B, D and F hit (the hot loops stay most recently used).
func pressureInput(shift FlashShift) *Input {
	in := &Input{ITCMSize: 64 << 10, ITCMUsed: 0x100, BusySamples: 2000, FillPenalty: 500,
		ICache: board.CacheGeometry{Size: 128, Ways: 2, LineSize: 32}, Shift: shift}
	for k, f := range []struct {
		name            string
		stalls, entries float64
		samples         int
	}{{"A", 100, 0.02, 310}, {"B", 0, 0.5, 600}, {"C", 100, 0.02, 300}, {"D", 0, 0.5, 200}, {"E", 100, 0.02, 300}, {"F", 0, 0, 100}} {
		addr := uint32(flashBase + 32*k)
		in.Funcs = append(in.Funcs, Func{Key: KeyFor(f.name+".c", f.name), Symbol: f.name, Section: ".text." + f.name,
			Object: f.name + ".o", Addr: addr, Size: 32, Align: 4, Region: "FLASH", Samples: f.samples,
			Stalls: f.stalls, Lines: []LineHeat{{Addr: addr, Stalls: f.stalls, Entries: f.entries}}})
	}
	return in
}

// TestPressureHandComputed checks the prediction of the stalls left in
// flash against the relinks worked out by hand.
func TestPressureHandComputed(t *testing.T) {
	moved := func(names ...string) []bool {
		inPlan := make([]bool, 6)
		for _, n := range names {
			inPlan[n[0]-'A'] = true
		}
		return inPlan
	}
	for _, tc := range []struct {
		what   string
		shift  FlashShift
		moved  []string
		added  int64
		remain float64
	}{
		// Nothing moves: set 0 thrashes as now.
		{"stock", FlashShift{}, nil, 0, 300},
		// B leaves; C..F move down a line and change sets: set 0 holds
		// A, D, F (over: 100 + 0 + 0, D and F thrash as they do now), set 1
		// holds C and E, which fit.
		{"B moves", FlashShift{}, []string{"B"}, 32, 100},
		// A leaves: set 0 holds B, D, F (their own 0), set 1 C and E.
		{"A moves", FlashShift{}, []string{"A"}, 32, 0},
		// The ITCM load image (64 bytes, before the code) grows by 32
		// bytes: everything moves up a line. Moving F: set 1 holds A, C,
		// E (300), set 0 B and D.
		{"F moves, code shifts", FlashShift{Load: flashBase - 64, Size: 64, CodeStart: flashBase, CodeAlign: 32}, []string{"F"}, 32, 300},
		// Moving A with the same shift: B..F stay where they are.
		{"A moves, code shifts", FlashShift{Load: flashBase - 64, Size: 64, CodeStart: flashBase, CodeAlign: 32}, []string{"A"}, 32, 0},
		// A 24-byte growth rounds up to 8 (32) and the code to its
		// 64-byte alignment: everything moves up two lines, same sets.
		{"nothing moves, code aligned", FlashShift{Load: flashBase - 64, Size: 64, CodeStart: flashBase, CodeAlign: 64}, nil, 24, 300},
	} {
		pr := newPressure(pressureInput(tc.shift))
		if got := pr.remaining(moved(tc.moved...), tc.added); math.Abs(got-tc.remain) > 1e-9 {
			t.Errorf("%s: %v stall samples left, want %v", tc.what, got, tc.remain)
		}
	}
	// Without F, set 1 holds B and D, which fit: were they to land in an
	// over-subscribed set they would stall as A, C and E do per entry:
	// 300 stall samples over 500 × 6 entries (each 2 here) = 0.1 of the
	// penalty per entry, so B and D would stall 0.1 × 500 × 0.5 = 25.
	in := pressureInput(FlashShift{})
	in.Funcs = in.Funcs[:5]
	for _, i := range []int{0, 2, 4} {
		in.Funcs[i].Lines[0].Entries = 2
	}
	pr := newPressure(in)
	for _, k := range []int{1, 3} {
		if got := pr.lines[k][0].thrash; math.Abs(got-25) > 1e-9 {
			t.Errorf("%s would stall %v, want 25", in.Funcs[k].Symbol, got)
		}
	}
	if got := pr.lines[0][0].thrash; got != 100 {
		t.Errorf("A thrashes now: it would stall its own %v, want 100", got)
	}
}

// TestStallsObjectiveChoosesByPressure: at 32 bytes density-greedy moves
// B (600 samples, the densest), which leaves A, D and F in one set (100
// stall samples predicted); the knapsack on estimated stalls moves A (100
// stalls, 310 samples: the tie-break), which leaves none. The gain, 100,
// is over twice the sampling error of the 910 samples the plans differ
// in (2 × 30.2), so the stalls objective picks A and predicts 300 stall
// samples removed, density's 200. With A's and B's samples 40 times as
// many, the error is 6 times as large (2 × 190.8) and density stays.
func TestStallsObjectiveChoosesByPressure(t *testing.T) {
	p, err := Build(pressureInput(FlashShift{}), Options{Budget: 32, Objective: ObjectiveStalls, MinSamples: 1,
		CurveBudgets: []uint32{0, 32}})
	if err != nil {
		t.Fatal(err)
	}
	if got := planned(p); !slices.Equal(got, []string{"A"}) {
		t.Errorf("planned %v, want [A]", got)
	}
	if p.Prediction.Stalls != 300 || p.Greedy.Stalls != 200 || p.Greedy.Functions != 1 {
		t.Errorf("predicted %v stall samples removed (density-greedy %v, %d functions), want 300 and 200 (1)",
			p.Prediction.Stalls, p.Greedy.Stalls, p.Greedy.Functions)
	}
	if c := p.Curve[0]; c.Exact.Stalls != 0 || c.Exact.Functions != 0 {
		t.Errorf("at 0 bytes: %+v, want nothing moved and nothing removed", c.Exact)
	}
	// The interval holds the prediction even where the pressure removes
	// more stalls than the functions' own estimates sum to (the demo's
	// plans printed a lower bound above the prediction).
	lines := pressureInput(FlashShift{}) // line heat above the functions' own estimates
	for i := range lines.Funcs {
		lines.Funcs[i].Stalls /= 4
	}
	q, err := Build(lines, Options{Budget: 32, Objective: ObjectiveStalls, MinSamples: 1, CurveBudgets: []uint32{32}})
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range []Prediction{p.Prediction, p.Greedy, q.Prediction} {
		if point := 1 - pr.StallShare; pr.CyclesLow > point || pr.CyclesHigh < point {
			t.Errorf("cycles between %.4f and %.4f of now, but predicted %.4f", pr.CyclesLow, pr.CyclesHigh, point)
		}
	}
	noisy := pressureInput(FlashShift{})
	noisy.Funcs[0].Samples *= 40
	noisy.Funcs[1].Samples *= 40
	noisy.BusySamples = 40000
	p, err = Build(noisy, Options{Budget: 32, Objective: ObjectiveStalls, MinSamples: 1, CurveBudgets: []uint32{32}})
	if err != nil {
		t.Fatal(err)
	}
	if got := planned(p); !slices.Equal(got, []string{"B"}) {
		t.Errorf("with 40 times the samples: planned %v, want density's [B]", got)
	}
}
