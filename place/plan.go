// SPDX-License-Identifier: Apache-2.0

package place

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
)

// maxTableBits bounds the layout table (one bit per candidate and budget
// byte): 512 MiB.
const maxTableBits = 4 << 30

// PlanVersion is the version of the Plan data model; ReadPlanJSON refuses
// other versions.
const PlanVersion = 1

// Entry is one function of a plan, named so that it can be found again in
// a rebuilt image (see Resolve) and rendered for the linker.
type Entry struct {
	Key     FuncKey `json:"key"`
	Symbol  string  `json:"symbol"`
	Section string  `json:"section"`
	Object  string  `json:"object,omitempty"`
	Archive string  `json:"archive,omitempty"`
	Addr    uint32  `json:"addr"` // in the image the plan was made from
	Size    uint32  `json:"size"`
	Align   uint32  `json:"align"`
	Samples int     `json:"samples"`
	Stalls  float64 `json:"stalls,omitempty"` // estimated stall samples (Func.Stalls)
}

func entryOf(f *Func) Entry {
	return Entry{Key: f.Key, Symbol: f.Symbol, Section: f.Section, Object: f.Object,
		Archive: f.Archive, Addr: f.Addr, Size: f.Size, Align: f.Align, Samples: f.Samples, Stalls: f.Stalls}
}

// Prediction is what a selection is expected to do.
type Prediction struct {
	Cost
	Functions int     `json:"functions"`
	Samples   int     `json:"samples"` // busy samples in the moved functions
	Share     float64 `json:"share"`   // Samples / BusySamples
	// Stalls is the estimated stall samples of the moved functions
	// (Func.Stalls): the busy time ITCM removes. StallShare is Stalls /
	// BusySamples, so the rebuilt image is predicted to take 1 - StallShare
	// of the time it takes now for the same work.
	Stalls     float64 `json:"stalls"`
	StallShare float64 `json:"stall_share"`
	// CyclesLow and CyclesHigh bound the rebuilt image's time for the same
	// work, as a share of now (1 - StallShare is the prediction, which
	// they hold): at least what is left if no stall of the image were left
	// (every estimated stall sample gone, less twice its sampling error); at most what the
	// prediction leaves (the code left in flash stalling as the cache
	// pressure says, which on every plan judged by the model was above
	// it), plus twice its sampling error and LayoutLuck.
	CyclesLow  float64 `json:"cycles_low,omitempty"`
	CyclesHigh float64 `json:"cycles_high,omitempty"`
	// ITCMUsed is the predicted ITCM use of the rebuilt image.
	ITCMUsed int64 `json:"itcm_used"`
	// Veneers is the predicted number of long-branch veneers in the rebuilt
	// image (all regions).
	Veneers int `json:"veneers"`
}

// CurvePoint is the best plan at one budget: the plan's objective (Exact:
// the exact knapsack for samples and stalls, the greedy ranking for
// density and misses) and density-greedy.
type CurvePoint struct {
	Budget  uint32     `json:"budget"`
	Exact   Prediction `json:"exact"`
	Optimal bool       `json:"optimal"`
	Greedy  Prediction `json:"greedy"`
}

// Objective is what a plan maximises within its budget.
type Objective string

// The objectives. Samples is solved exactly (knapsack over the exact ITCM
// cost); density and misses are rankings taken greedily; stalls chooses
// among both kinds.
const (
	// ObjectiveStalls: the fewest stall samples predicted from the
	// capture alone, set by set. Five plans are made: the exact samples
	// knapsack, density-greedy, the exact knapsack on each function's
	// estimated stalls (Func.Stalls, then busy samples), greedy by
	// estimated stalls per byte, and the set search (pressure.greedy),
	// which adds the function whose move the prediction says removes the
	// most stalls per byte, its own and those of the sets it relieves; the
	// one whose relinked image the prediction (pressure.left) gives the
	// fewest stalls wins, the samples plan unless another is better by
	// more than the sampling error (Plan.Chosen says which). Without line
	// heat (Func.Lines) it is the stalls knapsack.
	ObjectiveStalls Objective = "stalls"
	// ObjectiveSamples: the busy samples moved.
	ObjectiveSamples Objective = "samples"
	// ObjectiveDensity: busy samples per byte, densest first (the Teensy
	// report's method, and the classic baseline).
	ObjectiveDensity Objective = "density"
	// ObjectiveMisses: line fills per byte as a model run of this image
	// measured them (Func.Misses), most first: the reference a plan made
	// from samples is judged against; it needs the trace a board can not
	// give.
	ObjectiveMisses Objective = "misses"
)

// DefaultObjective is the objective of a plan that names none.
const DefaultObjective = ObjectiveStalls

// Objectives lists the objectives, the default first.
func Objectives() []Objective {
	return []Objective{ObjectiveStalls, ObjectiveSamples, ObjectiveDensity, ObjectiveMisses}
}

// exact reports whether the objective is solved as a knapsack rather
// than taken greedily.
func (o Objective) exact() bool { return o == ObjectiveSamples || o == ObjectiveStalls }

// value is what a function is worth to the objective (see the constants).
// Stall estimates are counted in whole samples, each worth more than all
// the busy samples together, so samples only break ties among functions
// with equal estimated stalls.
func (o Objective) value(busy int) func(*Func) int64 {
	switch o {
	case ObjectiveStalls:
		return func(f *Func) int64 { return int64(math.Round(f.Stalls))*int64(busy+1) + int64(f.Samples) }
	case ObjectiveMisses:
		return func(f *Func) int64 { return f.Misses }
	}
	return func(f *Func) int64 { return int64(f.Samples) }
}

// Plan is the result of planning, and the input of every rendering and of
// verify.
type Plan struct {
	Version int    `json:"version"`
	BuildID string `json:"build_id,omitempty"`
	Layout  Layout `json:"layout"`
	// Objective is what the plan maximised; empty in plans written before
	// there was a choice, which maximised samples.
	Objective Objective `json:"objective,omitempty"`
	ITCMStart uint32    `json:"itcm_start"`
	ITCMSize  uint32    `json:"itcm_size"`
	ITCMUsed  uint32    `json:"itcm_used"` // fixed use before the plan
	Budget    uint32    `json:"budget"`
	// BlockAlign is the alignment the moved block starts at; the ld
	// fragment begins with ". = ALIGN(BlockAlign)".
	BlockAlign  uint32 `json:"block_align"`
	BusySamples int    `json:"busy_samples"`
	MinSamples  int    `json:"min_samples"`
	// Chosen says which of the stalls objective's candidate plans won and
	// by how much (Options.Objective); empty for the other objectives.
	Chosen string `json:"chosen,omitempty"`
	// Filled says the budget held every function with MinSamples samples
	// or more, and the plan also took sampled functions below (Build).
	Filled bool `json:"filled,omitempty"`
	// VeneersBefore is the model's veneer count for the planned-from image;
	// compare it with the real count to check the call graph is complete.
	VeneersBefore int `json:"veneers_before"`
	// Entries are the functions to move, in the order the linker will lay
	// them out.
	Entries  []Entry     `json:"entries"`
	Excluded []Exclusion `json:"excluded"`
	// FlashGroup is the sampled code the plan leaves in flash, to be
	// linked together at the start of the flash code in this (its
	// present) order, when it fits the I-cache: then none of its lines
	// share a set beyond the cache's ways. Empty when it does not fit, or
	// with Options.KeepFlashOrder. The prediction counts on it.
	FlashGroup []Entry `json:"flash_group,omitempty"`
	// GroupWithin is the I-cache's size, which the flash group must lie
	// within for none of its lines to share a set beyond the ways (what
	// verify checks); 0 without a group.
	GroupWithin uint32 `json:"group_within,omitempty"`
	// Prediction is for Entries. Optimal says the search proved no
	// selection within Budget is worth more to the objective under the
	// cost model; UpperBound bounds what any selection can be worth either
	// way (in the objective's values; 0 for a greedy objective).
	Prediction Prediction   `json:"prediction"`
	Optimal    bool         `json:"optimal"`
	UpperBound int          `json:"upper_bound"`
	Greedy     Prediction   `json:"greedy"`
	Curve      []CurvePoint `json:"curve"`
	// CyclesPerUnit is the planned-from image's cycles per unit of work
	// when the capture says (a modelled one: tcmprof sim --capture); 0
	// when unknown. Predicted cycles per unit are CyclesPerUnit × (1 -
	// StallShare).
	CyclesPerUnit float64  `json:"cycles_per_unit,omitempty"`
	Warnings      []string `json:"warnings,omitempty"`
}

// Options are the user's choices for planning.
type Options struct {
	// Budget is the ITCM the plan may add, in bytes; negative means all the
	// free ITCM (ITCMSize - ITCMUsed).
	Budget   int64
	Excludes []string // globs on symbol, base name, source path or its base name
	// MinSamples is the fewest samples a planned function needs; <= 0
	// means DefaultMinSamples.
	MinSamples int
	Layout     Layout // LayoutLD when empty
	// Objective is what to maximise; DefaultObjective when empty.
	Objective Objective
	// CyclesPerUnit is recorded in the plan (Plan.CyclesPerUnit).
	CyclesPerUnit float64
	// CurveBudgets are the budgets of the benefit curve; nil means every
	// 4 KiB (coarser above 128 KiB, at most 33 points) from 0 to the free
	// ITCM, plus the free ITCM itself.
	CurveBudgets []uint32
	// SearchNodes bounds branch and bound at the main budget (each curve
	// point gets a fiftieth); <= 0 means DefaultSearchNodes. Local search
	// gets a quarter of it in cost evaluations.
	SearchNodes int
	// RunnerUp plans, at the main budget, the candidate the stalls
	// objective ranked second instead of the one it chose: where the
	// capture can not tell two plans apart, the board can time both.
	RunnerUp bool
	// KeepFlashOrder leaves the code in flash in its order (no
	// Plan.FlashGroup), for a build that links only the ITCM block.
	KeepFlashOrder bool
}

// ErrNoRunnerUp is Build's answer to Options.RunnerUp when no candidate
// plan differs from the chosen one.
var ErrNoRunnerUp = errors.New("no runner-up: every plan the stalls objective weighs at this budget moves the same functions")

// FlashGroupBytes is what the flash group's functions take, their
// input sections' sizes added.
func (p *Plan) FlashGroupBytes() uint32 {
	var size uint32
	for _, e := range p.FlashGroup {
		size += e.Size
	}
	return size
}

// InITCM reports whether addr lay in ITCM in the image the plan was made
// from.
func (p *Plan) InITCM(addr uint32) bool { return InRange(addr, p.ITCMStart, p.ITCMSize) }

// Validate checks the plan's internal consistency; ReadPlanJSON calls it.
func (p *Plan) Validate() error {
	if p.Version != PlanVersion {
		return fmt.Errorf("plan version %d, this tcmprof reads version %d", p.Version, PlanVersion)
	}
	if p.Layout != LayoutLD && p.Layout != LayoutZephyr {
		return fmt.Errorf("plan has unknown layout %q", p.Layout)
	}
	if p.Objective != "" && !slices.Contains(Objectives(), p.Objective) {
		return fmt.Errorf("plan has unknown objective %q", p.Objective)
	}
	if p.BlockAlign == 0 || p.BlockAlign&(p.BlockAlign-1) != 0 {
		return fmt.Errorf("plan block alignment %d is not a power of two", p.BlockAlign)
	}
	seen := make(map[string]bool)
	for _, e := range slices.Concat(p.Entries, p.FlashGroup) {
		if e.Symbol == "" || e.Section == "" {
			return errors.New("plan entry without symbol or section")
		}
		id := e.Archive + "\x00" + e.Object + "\x00" + e.Section
		if seen[id] {
			return fmt.Errorf("plan lists section %s of %s twice", e.Section, e.Object)
		}
		seen[id] = true
	}
	return nil
}

// Build plans which functions of in to move into ITCM.
func Build(in *Input, opt Options) (*Plan, error) {
	plan, everyCandidate, err := build(in, opt)
	if err != nil || !everyCandidate || len(plan.Entries) == 0 || plan.MinSamples <= 1 ||
		!slices.ContainsFunc(plan.Excluded, func(x Exclusion) bool { return x.Reason == ReasonFewSamples && x.Samples > 0 }) {
		return plan, err
	}
	// The budget holds every function with MinSamples samples or more, so
	// it goes on to the sampled ones below: MinSamples keeps functions
	// whose density is sampling noise from crowding denser ones out of a
	// budget too small for all, not from a budget with room. (On the alias
	// workload a 32 KB plan stopped at 23 KB and was 20 % slower than all
	// hot code in ITCM; docs/placement.md.) The curve keeps its other
	// points; at the plan's budget it shows the filled plan.
	fillOpt := opt
	fillOpt.MinSamples, fillOpt.CurveBudgets = 1, []uint32{plan.Budget}
	fill, _, err := build(in, fillOpt)
	if err != nil || fill.Prediction.Samples <= plan.Prediction.Samples {
		return plan, nil // the fill is a bonus: without it the plan stands
	}
	fill.MinSamples = plan.MinSamples
	fill.Filled = true
	for i := range plan.Curve {
		if plan.Curve[i].Budget == plan.Budget {
			plan.Curve[i] = fill.Curve[0]
		}
	}
	fill.Curve = plan.Curve
	return fill, nil
}

// build plans with opt as Build describes, and reports whether the plan
// took every candidate.
func build(in *Input, opt Options) (*Plan, bool, error) {
	if err := in.Validate(); err != nil {
		return nil, false, err
	}
	if err := checkPatterns(opt.Excludes); err != nil {
		return nil, false, err
	}
	if opt.MinSamples <= 0 {
		opt.MinSamples = DefaultMinSamples
	}
	if opt.Layout == "" {
		opt.Layout = LayoutLD
	}
	if opt.Layout != LayoutLD && opt.Layout != LayoutZephyr {
		return nil, false, fmt.Errorf("unknown layout %q", opt.Layout)
	}
	if opt.SearchNodes <= 0 {
		opt.SearchNodes = DefaultSearchNodes
	}
	if opt.Objective == "" {
		opt.Objective = DefaultObjective
	}
	if !slices.Contains(Objectives(), opt.Objective) {
		return nil, false, fmt.Errorf("unknown objective %q", opt.Objective)
	}
	if opt.RunnerUp && opt.Objective != ObjectiveStalls {
		return nil, false, fmt.Errorf("the runner-up is the stalls objective's second plan; the %s objective makes one", opt.Objective)
	}
	if opt.Objective == ObjectiveMisses && !slices.ContainsFunc(in.Funcs, func(f Func) bool { return f.Misses > 0 }) {
		return nil, false, errors.New("the misses objective needs the misses a model run of this image measured, and no function has any")
	}
	free := in.ITCMSize - in.ITCMUsed
	budget := uint32(opt.Budget)
	switch {
	case opt.Budget < 0:
		budget = free
	case opt.Budget > int64(free):
		return nil, false, &BudgetError{Budget: opt.Budget, Free: int64(free)}
	}

	m := newModel(in)
	plan := &Plan{
		Version: PlanVersion, BuildID: in.BuildID, Layout: opt.Layout, Objective: opt.Objective, CyclesPerUnit: opt.CyclesPerUnit,
		ITCMStart: in.ITCMStart, ITCMSize: in.ITCMSize, ITCMUsed: in.ITCMUsed,
		Budget: budget, BusySamples: in.BusySamples, MinSamples: opt.MinSamples,
		VeneersBefore: m.veneers(nil),
		// Empty, not null, in the JSON a script reads.
		Entries: []Entry{}, Excluded: []Exclusion{}, Curve: []CurvePoint{},
	}
	bootFrom, unknown := bootClosure(in, in.BootRoots, in.BootCopies)
	for _, r := range unknown {
		plan.Warnings = append(plan.Warnings, fmt.Sprintf("boot root %q is not a function of the image", r))
	}
	var cands []int
	// groupable: the sampled code a plan may link together in flash
	// (Plan.FlashGroup), where the outputs can name it and nothing
	// forbids moving it; boot code stays where the boot expects it.
	groupable := make([]bool, len(in.Funcs))
	for i := range in.Funcs {
		reason, detail := classify(m, i, bootFrom, opt.Excludes, opt.MinSamples, opt.Layout)
		groupable[i] = in.Funcs[i].Samples > 0 && (reason == "" || reason == ReasonFewSamples)
		if reason == "" {
			cands = append(cands, i)
			continue
		}
		x := Exclusion{Entry: entryOf(&in.Funcs[i]), Reason: reason, Detail: detail}
		// Safety exclusions and functions already in ITCM are always
		// listed so verify can check them; the rest only when sampled.
		if x.Safety() || reason == ReasonInITCM || in.Funcs[i].Samples > 0 {
			plan.Excluded = append(plan.Excluded, x)
		}
	}
	sort.SliceStable(plan.Excluded, func(a, b int) bool {
		return plan.Excluded[a].Samples > plan.Excluded[b].Samples
	})
	m.emissionOrder(cands, opt.Layout)
	plan.BlockAlign = blockAlign(in.Funcs, cands)
	m.setBlockAlign(plan.BlockAlign)

	budgets := opt.CurveBudgets
	if budgets == nil {
		// Every 4 KiB, or coarser in 4 KiB multiples for ITCMs over 128 KiB,
		// so the curve has at most 33 points.
		step := max(4096, (free/32+4095)/4096*4096)
		for b := uint32(0); b < free; b += step {
			budgets = append(budgets, b)
		}
		budgets = append(budgets, free)
	}
	largest := budget
	for _, b := range budgets {
		if b > free {
			return nil, false, fmt.Errorf("curve budget %d bytes exceeds the %d bytes of free ITCM", b, free)
		}
		largest = max(largest, b)
	}
	if bits := int64(len(cands)) * (int64(largest) + 64); bits > maxTableBits {
		return nil, false, fmt.Errorf("%d candidates × %d bytes of budget need %d MiB for the exact layout table; lower --budget or raise --min-samples",
			len(cands), largest, bits/8>>20)
	}
	p := newProblem(m, cands, opt.Objective.value(in.BusySamples))
	density := newProblem(m, cands, ObjectiveDensity.value(in.BusySamples))
	p.pressure = newPressure(in)
	density.pressure = p.pressure
	if p.pressure != nil && !opt.KeepFlashOrder {
		p.pressure.setGroupable(groupable, m.callees)
	}
	// plan selects at one budget with the objective's method.
	var table *layoutTable
	if opt.Objective.exact() {
		table = p.layoutTable(int64(largest))
	}
	// The stalls objective also weighs the exact samples plan.
	var samples *problem
	var samplesTable *layoutTable
	if opt.Objective == ObjectiveStalls && p.pressure != nil {
		samples = newProblem(m, cands, ObjectiveSamples.value(in.BusySamples))
		samplesTable = samples.layoutTable(int64(largest))
	}
	var chosen string // of the last plan1, for Plan.Chosen
	var runnerUpErr error
	// plan1 plans at budget b; search says to run the set search, which
	// takes the plan's own budget about as long as the rest of planning
	// on a real image (410 candidates), so the curve's other points
	// choose among the other four plans.
	plan1 := func(b uint32, nodes int, search bool) (sel []bool, optimal bool, upper int64) {
		if table == nil {
			return p.greedy(int64(b)), false, 0
		}
		sel, optimal, upper = p.solve(table, int64(b), nodes)
		runnerUp := search && opt.RunnerUp
		if samples == nil {
			if runnerUp {
				runnerUpErr = ErrNoRunnerUp
			}
			return sel, optimal, upper
		}
		most, mostOptimal, _ := samples.solve(samplesTable, int64(b), nodes)
		if !slices.Contains(most, false) {
			// Every candidate fits: there is nothing to choose.
			chosen = "every candidate fits the budget"
			if runnerUp {
				runnerUpErr = ErrNoRunnerUp
			}
			return most, mostOptimal, 0
		}
		// The knapsacks count each function's own stalls or samples;
		// the prediction also sees the code left behind, and the set
		// search searches by it. The samples plan first: it wins ties.
		cands := []candidate{{"the exact samples plan", most},
			{"density-greedy", density.greedy(int64(b))},
			{"the stalls knapsack", sel},
			{"greedy by stalls per byte", p.greedy(int64(b))}}
		if search {
			cands = append(cands, candidate{"the set search", p.pressure.greedy(p, int64(b))})
		}
		sel, why, second := p.pressure.choose(p, int64(b), cands...)
		chosen = fmt.Sprintf("the fewest stalls predicted of %d plans (docs/placement.md): %s", len(cands), why)
		if runnerUp {
			if second.sel == nil {
				runnerUpErr = ErrNoRunnerUp
				return sel, false, 0
			}
			chosen = fmt.Sprintf("the runner-up of %d plans (--runner-up): %s; the choice was %s", len(cands), second.why, why)
			return second.sel, false, 0
		}
		return sel, false, 0
	}
	sel, optimal, upper := plan1(budget, opt.SearchNodes, true)
	if runnerUpErr != nil {
		return nil, false, runnerUpErr
	}
	plan.Chosen = chosen
	if err := p.checkFits(sel, int64(budget)); err != nil {
		return nil, false, err
	}
	plan.Prediction = predict(p, sel)
	plan.Optimal, plan.UpperBound = optimal, int(upper)
	plan.Greedy = predict(p, density.greedy(int64(budget)))
	for k, s := range sel {
		if s {
			plan.Entries = append(plan.Entries, entryOf(&in.Funcs[cands[k]]))
		}
	}
	if p.pressure != nil {
		for k, i := range p.order {
			p.inPlan[i] = sel[k]
		}
		for _, i := range p.pressure.flashGroup(p.inPlan) {
			plan.FlashGroup = append(plan.FlashGroup, entryOf(&in.Funcs[i]))
		}
		if len(plan.FlashGroup) > 0 {
			plan.GroupWithin = in.ICache.Size
		}
		clear(p.inPlan)
	}

	for _, b := range budgets {
		// At the plan's own budget the curve shows the plan: a shorter
		// search there could find a worse one, or fail to prove the
		// plan optimal, and the summary and its curve would disagree.
		s, proven := sel, optimal
		if b != budget {
			s, proven, _ = plan1(b, max(opt.SearchNodes/50, 1), false)
		}
		point := CurvePoint{Budget: b, Exact: predict(p, s), Optimal: proven}
		point.Greedy = predict(p, density.greedy(int64(b)))
		plan.Curve = append(plan.Curve, point)
	}
	return plan, !slices.Contains(sel, false), nil
}

// checkFits refuses a budget that fits no candidate: the plan would be
// empty, which says nothing the user wanted to hear. sel is the solution.
func (p *problem) checkFits(sel []bool, budget int64) error {
	if len(p.order) == 0 || slices.Contains(sel, true) {
		return nil
	}
	smallest, cost := -1, int64(0)
	one := make([]bool, len(p.order))
	for k := range p.order {
		one[k] = true
		if c := p.cost(one).Bytes; smallest < 0 || c < cost {
			smallest, cost = k, c
		}
		one[k] = false
	}
	if cost <= budget {
		return nil
	}
	f := &p.m.in.Funcs[p.order[smallest]]
	return &BudgetError{Budget: budget, Need: cost, Smallest: f.Symbol}
}

// BudgetError is a budget a plan can not be made with: more than the free
// ITCM (Free set), or less than the cheapest candidate costs (Need and
// Smallest set). The fields let a caller say what budget would do.
type BudgetError struct {
	Budget   int64
	Free     int64
	Need     int64
	Smallest string
}

func (e *BudgetError) Error() string {
	if e.Need > 0 {
		return fmt.Sprintf("a budget of %d bytes fits no function: the smallest candidate, %s, needs %d bytes of ITCM", e.Budget, e.Smallest, e.Need)
	}
	return fmt.Sprintf("budget %d bytes exceeds the %d bytes of free ITCM", e.Budget, e.Free)
}

// LayoutLuck is how much a plan's cycles change with where the relink puts
// the code left in flash, which the cache pressure does not model: moving
// one more cold function changed the same plan's cycles by up to 8 % in
// the model (docs/placement.md).
const LayoutLuck = 0.08

// totalStalls is the estimated stall samples of every function of the
// image: the most any plan could remove.
func (in *Input) totalStalls() float64 {
	var s float64
	for i := range in.Funcs {
		s += in.Funcs[i].Stalls
	}
	return s
}

func predict(p *problem, sel []bool) Prediction {
	c := p.cost(sel)
	pr := Prediction{Cost: c}
	fs := p.m.in.Funcs
	for k, s := range sel {
		if s {
			f := &fs[p.order[k]]
			pr.Functions++
			pr.Samples += f.Samples
			pr.Stalls += f.Stalls
			p.inPlan[p.order[k]] = true
		}
	}
	pr.Veneers = p.m.veneers(p.inPlan)
	// worst is the fewest stalls the plan removes: its own, or with the
	// code it relieves as the pessimistic pressure sees it.
	worst := pr.Stalls
	if p.pressure != nil {
		// Its own stalls and those of the code it relieves.
		pr.Stalls = p.pressure.total - p.pressure.left(p.inPlan, c.Bytes)
		worst = p.pressure.total - p.pressure.remaining(p.inPlan, c.Bytes)
	}
	for _, i := range p.order {
		p.inPlan[i] = false
	}
	if bs := p.m.in.BusySamples; bs > 0 {
		pr.Share = float64(pr.Samples) / float64(bs)
		pr.StallShare = pr.Stalls / float64(bs)
		if all := p.m.in.totalStalls(); all > 0 { // else nothing to bound: no stall estimates
			// The pressure's stalls of lines that fit now can exceed the
			// functions' own estimates: the bound holds the prediction.
			all = max(all, pr.Stalls)
			least := max(0, min(worst, pr.Stalls))
			pr.CyclesLow = max(0, 1-(all+2*math.Sqrt(all))/float64(bs))
			pr.CyclesHigh = (1 - max(0, least-2*math.Sqrt(least))/float64(bs)) * (1 + LayoutLuck)
		}
	}
	pr.ITCMUsed = int64(p.m.in.ITCMUsed) + c.Bytes
	return pr
}
