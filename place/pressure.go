// SPDX-License-Identifier: Apache-2.0

package place

import (
	"math"
	"sort"
)

// pressure predicts the stall samples of the sampled code a selection
// leaves in flash, from where that code lands in the cache after the
// relink. Moving code into ITCM does more than remove its own fills: the
// ITCM image's load copy sits in flash before the code (Input.Shift), so
// the code after it moves by what the block adds, less the moved bytes
// before it, and the sets that held the moved lines lose pressure. A set
// whose sampled lines fit its ways keeps them (no stalls but the first
// fills); the lines of a set holding more of them than ways evict each
// other.
//
// Per sampled line (LineHeat): if its set is over-subscribed now, its
// stalls are as the samples show them (Stalls); a line that fits now but
// lands in an over-subscribed set is predicted to stall as the lines that
// thrash now do per entry: calibration × penalty × Entries, the
// calibration being their stall samples over penalty × their entries.
type pressure struct {
	in         *Input
	flash      []int        // the functions in flash that the relink lays out again, by address
	lines      [][]heatLine // of flash[k]
	sets, ways int64
	lineSize   int64
	total      float64 // stall samples now: of every line
	count      []int32
	stall      []float64
}

// heatLine is one sampled flash line: where it is, its stalls if its set
// stays over-subscribed.
type heatLine struct {
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
	hot := false
	for i := range in.Funcs {
		f := &in.Funcs[i]
		if in.InITCM(f.Addr) || f.Addr < in.Shift.CodeStart {
			continue
		}
		pr.flash = append(pr.flash, i)
		hot = hot || len(f.Lines) > 0
	}
	if !hot {
		return nil
	}
	sort.Slice(pr.flash, func(a, b int) bool { return in.Funcs[pr.flash[a]].Addr < in.Funcs[pr.flash[b]].Addr })
	setOf := func(addr int64) int64 { return addr / pr.lineSize % pr.sets }
	for _, i := range pr.flash {
		for _, l := range in.Funcs[i].Lines {
			pr.count[setOf(int64(l.Addr))]++
		}
	}
	var thrashing, entries float64
	for _, i := range pr.flash {
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
	pr.lines = make([][]heatLine, len(pr.flash))
	for k, i := range pr.flash {
		for _, l := range in.Funcs[i].Lines {
			h := heatLine{addr: int64(l.Addr), thrash: l.Stalls}
			if int64(pr.count[setOf(h.addr)]) <= pr.ways {
				h.thrash = calibration * in.FillPenalty * l.Entries
			}
			pr.lines[k] = append(pr.lines[k], h)
		}
	}
	return pr
}

// relink lays the flash code out again as the linker will when the
// functions marked in inPlan move and the ITCM block grows by added bytes,
// and calls at with each function that stays (flash[k]) and how far it
// moves. The code section starts at the first CodeAlign multiple after
// the grown load image; every function keeps its alignment and the bytes
// that lay between it and its predecessor (sections that are no function).
func (pr *pressure) relink(inPlan []bool, added int64, at func(k int, delta int64)) {
	fs := pr.in.Funcs
	sh := pr.in.Shift
	if len(pr.flash) == 0 {
		return
	}
	prevEnd := int64(fs[pr.flash[0]].Addr)
	cur := prevEnd
	if sh.Size > 0 {
		prevEnd = int64(sh.CodeStart)
		size := (int64(sh.Size) + added + 7) &^ 7
		cur = alignUp64(int64(sh.Load)+size, int64(sh.CodeAlign))
	}
	for k, i := range pr.flash {
		f := &fs[i]
		a := int64(max(f.Align, 1))
		gap := max(int64(f.Addr)-alignUp64(prevEnd, a), 0)
		prevEnd = int64(f.Addr) + int64(f.Size)
		if inPlan[i] {
			cur += gap
			continue
		}
		cur = alignUp64(cur+gap, a)
		at(k, cur-int64(f.Addr))
		cur += int64(f.Size)
	}
}

func alignUp64(x, a int64) int64 { return (x + a - 1) / a * a }

// remaining predicts the stall samples left in flash when the functions
// marked in inPlan move and the ITCM block grows by added bytes.
func (pr *pressure) remaining(inPlan []bool, added int64) float64 {
	clear(pr.count)
	clear(pr.stall)
	pr.relink(inPlan, added, func(k int, delta int64) {
		for _, h := range pr.lines[k] {
			set := (h.addr + delta + pr.lineSize/2) / pr.lineSize % pr.sets
			pr.count[set]++
			pr.stall[set] += h.thrash
		}
	})
	var left float64
	for s, n := range pr.count {
		if int64(n) > pr.ways {
			left += pr.stall[s]
		}
	}
	return left
}

// choose returns the plan among plans (selections over p.order, the
// first the incumbent) with the fewest predicted stalls left in flash
// whose exact cost fits budget. A plan replaces the incumbent only when it
// is predicted better by more than twice the sampling error of the
// difference: the square root of the busy samples of the functions the two
// plans do not share (a Poisson count's standard deviation), since those
// are what the difference is estimated from. It chooses among a few plans
// made by other rules rather than searching: a search over thousands of
// selections finds the ones whose stalls the prediction underestimates
// most (on the demo at 4 KB, a searched plan predicted at 54,000 cycles
// per echo ran at 64,000), while for plans made without it the prediction
// is within a few percent.
func (pr *pressure) choose(p *problem, budget int64, plans ...[]bool) []bool {
	var best []bool
	bestLeft := math.Inf(1)
	fs := p.m.in.Funcs
	for _, sel := range plans {
		c := p.cost(sel)
		if c.Bytes > budget {
			continue
		}
		for k, i := range p.order {
			p.inPlan[i] = sel[k]
		}
		left := pr.remaining(p.inPlan, c.Bytes)
		for _, i := range p.order {
			p.inPlan[i] = false
		}
		margin := 0.0
		if best != nil {
			differ := 0
			for k, i := range p.order {
				if sel[k] != best[k] {
					differ += fs[i].Samples
				}
			}
			margin = 2 * math.Sqrt(float64(differ))
		}
		if left < bestLeft-margin {
			best, bestLeft = sel, left
		}
	}
	return best
}
