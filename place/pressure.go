// SPDX-License-Identifier: Apache-2.0

package place

import (
	"math"
	"sort"
)

// pressure predicts the stall samples of the sampled code a selection
// leaves in flash, from where that code lands in the cache after the
// relink. Moving code into ITCM does more than remove its own fills: the
// ITCM image's load copy sits in flash before .text, so everything in
// .text shifts (by the bytes the block adds, less the moved bytes before
// it), and the sets that held the moved lines lose pressure. A set whose
// sampled lines fit its ways keeps them (no stalls but the first fills);
// the lines of a set holding more of them than ways evict each other.
//
// Per sampled line (LineHeat): if its set is over-subscribed now, its
// stalls are as the samples show them (Stalls); a line that fits now but
// lands in an over-subscribed set is predicted to stall as the lines that
// thrash now do per entry: calibration × penalty × Entries, the
// calibration being their stall samples over penalty × their entries.
type pressure struct {
	in          *Input
	lines       []heatLine // by function address
	sets, ways  int64
	lineSize    int64
	total       float64 // stall samples now: of every line
	byFunc      [][2]int
	count       []int32
	stall       []float64
	shiftsWhole bool // whether the ITCM load image precedes the code (it shifts)
}

// heatLine is one sampled flash line: where it is, its stalls if its set
// stays over-subscribed.
type heatLine struct {
	fn     int
	addr   int64
	thrash float64
}

// newPressure returns nil when the input has no cache geometry or no line
// heat to predict from.
func newPressure(in *Input) *pressure {
	g := in.ICache
	if g.LineSize == 0 || g.Ways == 0 || g.Sets() == 0 {
		return nil
	}
	pr := &pressure{in: in, sets: int64(g.Sets()), ways: int64(g.Ways), lineSize: int64(g.LineSize)}
	pr.count = make([]int32, pr.sets)
	pr.stall = make([]float64, pr.sets)
	order := make([]int, 0, len(in.Funcs))
	for i := range in.Funcs {
		if len(in.Funcs[i].Lines) > 0 && !in.InITCM(in.Funcs[i].Addr) {
			order = append(order, i)
		}
	}
	if len(order) == 0 {
		return nil
	}
	sort.Slice(order, func(a, b int) bool { return in.Funcs[order[a]].Addr < in.Funcs[order[b]].Addr })
	setOf := func(addr int64) int64 { return addr / pr.lineSize % pr.sets }
	for _, i := range order {
		for _, l := range in.Funcs[i].Lines {
			pr.count[setOf(int64(l.Addr))]++
		}
	}
	var thrashing, entries float64
	for _, i := range order {
		for _, l := range in.Funcs[i].Lines {
			pr.total += l.Stalls
			if int64(pr.count[setOf(int64(l.Addr))]) > pr.ways {
				thrashing += l.Stalls
				entries += l.Entries
			}
		}
	}
	calibration := 0.0
	if entries > 0 && in.FillPenalty > 0 {
		calibration = min(thrashing/(in.FillPenalty*entries), 1)
	}
	for _, i := range order {
		start := len(pr.lines)
		for _, l := range in.Funcs[i].Lines {
			h := heatLine{fn: i, addr: int64(l.Addr), thrash: l.Stalls}
			if int64(pr.count[setOf(h.addr)]) <= pr.ways {
				h.thrash = calibration * in.FillPenalty * l.Entries
			}
			pr.lines = append(pr.lines, h)
		}
		pr.byFunc = append(pr.byFunc, [2]int{start, len(pr.lines)})
	}
	return pr
}

// remaining predicts the stall samples left in flash when the functions
// marked in inPlan move and the ITCM block grows by added bytes.
func (pr *pressure) remaining(inPlan []bool, added int64) float64 {
	clear(pr.count)
	clear(pr.stall)
	// The block's load image grows in 8-byte steps (the .itcm output
	// section is ALIGN(8) at both ends).
	shift := (added + 7) &^ 7
	for _, span := range pr.byFunc {
		fn := pr.lines[span[0]].fn
		if inPlan[fn] {
			shift -= int64(pr.in.Funcs[fn].Size)
			continue
		}
		for _, h := range pr.lines[span[0]:span[1]] {
			set := ((h.addr + shift + pr.lineSize/2) / pr.lineSize) % pr.sets
			pr.count[set]++
			pr.stall[set] += h.thrash
		}
	}
	var left float64
	for s, n := range pr.count {
		if int64(n) > pr.ways {
			left += pr.stall[s]
		}
	}
	return left
}

// refine improves sel (positions of p.order) in place for the prediction:
// first the better of sel and each of the seeds, then single additions,
// removals and one-for-one swaps that lower the predicted stalls and keep
// the exact cost within budget, until none helps or about maxEvals
// predictions are spent.
func (pr *pressure) refine(p *problem, sel []bool, budget int64, maxEvals int, seeds ...[]bool) {
	p.budget = budget
	evals := 0
	score := func() float64 {
		evals++
		c := p.cost(sel)
		if c.Bytes > budget {
			return math.Inf(1)
		}
		for k, i := range p.order {
			p.inPlan[i] = sel[k]
		}
		r := pr.remaining(p.inPlan, c.Bytes)
		for _, i := range p.order {
			p.inPlan[i] = false
		}
		return r
	}
	best := score()
	for _, seed := range seeds {
		keep := append([]bool(nil), sel...)
		copy(sel, seed)
		if s := score(); s < best {
			best = s
		} else {
			copy(sel, keep)
		}
	}
	try := func() bool {
		if s := score(); s < best-1e-9 {
			best = s
			return true
		}
		return false
	}
	for evals < maxEvals {
		improved := false
		for k := range sel {
			if evals >= maxEvals {
				break
			}
			sel[k] = !sel[k]
			if try() {
				improved = true
				continue
			}
			sel[k] = !sel[k]
		}
		for out := range sel {
			if !sel[out] {
				continue
			}
			for in := range sel {
				if sel[in] || evals >= maxEvals {
					continue
				}
				sel[out], sel[in] = false, true
				if try() {
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
