// SPDX-License-Identifier: Apache-2.0

package place

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"
)

const flashBase = 0x6000_0000

// randomInput builds an image with n sampled flash functions, a few
// functions already in ITCM and, when withCalls, random call edges among
// them and to unsampled flash functions. Sizes are even (Thumb), alignments
// 2, 4 or 8, and the free ITCM starts at an address that is not 4-aligned,
// so the block's own alignment is exercised too.
func randomInput(rng *rand.Rand, n int, withCalls bool) *Input {
	in := &Input{ITCMStart: 0, ITCMSize: 128 << 10, ITCMUsed: uint32(2 * rng.Intn(40))}
	addr := uint32(flashBase)
	add := func(name string, a uint32, size uint32, align uint32, samples int) {
		in.Funcs = append(in.Funcs, Func{
			Key: KeyFor("src/"+name+".c", name), Symbol: name, Section: ".text." + name,
			Object: name + ".o", Addr: a, Size: size, Align: align, Region: "FLASH", Samples: samples,
		})
		in.BusySamples += samples
	}
	aligns := []uint32{2, 4, 8}
	for i := 0; i < n; i++ {
		align := aligns[rng.Intn(len(aligns))]
		addr = alignUp(addr, align)
		size := uint32(2 * (1 + rng.Intn(40)))
		add(fmt.Sprintf("f%d", i), addr, size, align, 1+rng.Intn(100))
		addr += size
	}
	cold := len(in.Funcs)
	for i := 0; i < 4; i++ {
		add(fmt.Sprintf("cold%d", i), addr, 16, 4, 0)
		addr += 16
	}
	itcm := len(in.Funcs)
	for i := 0; i < 2; i++ {
		add(fmt.Sprintf("itcm%d", i), 0x40+uint32(i)*0x20, 0x1e, 2, 0)
		in.Funcs[len(in.Funcs)-1].Region = "ITCM"
	}
	in.ITCMUsed += 0x80
	in.BusySamples += rng.Intn(500)
	if withCalls {
		for e := 0; e < 2*n; e++ {
			c := rng.Intn(len(in.Funcs))
			t := rng.Intn(len(in.Funcs))
			if rng.Intn(4) == 0 {
				t = cold + rng.Intn(itcm-cold)
			}
			in.Edges = append(in.Edges, Edge{Caller: in.Funcs[c].Addr, Callee: in.Funcs[t].Addr})
		}
		// Half the images end their used ITCM with the stubs of the code
		// already there, as ld lays it out (code ends at 0x7e, the stub
		// section starts at 0x80), so removing them moves the block down.
		if rng.Intn(2) == 0 {
			targets := make(map[uint32]bool)
			for _, e := range in.Edges {
				if e.Caller < 0x100 && e.Callee >= flashBase {
					targets[e.Callee] = true
				}
			}
			in.ITCMUsed = 0x80 + uint32(len(targets))*StubSize
		}
	}
	return in
}

// bruteForce returns the largest value of any selection whose exact cost
// fits the budget.
func bruteForce(p *problem) int64 {
	n := len(p.order)
	sel := make([]bool, n)
	best := int64(0)
	for mask := 0; mask < 1<<n; mask++ {
		for k := range sel {
			sel[k] = mask&(1<<k) != 0
		}
		if v := p.valueOf(sel); v > best && p.feasible(sel) {
			best = v
		}
	}
	return best
}

func candidates(in *Input, layout Layout) (*model, []int) {
	m := newModel(in)
	var cands []int
	for i := range in.Funcs {
		if !m.itcm[i] && in.Funcs[i].Samples > 0 {
			cands = append(cands, i)
		}
	}
	m.emissionOrder(cands, layout)
	m.setBlockAlign(blockAlign(in.Funcs, cands))
	return m, cands
}

// TestLayoutDPIsExact checks the DP against brute force when the cost is
// code plus alignment padding only (no calls, so no veneers): the DP must
// find the optimum exactly, for both emission orders.
func TestLayoutDPIsExact(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for c := 0; c < 400; c++ {
		in := randomInput(rng, 1+rng.Intn(12), false)
		layout := []Layout{LayoutLD, LayoutZephyr}[c%2]
		m, cands := candidates(in, layout)
		total := int64(0)
		for _, i := range cands {
			total += int64(in.Funcs[i].Size) + 8
		}
		budget := rng.Int63n(total + 1)
		p := newProblem(m, cands, ObjectiveSamples.value(in.BusySamples))
		p.budget = budget
		sel := p.layoutTable(budget).selection(budget)
		if got := p.cost(sel).Bytes; got > budget {
			t.Fatalf("case %d: DP selection costs %d > budget %d", c, got, budget)
		}
		if got, want := p.valueOf(sel), bruteForce(p); got != want {
			t.Fatalf("case %d (%s, budget %d): DP covers %d samples, optimum is %d", c, layout, budget, got, want)
		}
	}
}

// TestSolveIsExactWithVeneers checks the full search against brute force
// when calls make veneers part of the cost (stubs out of the block, and
// existing ITCM stubs that go away): the plan must fit and be optimal.
func TestSolveIsExactWithVeneers(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	dpAlone, shifted := 0, 0
	for c := 0; c < 300; c++ {
		in := randomInput(rng, 1+rng.Intn(12), true)
		m, cands := candidates(in, LayoutLD)
		total := int64(0)
		for _, i := range cands {
			total += int64(in.Funcs[i].Size) + 16
		}
		budget := rng.Int63n(total + 1)
		p := newProblem(m, cands, ObjectiveSamples.value(in.BusySamples))
		table := p.layoutTable(budget)
		sel, optimal, upper := p.solve(table, budget, DefaultSearchNodes)
		if !optimal {
			t.Fatalf("case %d: search did not finish on %d items", c, len(cands))
		}
		if got := p.cost(sel).Bytes; got > budget {
			t.Fatalf("case %d: plan costs %d > budget %d", c, got, budget)
		}
		want := bruteForce(p)
		if got := p.valueOf(sel); got != want || upper != want {
			t.Fatalf("case %d (budget %d): plan covers %d samples (bound %d), optimum is %d", c, budget, got, upper, want)
		}
		// Branch and bound alone, from an empty incumbent, must reach the
		// optimum too: this checks its bound never cuts the optimum off.
		alone, proven, _ := p.branchAndBound(make([]bool, len(cands)), DefaultSearchNodes)
		if !proven || p.valueOf(alone) != want || !p.feasible(alone) {
			t.Fatalf("case %d: branch and bound alone covers %d (proven %v), optimum is %d", c, p.valueOf(alone), proven, want)
		}
		if dp := table.selection(budget); p.valueOf(dp) == want && p.feasible(dp) {
			dpAlone++
		}
		if m.itcmStubsAtEnd && p.cost(sel).RemovedStubs > 0 {
			shifted++
		}
	}
	t.Logf("layout DP alone was already optimal and feasible in %d of 300 cases", dpAlone)
	if shifted < 20 {
		t.Errorf("only %d cases moved the block down by removing ITCM stubs; the generator lost coverage", shifted)
	}
}

// TestGreedyIsSuboptimal is the textbook case where density order loses:
// the densest item blocks two that fill the budget exactly.
func TestGreedyIsSuboptimal(t *testing.T) {
	in := &Input{ITCMSize: 1 << 10, BusySamples: 1000}
	for i, f := range []struct {
		size    uint32
		samples int
	}{{60, 61}, {50, 50}, {50, 50}} {
		name := fmt.Sprintf("g%d", i)
		in.Funcs = append(in.Funcs, Func{Key: KeyFor("g.c", name), Symbol: name, Section: ".text." + name,
			Object: "g.o", Addr: flashBase + uint32(i)*64, Size: f.size, Align: 2, Region: "FLASH", Samples: f.samples})
	}
	plan, err := Build(in, Options{Budget: 100, CurveBudgets: []uint32{0, 60, 100}})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Prediction.Samples != 100 || plan.Greedy.Samples != 61 || !plan.Optimal {
		t.Fatalf("exact %d samples (optimal %v), greedy %d; want 100 and 61",
			plan.Prediction.Samples, plan.Optimal, plan.Greedy.Samples)
	}
	if plan.Prediction.Bytes != 100 || plan.Prediction.Padding != 0 {
		t.Fatalf("exact plan costs %d bytes (%d padding), want 100 and 0", plan.Prediction.Bytes, plan.Prediction.Padding)
	}
	last := plan.Curve[len(plan.Curve)-1]
	if last.Exact.Samples != 100 || last.Greedy.Samples != 61 || plan.Curve[1].Exact.Samples != 61 {
		t.Fatalf("curve %+v", plan.Curve)
	}
}

// At the plan's own budget the benefit curve shows the plan itself: the
// summary's "proven optimal" and the curve's optimal column (searched with
// a fiftieth of the nodes elsewhere) never disagree, nor its samples.
func TestCurveAtThePlansBudgetIsThePlan(t *testing.T) {
	rng := rand.New(rand.NewSource(26))
	for trial := range 40 {
		in := randomInput(rng, 30, true)
		budget := uint32(2 * (50 + rng.Intn(400)))
		plan, err := Build(in, Options{Budget: int64(budget), CurveBudgets: []uint32{budget / 2, budget}, SearchNodes: 2000})
		if err != nil {
			t.Fatal(err)
		}
		at := plan.Curve[1]
		if at.Budget != budget || at.Optimal != plan.Optimal || at.Exact != plan.Prediction {
			t.Errorf("trial %d, budget %d: summary %d samples (optimal %v), curve %d samples (optimal %v)",
				trial, budget, plan.Prediction.Samples, plan.Optimal, at.Exact.Samples, at.Optimal)
		}
	}
}

// A plan's lists are [] in JSON when empty, never null: nothing excluded
// here, and no curve asked for.
func TestPlanJSONHasNoNull(t *testing.T) {
	in := &Input{ITCMSize: 1 << 10, BusySamples: 100}
	in.Funcs = append(in.Funcs, Func{Key: KeyFor("g.c", "g"), Symbol: "g", Section: ".text.g",
		Object: "g.o", Addr: flashBase, Size: 64, Align: 2, Region: "FLASH", Samples: 100})
	plan, err := Build(in, Options{Budget: 64, CurveBudgets: []uint32{}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("null")) {
		t.Errorf("plan JSON has a null: %s", b)
	}
}
