// SPDX-License-Identifier: Apache-2.0

package place

import (
	"math"
	"sort"
)

// DefaultSearchNodes bounds the branch-and-bound search that proves (or
// improves) the plan; past it the plan is the best found and Plan.Optimal
// is false.
const DefaultSearchNodes = 200_000

// problem is one knapsack instance: the candidates in emission order, their
// values (what the objective counts) and the ITCM budget in bytes.
type problem struct {
	m      *model
	order  []int   // function indices in emission order
	value  []int64 // the objective's value of order[k]
	budget int64   // of the selection being solved for
	inPlan []bool  // scratch over all functions, only order members are ever set
	// pressure, when the input has line heat, predicts the stalls left in
	// flash (Prediction.Stalls and the stalls objective's refinement).
	pressure *pressure
}

func newProblem(m *model, order []int, value func(*Func) int64) *problem {
	p := &problem{m: m, order: order, inPlan: make([]bool, len(m.in.Funcs))}
	p.value = make([]int64, len(order))
	for k, i := range order {
		p.value[k] = value(&m.in.Funcs[i])
	}
	return p
}

// cost evaluates a selection over positions of p.order.
func (p *problem) cost(sel []bool) Cost {
	for k, i := range p.order {
		p.inPlan[i] = sel[k]
	}
	c := p.m.cost(p.order, p.inPlan)
	for _, i := range p.order {
		p.inPlan[i] = false
	}
	return c
}

func (p *problem) valueOf(sel []bool) int64 {
	var v int64
	for k, s := range sel {
		if s {
			v += p.value[k]
		}
	}
	return v
}

func (p *problem) feasible(sel []bool) bool { return p.cost(sel).Bytes <= p.budget }

// layoutTable solves the 0/1 knapsack exactly for the layout part of the
// cost: code plus alignment padding, in emission order, within capacity
// bytes of the first free ITCM byte. Veneers are left out here (they couple
// the items); solve accounts for them afterwards.
//
// best[x] is the most samples a selection of the items seen so far can
// cover with its last section ending at or before base+x. Taking item k
// (size s, alignment a) after a layout that ends at or before base+y puts
// its end at alignUp(base+y, a)+s, which is monotone in y, so the largest y
// that still ends by base+x is y = alignDown(base+x-s, a)-base; hence
// best'[x] = max(best[x], best[y]+v). Every item has one predecessor
// offset, so one bit per (item, x) is enough to rebuild the selection, and
// because best[x] means "ends by x", rebuilding from any x <= capacity
// gives the optimum for capacity x: one table serves every budget.
type layoutTable struct {
	p        *problem
	capacity int64
	words    int64
	take     []uint64
}

func (p *problem) layoutTable(capacity int64) *layoutTable {
	n := len(p.order)
	capacity = max(capacity, 0)
	t := &layoutTable{p: p, capacity: capacity, words: (capacity + 64) / 64}
	t.take = make([]uint64, int64(n)*t.words)
	base := int64(p.m.base)
	first := int64(p.m.start) - base // the block starts aligned
	// best[x] for x < first is never read: no layout ends before the
	// aligned block start.
	best := make([]int64, capacity+1)
	fs := p.m.in.Funcs
	for k := 0; k < n; k++ {
		f := &fs[p.order[k]]
		mask := ^(int64(max(f.Align, 1)) - 1)
		size, value := int64(f.Size), p.value[k]
		row := t.take[int64(k)*t.words:]
		for x := capacity; x >= 0; x-- {
			y := (base+x-size)&mask - base
			if y < first {
				break // y only shrinks with x
			}
			if v := best[y] + value; v > best[x] {
				best[x] = v
				row[x/64] |= 1 << (x % 64)
			}
		}
	}
	return t
}

// selection rebuilds the optimal selection for capacity x.
func (t *layoutTable) selection(x int64) []bool {
	p := t.p
	sel := make([]bool, len(p.order))
	x = min(x, t.capacity)
	base := int64(p.m.base)
	fs := p.m.in.Funcs
	for k := len(p.order) - 1; k >= 0 && x >= 0; k-- {
		if t.take[int64(k)*t.words+x/64]&(1<<(x%64)) != 0 {
			sel[k] = true
			f := &fs[p.order[k]]
			a := int64(max(f.Align, 1))
			x = (base+x-int64(f.Size))/a*a - base
		}
	}
	return sel
}

// greedy takes candidates by value per byte, densest first, each one if
// the exact cost of the grown set still fits. With samples as the value it
// is the classic baseline (Steinke et al. 2002) the exact plan is compared
// with, and the Teensy report's method; candidates without value stay out.
func (p *problem) greedy(budget int64) []bool {
	sel := make([]bool, len(p.order))
	p.fill(sel, budget)
	return sel
}

// fill adds to sel, as greedy takes them, the candidates that still fit.
func (p *problem) fill(sel []bool, budget int64) {
	p.budget = budget
	fs := p.m.in.Funcs
	byDensity := make([]int, len(p.order))
	for k := range byDensity {
		byDensity[k] = k
	}
	sort.SliceStable(byDensity, func(a, b int) bool {
		ka, kb := byDensity[a], byDensity[b]
		return p.value[ka]*int64(fs[p.order[kb]].Size) > p.value[kb]*int64(fs[p.order[ka]].Size)
	})
	for _, k := range byDensity {
		if p.value[k] <= 0 || sel[k] {
			continue
		}
		sel[k] = true
		if !p.feasible(sel) {
			sel[k] = false
		}
	}
}

// solve finds the selection with the most samples whose exact cost fits the
// budget:
//  1. the layout table's optimum for code+padding; if the veneers the
//     chosen set needs push it over budget, take the table's optimum for a
//     capacity smaller by the excess, until it fits;
//  2. local search with the exact cost (add one, swap one for one), which
//     fills room left by veneers that the DP could not know about;
//  3. branch and bound over the exact cost, seeded with that incumbent, up
//     to nodeLimit nodes. When it finishes, the result is optimal for the
//     model; otherwise upper bounds what any selection could reach.
func (p *problem) solve(table *layoutTable, budget int64, nodeLimit int) (sel []bool, optimal bool, upper int64) {
	p.budget = budget
	capacity := budget
	for {
		sel = table.selection(capacity)
		excess := p.cost(sel).Bytes - budget
		if excess <= 0 {
			break
		}
		capacity -= excess
	}
	p.localSearch(sel, nodeLimit/4)
	return p.branchAndBound(sel, nodeLimit)
}

// localSearch improves sel in place by single additions and one-for-one
// swaps that raise the covered samples and keep the exact cost in budget.
// It stops after about maxEvals cost evaluations, so large images stay
// fast; branch and bound continues from its result.
func (p *problem) localSearch(sel []bool, maxEvals int) {
	evals := 0
	feasible := func() bool {
		evals++
		return p.feasible(sel)
	}
	for evals < maxEvals {
		improved := false
		for k := range sel {
			if sel[k] {
				continue
			}
			sel[k] = true
			if feasible() {
				improved = true
				continue
			}
			sel[k] = false
		}
		for out := range sel {
			if !sel[out] || evals >= maxEvals {
				continue
			}
			for in := range sel {
				if sel[in] || p.value[in] <= p.value[out] {
					continue
				}
				sel[out], sel[in] = false, true
				if feasible() {
					improved = true
					break
				}
				sel[out], sel[in] = true, false
			}
		}
		if !improved {
			return
		}
	}
}

// branchAndBound searches selections depth first, items in order of
// decreasing value per lower-bound weight. The bound relaxes the cost to a
// linear one that never overestimates: a function adds at least its size,
// minus one stub when existing ITCM code reaches it through a veneer that
// then goes away; padding and new stubs only add. The fractional knapsack
// over the undecided items under that relaxation bounds any completion.
// (When the last existing ITCM stub goes, the padding before the stub
// section goes too; the budget is widened by that padding to stay a bound.)
// Stubs that are already certain are added to the relaxed cost: a selected
// function's far callee that is not a candidate, or was decided out, will
// need a stub in every completion.
func (p *problem) branchAndBound(incumbent []bool, nodeLimit int) ([]bool, bool, int64) {
	n := len(p.order)
	fs := p.m.in.Funcs
	weight := make([]int64, n)
	for k, i := range p.order {
		weight[k] = int64(fs[i].Size)
		if p.m.removable[i] {
			weight[k] -= StubSize
		}
	}
	idx := make([]int, n)
	for k := range idx {
		idx[k] = k
	}
	sort.SliceStable(idx, func(a, b int) bool {
		wa, wb := weight[idx[a]], weight[idx[b]]
		if (wa <= 0) != (wb <= 0) {
			return wa <= 0
		}
		return p.value[idx[a]]*max(wb, 1) > p.value[idx[b]]*max(wa, 1)
	})
	best := append([]bool(nil), incumbent...)
	bestValue := p.valueOf(best)
	cur := make([]bool, n)
	nodes := 0
	complete := true

	// Certain stubs: callers[t] counts selected functions calling t; t needs
	// a stub for sure when it is far from the block, some selected function
	// calls it, and it can no longer join (not a candidate, or decided out).
	pos := make([]int, len(fs))
	for i := range pos {
		pos[i] = -1
	}
	for k, i := range p.order {
		pos[i] = k
	}
	farTarget := make([]bool, len(fs))
	for i := range fs {
		farTarget[i] = far(p.m.start, fs[i].Addr)
	}
	callers := make([]int32, len(fs))
	decidedOut := make([]bool, n)
	certain := 0
	cannotJoin := func(t int) bool { return pos[t] < 0 || decidedOut[pos[t]] }
	include := func(k int, delta int32) {
		for _, t := range p.m.callees[p.order[k]] {
			callers[t] += delta
			if farTarget[t] && cannotJoin(int(t)) && callers[t] == max(delta, 0) {
				certain += int(delta)
			}
		}
	}
	exclude := func(k int, on bool) {
		decidedOut[k] = on
		if i := p.order[k]; farTarget[i] && callers[i] > 0 {
			if on {
				certain++
			} else {
				certain--
			}
		}
	}

	// bound returns the fractional-knapsack bound on the samples the items
	// idx[d:] can add within room bytes of relaxed weight.
	bound := func(d int, room int64) float64 {
		var add float64
		for _, k := range idx[d:] {
			w := weight[k]
			switch {
			case w <= 0: // free items come first in idx and only add room
				room -= w
				add += float64(p.value[k])
			case room < 0:
				return math.Inf(-1)
			case w <= room:
				room -= w
				add += float64(p.value[k])
			default:
				return add + float64(p.value[k])*float64(room)/float64(w)
			}
		}
		if room < 0 {
			return math.Inf(-1)
		}
		return add
	}
	budget := p.budget + p.m.stubPadding()
	rootBound := bound(0, budget)

	var visit func(d int, value, lower int64)
	visit = func(d int, value, lower int64) {
		if nodes >= nodeLimit {
			complete = false
			return
		}
		nodes++
		room := budget - lower - int64(certain)*StubSize
		if b := float64(value) + bound(d, room); b < float64(bestValue+1)-1e-9 {
			return
		}
		if d == n {
			return
		}
		k := idx[d]
		cur[k] = true
		v := value + p.value[k]
		if v > bestValue && p.feasible(cur) {
			bestValue = v
			copy(best, cur)
		}
		include(k, 1)
		visit(d+1, v, lower+weight[k])
		include(k, -1)
		cur[k] = false
		exclude(k, true)
		visit(d+1, value, lower)
		exclude(k, false)
	}
	visit(0, 0, 0)
	upper := bestValue
	if !complete {
		upper = max(upper, int64(math.Floor(rootBound+1e-9)))
	}
	return best, complete, upper
}
