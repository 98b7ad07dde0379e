// SPDX-License-Identifier: Apache-2.0

package place

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/tcmprof/tcmprof/elf/board"
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
	// rates holds each set's line rates during expected; scale makes
	// expected of the planned-from image what its samples show (total).
	rates [][]float64
	scale float64
	// workloads, for a mix of captures (Input.WorkloadScale): each
	// workload's own prediction and the mix's samples per sample of it.
	// The prediction is then theirs, weighted; total is the mix's, and the
	// fields above are unused.
	workloads []*pressure
	weights   []float64
	// groupable marks, per function of the input, the sampled code a plan
	// may link together in flash when it leaves it there (setGroupable);
	// callees are each function's (model.callees), for the veneers the
	// group's calls into ITCM add, and stubStamp marks those counted.
	groupable []bool
	callees   [][]int32
	stubStamp []bool
}

// heatLine is one sampled flash line: where it is, its stalls if its set
// stays over-subscribed, and how often it is fetched (lineRate).
type heatLine struct {
	addr   int64
	thrash float64
	rate   float64
}

// lineRate estimates how often a line is fetched, in the unit of stall
// samples per fill penalty: a line that missed on every fetch would stall
// penalty × rate samples. The line's stalls bound it from below; the
// samples of its instructions less its stalls, per instruction, are its
// execution rate (each instruction of straight-line code runs once per
// pass), which for a line that hits now is all the capture says. A line no
// sample fell on counts for nothing: the capture can not tell it from dead
// code.
func lineRate(l LineHeat, penalty float64) float64 {
	r := 0.0
	if penalty > 0 {
		r = l.Stalls / penalty
	}
	if l.Insns > 0 {
		r = max(r, max(float64(l.Samples)-l.Stalls, 0)/float64(l.Insns))
	}
	return r
}

// newPressure returns nil when the input has no cache geometry or no line
// heat to predict from. For a mix of workloads it predicts each one's sets
// from its own lines (Input.WorkloadScale).
func newPressure(in *Input) *pressure {
	if len(in.WorkloadScale) > 1 {
		return newMixPressure(in)
	}
	return newSetPressure(in)
}

// newMixPressure is the pressure of each workload of a mix, weighted.
func newMixPressure(in *Input) *pressure {
	mix := &pressure{in: in}
	for w, scale := range in.WorkloadScale {
		own := *in
		own.Funcs = slices.Clone(in.Funcs)
		for i := range own.Funcs {
			own.Funcs[i].Lines = nil
			if lines := in.Funcs[i].WorkloadLines; lines != nil {
				own.Funcs[i].Lines = lines[w]
			}
		}
		if pr := newSetPressure(&own); pr != nil {
			mix.workloads = append(mix.workloads, pr)
			mix.weights = append(mix.weights, scale)
			mix.total += scale * pr.total
		}
	}
	if len(mix.workloads) == 0 {
		return nil
	}
	return mix
}

// weighed is the sum of predict over the workloads of a mix, each in the
// mix's samples.
func (pr *pressure) weighed(predict func(*pressure) float64) float64 {
	var sum float64
	for w, own := range pr.workloads {
		sum += pr.weights[w] * predict(own)
	}
	return sum
}

// newSetPressure is the pressure of one workload's lines.
func newSetPressure(in *Input) *pressure {
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
		if in.InITCM(f.Addr) || f.Addr < in.Shift.CodeStart || f.Kind == board.KindTestbench {
			// A testbench (the QEMU demo's world outside the chip) is
			// not on the board: its code fills no line of the cache.
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
	last := int64(-1) // a line two functions share is one line of its set
	for _, i := range pr.flash {
		for _, l := range in.Funcs[i].Lines {
			if line := int64(l.Addr) / pr.lineSize; line != last {
				pr.count[line%pr.sets]++
				last = line
			}
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
			h := heatLine{addr: int64(l.Addr), thrash: l.Stalls, rate: lineRate(l, in.FillPenalty)}
			if int64(pr.count[setOf(h.addr)]) <= pr.ways {
				h.thrash = calibration * in.FillPenalty * l.Entries
			}
			pr.lines[k] = append(pr.lines[k], h)
		}
	}
	pr.rates = make([][]float64, pr.sets)
	pr.scale = 1
	if now := pr.lru(nil, 0); now > 0 {
		pr.scale = pr.total / now
	}
	return pr
}

// relink lays the flash code out again as the linker will when the
// functions marked in inPlan move and the ITCM block grows by added bytes,
// and calls at with each function that stays (flash[k]) and how far it
// moves, in address order. The code section starts at the first CodeAlign
// multiple after the grown load image; every function keeps its alignment
// and the bytes that lay between it and its predecessor (sections that are
// no function). A flash group (groupBytes) comes first, where the load
// image began, with the veneers of its calls into ITCM after it, and the
// load image after them: where Zephyr's FLASH_TEXT block lies, and the
// demo's .text_group.
func (pr *pressure) relink(inPlan []bool, added int64, at func(k int, delta int64)) {
	fs := pr.in.Funcs
	sh := pr.in.Shift
	if len(pr.flash) == 0 {
		return
	}
	group := pr.groupBytes(inPlan)
	placeGroup := func(cur int64) {
		for k, i := range pr.flash {
			if f := &fs[i]; pr.groupable[i] && !inPlan[i] {
				cur = alignUp64(cur, int64(max(f.Align, 1)))
				at(k, cur-int64(f.Addr))
				cur += int64(f.Size)
			}
		}
	}
	prevEnd := int64(fs[pr.flash[0]].Addr)
	cur := prevEnd
	switch {
	case sh.Size > 0:
		prevEnd = int64(sh.CodeStart)
		load := int64(sh.Load)
		if group > 0 {
			placeGroup(load)
			load = alignUp64(load+group, 8)
		}
		size := (int64(sh.Size) + added + 7) &^ 7
		cur = alignUp64(load+size, int64(sh.CodeAlign))
	case group > 0:
		// Where the load image lies is unknown: the group first.
		placeGroup(cur)
		cur += group
	}
	for k, i := range pr.flash {
		f := &fs[i]
		a := int64(max(f.Align, 1))
		gap := max(int64(f.Addr)-alignUp64(prevEnd, a), 0)
		prevEnd = int64(f.Addr) + int64(f.Size)
		if inPlan[i] || group > 0 && pr.groupable[i] {
			cur += gap
			continue
		}
		cur = alignUp64(cur+gap, a)
		at(k, cur-int64(f.Addr))
		cur += int64(f.Size)
	}
}

func alignUp64(x, a int64) int64 { return (x + a - 1) / a * a }

// setGroupable says which functions a plan may link together in flash
// (Plan.FlashGroup): the sampled ones the linker outputs can name.
func (pr *pressure) setGroupable(groupable []bool, callees [][]int32) {
	for _, own := range pr.workloads {
		own.setGroupable(groupable, callees)
	}
	pr.groupable, pr.callees = groupable, callees
	pr.stubStamp = make([]bool, len(groupable))
}

// groupBytes is what the sampled code a selection leaves in flash takes
// linked together when that fits the I-cache, and 0 when it does not: the
// group's bytes, with the alignment its members need and a long-branch
// veneer for each function in the selection it calls (run as often as the
// calls; ld writes them after the group's output section), where with
// the sampled code that can not join it, they are at most the cache's
// size. Then no set holds more of its lines than ways, wherever the group
// starts, and it stays in the cache but for the cold code that passes
// through; spread among cold code as the relink leaves it, the same bytes
// can share sets (docs/placement.md, "The sampled code left in flash,
// linked together"). More than the cache holds is left in its order:
// which code then shares sets depends on the order, and the capture can
// not tell a better one.
func (pr *pressure) groupBytes(inPlan []bool) int64 {
	if pr.workloads != nil {
		// Every workload's relink lays out the same functions.
		return pr.workloads[0].groupBytes(inPlan)
	}
	if pr.groupable == nil {
		return 0
	}
	fs := pr.in.Funcs
	var group, others int64
	clear(pr.stubStamp)
	for _, i := range pr.flash {
		f := &fs[i]
		switch {
		case inPlan[i] || f.Samples == 0:
		case pr.groupable[i]:
			group = alignUp64(group, int64(max(f.Align, 1))) + int64(f.Size)
			for _, t := range pr.callees[i] {
				if inPlan[t] && !pr.stubStamp[t] {
					pr.stubStamp[t] = true
					group += StubSize
				}
			}
		default:
			others += int64(f.Size)
		}
	}
	if group+others > int64(pr.in.ICache.Size) {
		return 0
	}
	return group
}

// groupFits reports whether the code a selection leaves in flash is a
// flash group (groupBytes).
func (pr *pressure) groupFits(inPlan []bool) bool { return pr.groupBytes(inPlan) > 0 }

// flashGroup lists, in address order, the functions a selection leaves in
// flash that the plan links together, or nil when they do not fit.
func (pr *pressure) flashGroup(inPlan []bool) []int {
	if pr.workloads != nil {
		// Every workload's relink lays out the same functions.
		return pr.workloads[0].flashGroup(inPlan)
	}
	if !pr.groupFits(inPlan) {
		return nil
	}
	var group []int
	for _, i := range pr.flash {
		if pr.groupable[i] && !inPlan[i] {
			group = append(group, i)
		}
	}
	return group
}

// remaining predicts the stall samples left in flash when the functions
// marked in inPlan move and the ITCM block grows by added bytes.
func (pr *pressure) remaining(inPlan []bool, added int64) float64 {
	if pr.workloads != nil {
		return pr.weighed(func(own *pressure) float64 { return own.remaining(inPlan, added) })
	}
	clear(pr.count)
	clear(pr.stall)
	last := int64(-1) // relink places the functions in address order
	pr.relink(inPlan, added, func(k int, delta int64) {
		for _, h := range pr.lines[k] {
			line := (h.addr + delta + pr.lineSize/2) / pr.lineSize
			if line != last {
				pr.count[line%pr.sets]++
				last = line
			}
			pr.stall[line%pr.sets] += h.thrash
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

// expected predicts the stall samples left in flash when the functions
// marked in inPlan move and the ITCM block grows by added bytes, set by
// set, as an LRU cache treats lines fetched at their rates (lineRate): the
// ways most often fetched lines of a set stay; every fetch of another line
// misses and evicts one of them, which in a cyclic order of fetches makes
// each of them miss once more (at most as often as it is fetched). Scaled
// so that the planned-from image is predicted as sampled, it is the plan's
// expected stalls; remaining, which counts every sampled line of a set
// alike, is the pessimistic bound.
func (pr *pressure) expected(inPlan []bool, added int64) float64 {
	return pr.scale * pr.lru(inPlan, added)
}

// left is the plan's predicted stalls left in flash: midway between
// expected, which counts for nothing the lines the capture barely saw run,
// and remaining, which counts every sampled line as fetched on every pass.
// Judged by the model (docs/placement.md), each alone errs by 10-40 %, the
// midpoint by 10-15 %, on the safe side; a search by expected alone finds
// the plans it underestimates most.
func (pr *pressure) left(inPlan []bool, added int64) float64 {
	if pr.workloads != nil {
		return pr.weighed(func(own *pressure) float64 { return own.left(inPlan, added) })
	}
	return (pr.expected(inPlan, added) + pr.remaining(inPlan, added)) / 2
}

// lru is expected before scaling; a nil inPlan is the image as it is.
func (pr *pressure) lru(inPlan []bool, added int64) float64 {
	for s := range pr.rates {
		pr.rates[s] = pr.rates[s][:0]
	}
	last := int64(-1) // the last line with a rate, in address order
	place := func(k int, delta int64) {
		for _, h := range pr.lines[k] {
			if h.rate == 0 {
				continue
			}
			line := (h.addr + delta + pr.lineSize/2) / pr.lineSize
			rs := pr.rates[line%pr.sets]
			if line == last {
				// The end of one function and the start of the next:
				// one line, fetched for both.
				rs[len(rs)-1] += h.rate
				continue
			}
			pr.rates[line%pr.sets] = append(rs, h.rate)
			last = line
		}
	}
	if inPlan == nil {
		for k := range pr.flash {
			place(k, 0)
		}
	} else {
		pr.relink(inPlan, added, place)
	}
	var misses float64
	for _, rs := range pr.rates {
		if int64(len(rs)) <= pr.ways {
			continue
		}
		slices.SortFunc(rs, func(a, b float64) int { return cmp.Compare(b, a) })
		var others float64
		for _, r := range rs[pr.ways:] {
			others += r
		}
		misses += others
		for _, r := range rs[:pr.ways] {
			misses += min(r, others)
		}
	}
	return misses * pr.in.FillPenalty
}

// candidate is a plan the stalls objective weighs, named for the rule
// that made it.
type candidate struct {
	rule string
	sel  []bool
}

// choose returns the candidate with the fewest predicted stalls left in
// flash (left) whose exact cost fits budget, and says why in a phrase for
// Plan.Chosen. The first candidate is the incumbent; another replaces it
// only when it is predicted better by more than twice the sampling error
// of the difference: the square root of the busy samples of the functions
// the two plans do not share (a Poisson count's standard deviation), since
// those are what the difference is estimated from. An incumbent whose
// code left in flash fits the cache as a flash group stays: the group's
// lines can not crowd a set, and what the prediction still counts lies
// in sets shared with code whose place after the relink it does not know
// (the veneers ld writes anew, code the capture did not see run); judged
// on alias at 4 and 8 KB, the plans it preferred there took 7.6 % more
// cycles (docs/placement.md).
//
// It also returns the runner-up (Options.RunnerUp): the incumbent when
// another replaced it, else the candidate predicted best of those that
// move other functions than the chosen one (none: a nil sel).
func (pr *pressure) choose(p *problem, budget int64, cands ...candidate) (sel []bool, why string, second runnerUp) {
	fs := p.m.in.Funcs
	best, bestLeft, firstLeft := -1, math.Inf(1), math.NaN()
	lefts := make([]float64, len(cands))
	grouped := false // the incumbent leaves a flash group
	for ci, c := range cands {
		lefts[ci] = math.NaN()
		cost := p.cost(c.sel)
		if cost.Bytes > budget {
			continue
		}
		for k, i := range p.order {
			p.inPlan[i] = c.sel[k]
		}
		left := pr.left(p.inPlan, cost.Bytes)
		if ci == 0 {
			firstLeft = left
			grouped = pr.groupFits(p.inPlan)
		}
		for _, i := range p.order {
			p.inPlan[i] = false
		}
		lefts[ci] = left
		if grouped {
			best, bestLeft = 0, firstLeft
			continue // lefts for the runner-up only
		}
		margin := 0.0
		if best >= 0 {
			differ := 0
			for k, i := range p.order {
				if c.sel[k] != cands[best].sel[k] {
					differ += fs[i].Samples
				}
			}
			margin = 2 * math.Sqrt(float64(differ))
		}
		if left < bestLeft-margin {
			best, bestLeft = ci, left
		}
	}
	if best < 0 {
		return nil, "", runnerUp{}
	}
	second = secondOf(cands, lefts, best)
	if grouped {
		return cands[0].sel, fmt.Sprintf("%s (%.0f stall samples left in flash): the sampled code it leaves in flash fits the cache, linked together, and what another plan is predicted to save beyond that lies in code whose place after the relink the capture can not tell (veneers, code it did not see run)", cands[0].rule, firstLeft), second
	}
	if best == 0 || math.IsNaN(firstLeft) {
		return cands[best].sel, fmt.Sprintf("%s (%.0f stall samples left in flash), no other predicted better by more than the sampling error", cands[best].rule, bestLeft), second
	}
	return cands[best].sel, replacedWhy(cands[best].rule, bestLeft, cands[0].rule, firstLeft), second
}

// runnerUp is the plan choose ranked second, and what it says of it.
type runnerUp struct {
	sel []bool
	why string
}

// secondOf is the runner-up of choose's candidates, of which best won and
// lefts holds the predictions (NaN: over the budget).
func secondOf(cands []candidate, lefts []float64, best int) runnerUp {
	second := -1
	if best != 0 && !math.IsNaN(lefts[0]) {
		second = 0
	} else {
		for ci, c := range cands {
			if math.IsNaN(lefts[ci]) || slices.Equal(c.sel, cands[best].sel) {
				continue
			}
			if second < 0 || lefts[ci] < lefts[second] {
				second = ci
			}
		}
	}
	if second < 0 {
		return runnerUp{}
	}
	return runnerUp{cands[second].sel, fmt.Sprintf("%s (%.0f stall samples left in flash, against %.0f for %s)",
		cands[second].rule, lefts[second], lefts[best], cands[best].rule)}
}

// closeLead is the share of the incumbent's predicted stalls below which a
// candidate's lead has gone either way in the model: judged on five
// workloads (docs/placement.md), leads of 4.2 % (a set search) and 5.1 %
// (density-greedy, on a later build) over the samples plan modelled 4.6 %
// and 2.7 % slower, and leads of 1.0-3.6 % went either way; 6.4 % held,
// and the leads that held by far (the alias groups' cures) were 20 % and
// more. The prediction's error from plan to plan, not the sampling error,
// bounds what the capture can tell.
const closeLead = 0.10

// replacedWhy says why a candidate replaced the incumbent, and that the
// capture can not tell the two apart when its lead is close.
func replacedWhy(rule string, left float64, incumbent string, incumbentLeft float64) string {
	why := fmt.Sprintf("%s (%.0f stall samples left in flash, against %.0f for %s)", rule, left, incumbentLeft, incumbent)
	if incumbentLeft-left < closeLead*incumbentLeft {
		why += fmt.Sprintf(", a lead under %.0f %%, which the model has seen go either way, so the capture can not tell the two apart: time both on the board (--runner-up plans the other)", 100*closeLead)
	}
	return why
}

// greedy grows a plan one function at a time: each time the candidate
// whose move the set-level prediction (expected) says removes the most
// stall samples per ITCM byte it adds, counting what it relieves in the
// sets it leaves and what the code that moves after it adds to others,
// until no candidate fits or none removes any. Unlike a ranking of
// functions it sees that the second function of two that thrash one set
// cures the set.
func (pr *pressure) greedy(p *problem, budget int64) []bool {
	fs := p.m.in.Funcs
	sel := make([]bool, len(p.order))
	predict := func() (left float64, bytes int64) {
		c := p.cost(sel)
		if c.Bytes > budget {
			return 0, c.Bytes
		}
		for k, i := range p.order {
			p.inPlan[i] = sel[k]
		}
		left = pr.left(p.inPlan, c.Bytes)
		for _, i := range p.order {
			p.inPlan[i] = false
		}
		return left, c.Bytes
	}
	left, bytes := predict()
	for {
		best, bestLeft, bestBytes, bestRate := -1, 0.0, int64(0), 0.0
		for k, i := range p.order {
			if sel[k] || fs[i].Samples == 0 {
				continue
			}
			sel[k] = true
			l, b := predict()
			sel[k] = false
			if b > budget || l >= left {
				continue
			}
			if rate := (left - l) / float64(max(b-bytes, 1)); rate > bestRate {
				best, bestLeft, bestBytes, bestRate = k, l, b, rate
			}
		}
		if best < 0 {
			// What no move is predicted to better: the layout
			// decides, and the capture can not; the densest code
			// that fits at least removes its own stalls.
			p.fill(sel, budget)
			return sel
		}
		sel[best] = true
		left, bytes = bestLeft, bestBytes
	}
}
