// SPDX-License-Identifier: Apache-2.0

package place

import (
	"errors"
	"fmt"
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
}

func entryOf(f *Func) Entry {
	return Entry{Key: f.Key, Symbol: f.Symbol, Section: f.Section, Object: f.Object,
		Archive: f.Archive, Addr: f.Addr, Size: f.Size, Align: f.Align, Samples: f.Samples}
}

// Prediction is what a selection is expected to do.
type Prediction struct {
	Cost
	Functions int     `json:"functions"`
	Samples   int     `json:"samples"` // busy samples in the moved functions
	Share     float64 `json:"share"`   // Samples / BusySamples
	// ITCMUsed is the predicted ITCM use of the rebuilt image.
	ITCMUsed int64 `json:"itcm_used"`
	// Veneers is the predicted number of long-branch veneers in the rebuilt
	// image (all regions).
	Veneers int `json:"veneers"`
}

// CurvePoint is the best plan at one budget, exact and greedy.
type CurvePoint struct {
	Budget  uint32     `json:"budget"`
	Exact   Prediction `json:"exact"`
	Optimal bool       `json:"optimal"`
	Greedy  Prediction `json:"greedy"`
}

// Plan is the result of planning, and the input of every rendering and of
// verify.
type Plan struct {
	Version   int    `json:"version"`
	BuildID   string `json:"build_id,omitempty"`
	Layout    Layout `json:"layout"`
	ITCMStart uint32 `json:"itcm_start"`
	ITCMSize  uint32 `json:"itcm_size"`
	ITCMUsed  uint32 `json:"itcm_used"` // fixed use before the plan
	Budget    uint32 `json:"budget"`
	// BlockAlign is the alignment the moved block starts at; the ld
	// fragment begins with ". = ALIGN(BlockAlign)".
	BlockAlign  uint32 `json:"block_align"`
	BusySamples int    `json:"busy_samples"`
	MinSamples  int    `json:"min_samples"`
	// VeneersBefore is the model's veneer count for the planned-from image;
	// compare it with the real count to check the call graph is complete.
	VeneersBefore int `json:"veneers_before"`
	// Entries are the functions to move, in the order the linker will lay
	// them out.
	Entries  []Entry     `json:"entries"`
	Excluded []Exclusion `json:"excluded"`
	// Prediction is for Entries. Optimal says the search proved no
	// selection within Budget covers more samples under the cost model;
	// UpperBound bounds what any selection can cover either way.
	Prediction Prediction   `json:"prediction"`
	Optimal    bool         `json:"optimal"`
	UpperBound int          `json:"upper_bound"`
	Greedy     Prediction   `json:"greedy"`
	Curve      []CurvePoint `json:"curve"`
	Warnings   []string     `json:"warnings,omitempty"`
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
	// CurveBudgets are the budgets of the benefit curve; nil means every
	// 4 KiB (coarser above 128 KiB, at most 33 points) from 0 to the free
	// ITCM, plus the free ITCM itself.
	CurveBudgets []uint32
	// SearchNodes bounds branch and bound at the main budget (each curve
	// point gets a fiftieth); <= 0 means DefaultSearchNodes. Local search
	// gets a quarter of it in cost evaluations.
	SearchNodes int
}

// InITCM reports whether addr lay in ITCM in the image the plan was made
// from.
func (p *Plan) InITCM(addr uint32) bool { return InRange(addr, p.ITCMStart, p.ITCMSize) }

// Validate checks the plan's internal consistency; ReadPlanJSON calls it.
func (p *Plan) Validate() error {
	if p.Version != PlanVersion {
		return fmt.Errorf("place: plan version %d, this tcmprof reads version %d", p.Version, PlanVersion)
	}
	if p.Layout != LayoutLD && p.Layout != LayoutZephyr {
		return fmt.Errorf("place: plan has unknown layout %q", p.Layout)
	}
	if p.BlockAlign == 0 || p.BlockAlign&(p.BlockAlign-1) != 0 {
		return fmt.Errorf("place: plan block alignment %d is not a power of two", p.BlockAlign)
	}
	seen := make(map[string]bool)
	for _, e := range p.Entries {
		if e.Symbol == "" || e.Section == "" {
			return errors.New("place: plan entry without symbol or section")
		}
		id := e.Archive + "\x00" + e.Object + "\x00" + e.Section
		if seen[id] {
			return fmt.Errorf("place: plan lists section %s of %s twice", e.Section, e.Object)
		}
		seen[id] = true
	}
	return nil
}

// Build plans which functions of in to move into ITCM.
func Build(in *Input, opt Options) (*Plan, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if err := checkPatterns(opt.Excludes); err != nil {
		return nil, err
	}
	if opt.MinSamples <= 0 {
		opt.MinSamples = DefaultMinSamples
	}
	if opt.Layout == "" {
		opt.Layout = LayoutLD
	}
	if opt.Layout != LayoutLD && opt.Layout != LayoutZephyr {
		return nil, fmt.Errorf("place: unknown layout %q", opt.Layout)
	}
	if opt.SearchNodes <= 0 {
		opt.SearchNodes = DefaultSearchNodes
	}
	free := in.ITCMSize - in.ITCMUsed
	budget := uint32(opt.Budget)
	switch {
	case opt.Budget < 0:
		budget = free
	case opt.Budget > int64(free):
		return nil, fmt.Errorf("place: budget %d bytes exceeds the %d bytes of free ITCM", opt.Budget, free)
	}

	m := newModel(in)
	plan := &Plan{
		Version: PlanVersion, BuildID: in.BuildID, Layout: opt.Layout,
		ITCMStart: in.ITCMStart, ITCMSize: in.ITCMSize, ITCMUsed: in.ITCMUsed,
		Budget: budget, BusySamples: in.BusySamples, MinSamples: opt.MinSamples,
		VeneersBefore: m.veneers(nil),
	}
	bootFrom, unknown := bootClosure(in, in.BootRoots, in.BootCopies)
	for _, r := range unknown {
		plan.Warnings = append(plan.Warnings, fmt.Sprintf("boot root %q is not a function of the image", r))
	}
	var cands []int
	for i := range in.Funcs {
		reason, detail := classify(m, i, bootFrom, opt.Excludes, opt.MinSamples, opt.Layout)
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
			return nil, fmt.Errorf("place: curve budget %d bytes exceeds the %d bytes of free ITCM", b, free)
		}
		largest = max(largest, b)
	}
	if bits := int64(len(cands)) * (int64(largest) + 64); bits > maxTableBits {
		return nil, fmt.Errorf("place: %d candidates × %d bytes of budget need %d MiB for the exact layout table; lower --budget or raise --min-samples",
			len(cands), largest, bits/8>>20)
	}
	p := newProblem(m, cands)
	table := p.layoutTable(int64(largest))
	sel, optimal, upper := p.solve(table, int64(budget), opt.SearchNodes)
	plan.Prediction = predict(p, sel)
	plan.Optimal, plan.UpperBound = optimal, int(upper)
	plan.Greedy = predict(p, p.greedy(int64(budget)))
	for k, s := range sel {
		if s {
			plan.Entries = append(plan.Entries, entryOf(&in.Funcs[cands[k]]))
		}
	}

	for _, b := range budgets {
		s, proven, _ := p.solve(table, int64(b), max(opt.SearchNodes/50, 1))
		point := CurvePoint{Budget: b, Exact: predict(p, s), Optimal: proven}
		point.Greedy = predict(p, p.greedy(int64(b)))
		plan.Curve = append(plan.Curve, point)
	}
	return plan, nil
}

func predict(p *problem, sel []bool) Prediction {
	c := p.cost(sel)
	pr := Prediction{Cost: c}
	for k, s := range sel {
		if s {
			pr.Functions++
			pr.Samples += int(p.value[k])
			p.inPlan[p.order[k]] = true
		}
	}
	pr.Veneers = p.m.veneers(p.inPlan)
	for _, i := range p.order {
		p.inPlan[i] = false
	}
	if bs := p.m.in.BusySamples; bs > 0 {
		pr.Share = float64(pr.Samples) / float64(bs)
	}
	pr.ITCMUsed = int64(p.m.in.ITCMUsed) + c.Bytes
	return pr
}
