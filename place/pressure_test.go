// SPDX-License-Identifier: Apache-2.0

package place

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
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
		in.Funcs = append(in.Funcs, oneLineFunc(f.name, k, f.samples, LineHeat{Stalls: f.stalls, Entries: f.entries}))
	}
	return in
}

// oneLineFunc is function name, one 32-byte line at the k-th line of
// flash, with samples and the line's heat.
func oneLineFunc(name string, k, samples int, heat LineHeat) Func {
	heat.Addr = uint32(flashBase + 32*k)
	return Func{Key: KeyFor(name+".c", name), Symbol: name, Section: ".text." + name, Object: name + ".o",
		Addr: heat.Addr, Size: 32, Align: 4, Region: "FLASH", Samples: samples, Stalls: heat.Stalls, Lines: []LineHeat{heat}}
}

// moved marks the one-line functions named A, B, ... as moved.
func moved(names ...string) []bool {
	inPlan := make([]bool, 6)
	for _, n := range names {
		inPlan[n[0]-'A'] = true
	}
	return inPlan
}

// TestPressureHandComputed checks the prediction of the stalls left in
// flash against the relinks worked out by hand.
func TestPressureHandComputed(t *testing.T) {
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

// rateInput is six one-line functions as in pressureInput, each line with
// the instructions and samples that give its fetch rate (lineRate):
//
//	name  set  stalls  samples  insns  rate
//	A      0     500      510     10     1   (stalls / penalty, and (510-500)/10)
//	B      1       0     1000     10   100   (a hot loop)
//	C      0     500      510     10     1
//	D      1       0       20     10     2
//	E      0     500      510     10     1
//	F      1       0     fSamples 10   fSamples/10
func rateInput(fSamples int) *Input {
	in := &Input{ITCMSize: 64 << 10, ITCMUsed: 0x100, BusySamples: 4000, FillPenalty: 500,
		ICache: board.CacheGeometry{Size: 128, Ways: 2, LineSize: 32}}
	for k, f := range []struct {
		name    string
		stalls  float64
		samples int
	}{{"A", 500, 510}, {"B", 0, 1000}, {"C", 500, 510}, {"D", 0, 20}, {"E", 500, 510}, {"F", 0, fSamples}} {
		in.Funcs = append(in.Funcs, oneLineFunc(f.name, k, f.samples, LineHeat{Stalls: f.stalls, Insns: 10, Samples: f.samples}))
	}
	return in
}

// TestExpectedHandComputed checks the LRU prediction (pressure.expected)
// against relinks worked out by hand. Set 0 holds A, C and E, fetched
// alike: the two ways keep two, each fetch of the third misses and evicts
// one, which misses once more, so all three miss on every fetch: 3 × 500 =
// 1,500 stall samples, what they show. Set 1 holds B and D (F, without a
// sample, counts for nothing), which fit.
func TestExpectedHandComputed(t *testing.T) {
	for _, tc := range []struct {
		what     string
		fSamples int
		moved    []string
		want     float64
	}{
		{"stock", 0, nil, 1500},
		// Everything after B moves down a line and changes sets: set 0
		// holds A, D and F (rates 1, 2, 0), set 1 C and E: all fit.
		{"B moves", 0, []string{"B"}, 0},
		// F leaves nothing behind it: the sets stay as they are.
		{"F moves", 0, []string{"F"}, 1500},
		// F moves down into set 0 beside A and C (F counts for nothing).
		{"E moves", 0, []string{"E"}, 0},
		// F runs rarely (rate 0.1): now it evicts B or D in set 1 on each
		// of its fetches, which then miss once each: 0.3 misses, 150
		// stall samples the capture does not show, so every prediction
		// is scaled by 1,500 / 1,650. Moving B puts A, D and F in set 0:
		// F's fetches cost 0.3 misses again, 150 × 1,500 / 1,650.
		{"rare F, stock", 1, nil, 1500},
		{"rare F, B moves", 1, []string{"B"}, 150 * 1500.0 / 1650},
	} {
		pr := newPressure(rateInput(tc.fSamples))
		got := pr.expected(moved(tc.moved...), 32*int64(len(tc.moved)))
		if math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %v stall samples expected, want %v", tc.what, got, tc.want)
		}
	}
}

// groupsInput is alias in miniature: eight 64-byte functions (the groups
// interleaved in address and emission order), each with a
// line in both sets of a 128-byte 2-way cache (moving one shifts the rest
// by two lines, so no line changes set). Group G's lines in set 0 and group
// H's in set 1 all thrash: four lines per set over two ways. Moving one
// member of a group leaves it thrashing; moving two cures it.
//
//	G1 520, G2 500, G3 480, G4 460 stall samples (line 0)
//	H1 515, H2 495, H3 475, H4 455 stall samples (line 1)
//
// Each has 10 more samples than stalls. Ranked one at a time, G1 and H1
// come first (by samples, density and stalls alike), which cures neither
// group.
func groupsInput(sampleScale int) *Input {
	in := &Input{ITCMSize: 64 << 10, ITCMUsed: 0x100, FillPenalty: 500,
		ICache: board.CacheGeometry{Size: 128, Ways: 2, LineSize: 32}}
	for k, f := range []struct {
		name   string
		stalls float64
	}{{"G1", 520}, {"H1", 515}, {"G2", 500}, {"H2", 495}, {"G3", 480}, {"H3", 475}, {"G4", 460}, {"H4", 455}} {
		addr := uint32(flashBase + 64*k)
		samples := sampleScale * (int(f.stalls) + 10)
		heat := LineHeat{Addr: addr, Stalls: f.stalls, Insns: 10, Samples: samples}
		idle := LineHeat{Addr: addr + 32, Insns: 10}
		lines := []LineHeat{heat, idle}
		if f.name[0] == 'H' {
			heat.Addr, idle.Addr = addr+32, addr
			lines = []LineHeat{idle, heat}
		}
		in.BusySamples += samples
		in.Funcs = append(in.Funcs, Func{Key: KeyFor(f.name+".c", f.name), Symbol: f.name, Section: ".text." + f.name,
			Object: fmt.Sprintf("unit%d.o", k), Addr: addr, Size: 64, Align: 4, Region: "FLASH", Samples: samples, Stalls: f.stalls,
			Lines: lines})
	}
	return in
}

// TestStallsObjectiveCuresAGroup: at 128 bytes the samples knapsack,
// density-greedy and both stalls rankings move G1 and H1; the set search
// moves G1, then G2, which cures set 0 (G3's and G4's stalls go too), and
// the prediction says so by far more than the sampling error of the
// plans' difference (2 × √(510 + 525)): the stalls objective chooses it.
// With a hundred times the samples the capture can no longer tell: the
// samples plan stays, and the plan says why.
func TestStallsObjectiveCuresAGroup(t *testing.T) {
	p, err := Build(groupsInput(1), Options{Budget: 128, Objective: ObjectiveStalls, MinSamples: 1, CurveBudgets: []uint32{0, 128}})
	if err != nil {
		t.Fatal(err)
	}
	if got := planned(p); !slices.Equal(got, []string{"G1", "G2"}) {
		t.Errorf("planned %v, want [G1 G2]", got)
	}
	if !strings.Contains(p.Chosen, ": the set search (") || !strings.Contains(p.Chosen, "for the exact samples plan)") {
		t.Errorf("chosen: %q, want the set search's plan against the samples plan's", p.Chosen)
	}
	// By hand: both sets thrash now, 4.04 and 4.03 misses per fetch round
	// (4 lines each; G1 and H1 fetched at 1.04 and 1.03), scaled to the
	// 3,900 stall samples shown. After the move set 0 holds G3 and G4,
	// which fit; set 1 still misses 4.03 × 500 × 3900/4035 = 1,947.5.
	// Every sampled line counted (remaining): both sets hold 6 lines, so
	// G3, G4 and H1-H4 stall as now, 2,880. Predicted left: the midpoint.
	scale := 3900.0 / 4035
	left := (4.03*500*scale + 2880) / 2
	if got := p.Prediction.Stalls; math.Abs(got-(3900-left)) > 1e-6 {
		t.Errorf("predicted %v stall samples removed, want %v", got, 3900-left)
	}
	noisy, err := Build(groupsInput(100), Options{Budget: 128, Objective: ObjectiveStalls, MinSamples: 1, CurveBudgets: []uint32{128}})
	if err != nil {
		t.Fatal(err)
	}
	if got := planned(noisy); !slices.Equal(got, []string{"G1", "H1"}) {
		t.Errorf("with a hundred times the samples: planned %v, want the samples plan's [G1 H1]", got)
	}
	if !strings.Contains(noisy.Chosen, ": the exact samples plan (") || !strings.Contains(noisy.Chosen, "sampling error") {
		t.Errorf("chosen: %q, want the samples plan for want of samples", noisy.Chosen)
	}
	// The runner-up of each: the samples plan the set search replaced,
	// and the set search's plan the samples plan kept out.
	for _, tc := range []struct {
		scale      int
		want, rule string
	}{{1, "G1 H1", "the exact samples plan ("}, {100, "G1 G2", "the set search ("}} {
		second, err := Build(groupsInput(tc.scale), Options{Budget: 128, Objective: ObjectiveStalls, MinSamples: 1, CurveBudgets: []uint32{128}, RunnerUp: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(planned(second), " "); got != tc.want || !strings.Contains(second.Chosen, "the runner-up of 5 plans (--runner-up): "+tc.rule) {
			t.Errorf("samples ×%d, the runner-up: planned [%s], chosen %q; want [%s], named %q", tc.scale, got, second.Chosen, tc.want, tc.rule)
		}
	}
	if _, err := Build(groupsInput(1), Options{Budget: 512, Objective: ObjectiveStalls, MinSamples: 1, RunnerUp: true}); !errors.Is(err, ErrNoRunnerUp) {
		t.Errorf("the runner-up where every candidate fits: %v, want ErrNoRunnerUp", err)
	}
	if _, err := Build(groupsInput(1), Options{Budget: 128, Objective: ObjectiveSamples, RunnerUp: true}); err == nil || !strings.Contains(err.Error(), "the samples objective makes one") {
		t.Errorf("the runner-up of the samples objective: %v, want it refused", err)
	}
	all, err := Build(groupsInput(1), Options{Budget: 512, Objective: ObjectiveStalls, MinSamples: 1, CurveBudgets: []uint32{512}})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Entries) != 8 || all.Chosen != "every candidate fits the budget" {
		t.Errorf("at 512 bytes: %d functions planned, chosen: %q; want all 8, with nothing to choose", len(all.Entries), all.Chosen)
	}
	// The interval holds the prediction.
	for _, pr := range []Prediction{p.Prediction, p.Greedy, noisy.Prediction} {
		if point := 1 - pr.StallShare; pr.CyclesLow > point || pr.CyclesHigh < point {
			t.Errorf("cycles between %.4f and %.4f of now, but predicted %.4f", pr.CyclesLow, pr.CyclesHigh, point)
		}
	}
}

// mixInput is a mix of two workloads that run at different times, in the
// 2-way cache of groupsInput: six 64-byte functions whose sampled line is
// in set 0. Workload X runs G1-G4, which thrash (520, 500, 480, 460 stall
// samples, 10 samples more each); workload Y runs Y1 and Y2, loops that
// hit (300 samples each, no stalls). Each workload is one capture, with
// one sample of the mix per sample of its own.
func mixInput() *Input {
	in := &Input{ITCMSize: 64 << 10, ITCMUsed: 0x100, FillPenalty: 500, WorkloadScale: []float64{1, 1},
		ICache: board.CacheGeometry{Size: 128, Ways: 2, LineSize: 32}}
	for k, f := range []struct {
		name     string
		workload int
		stalls   float64
		samples  int
	}{{"G1", 0, 520, 530}, {"G2", 0, 500, 510}, {"G3", 0, 480, 490}, {"G4", 0, 460, 470}, {"Y1", 1, 0, 300}, {"Y2", 1, 0, 300}} {
		addr := uint32(flashBase + 64*k)
		lines := []LineHeat{{Addr: addr, Stalls: f.stalls, Insns: 10, Samples: f.samples}}
		own := make([][]LineHeat, 2)
		own[f.workload] = lines
		in.BusySamples += f.samples
		in.Funcs = append(in.Funcs, Func{Key: KeyFor(f.name+".c", f.name), Symbol: f.name, Section: ".text." + f.name,
			Object: fmt.Sprintf("unit%d.o", k), Addr: addr, Size: 64, Align: 4, Region: "FLASH", Samples: f.samples, Stalls: f.stalls,
			Lines: lines, WorkloadLines: own})
	}
	return in
}

// TestMixPressurePerWorkload: the mix's prediction sees each workload's
// sets apart. Moving G1 and G2 leaves G3 and G4 in set 0 when X runs,
// which fit: all of X's 1,960 stall samples go. Pooled, set 0 would still
// hold G3, G4, Y1 and Y2 as if they competed: G3 and G4 stall as now
// (940, every sampled line counted) and, as LRU sees the rates (Y's loops
// at 30 fetches stay, G1 at 1.04 and the others at 1 miss: 2 + 2 × 2
// misses after the move against 4.04 + 2 × 4.04 now, scaled to the 1,960
// shown), 1,960 × 6 / 12.12: about 1,005 removed, half of what X loses.
func TestMixPressurePerWorkload(t *testing.T) {
	p, err := Build(mixInput(), Options{Budget: 128, Objective: ObjectiveStalls, MinSamples: 1, CurveBudgets: []uint32{128}})
	if err != nil {
		t.Fatal(err)
	}
	if got := planned(p); !slices.Equal(got, []string{"G1", "G2"}) {
		t.Errorf("planned %v, want [G1 G2]", got)
	}
	if got := p.Prediction.Stalls; math.Abs(got-1960) > 1e-6 {
		t.Errorf("predicted %v stall samples removed, want all 1960 of X's", got)
	}
	pooled := mixInput()
	pooled.WorkloadScale = nil
	for i := range pooled.Funcs {
		pooled.Funcs[i].WorkloadLines = nil
	}
	q, err := Build(pooled, Options{Budget: 128, Objective: ObjectiveStalls, MinSamples: 1, CurveBudgets: []uint32{128}})
	if err != nil {
		t.Fatal(err)
	}
	want := 1960 - (1960*6/12.12+940)/2
	if got := q.Prediction.Stalls; !slices.Equal(planned(q), []string{"G1", "G2"}) || math.Abs(got-want) > 1e-6 {
		t.Errorf("pooled: planned %v, %v stall samples removed; want [G1 G2], %v", planned(q), got, want)
	}
	bad := mixInput()
	bad.Funcs[0].WorkloadLines = bad.Funcs[0].WorkloadLines[:1]
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "G1 has the line heat of 1 workloads, the input 2") {
		t.Errorf("a function with one workload's lines of two: %v", err)
	}
}

// A candidate's lead over the incumbent under closeLead is reported as
// one the capture can not tell; a larger one is not.
func TestReplacedWhySaysWhenTheCaptureCannotTell(t *testing.T) {
	close := replacedWhy("the set search", 11852, "the exact samples plan", 12371) // -O2 at 4 KB: 4.2 %
	if !strings.Contains(close, "against 12371 for the exact samples plan") || !strings.Contains(close, "the capture can not tell the two apart") {
		t.Errorf("a 4.2 %% lead: %q, want it named and called too close to tell", close)
	}
	close = replacedWhy("density-greedy", 11685, "the exact samples plan", 12317) // -O2 at 4 KB, 6 December: 5.1 %
	if !strings.Contains(close, "the capture can not tell the two apart") {
		t.Errorf("a 5.1 %% lead: %q, want it called too close to tell", close)
	}
	clear := replacedWhy("the set search", 7909, "the exact samples plan", 9898) // alias at 4 KB: 20 %
	if strings.Contains(clear, "can not tell") {
		t.Errorf("a 20 %% lead: %q, want no doubt cast", clear)
	}
}

// spreadInput is four sampled one-line functions, A, C, E and G, each
// followed by a cold one (X1-X4), in the 128-byte cache of pressureInput:
// the sampled lines are the even ones, all in set 0, and thrash (100 stall
// samples each). pinned adds that many sampled lines the plan can not
// touch (pinned), after them.
func spreadInput(pinned int) *Input {
	in := &Input{ITCMSize: 64 << 10, ITCMUsed: 0x100, FillPenalty: 500,
		ICache: board.CacheGeometry{Size: 128, Ways: 2, LineSize: 32}}
	k := 0
	add := func(name string, samples int, stalls float64) *Func {
		in.Funcs = append(in.Funcs, oneLineFunc(name, k, samples, LineHeat{Stalls: stalls, Entries: stalls / 500, Insns: 8, Samples: samples}))
		in.BusySamples += samples
		k++
		f := &in.Funcs[len(in.Funcs)-1]
		if samples == 0 {
			f.Lines = nil // as imageinput gives them: line heat of sampled functions only
		}
		return f
	}
	for _, name := range []string{"A", "C", "E", "G"} {
		add(name, 110, 100)
		add("X"+name, 0, 0)
	}
	for p := range pinned {
		add(fmt.Sprint("P", p), 20, 0).Pin = "sampler code"
	}
	return in
}

// TestFlashGroupWhenTheRestFitsTheCache: with one function moved, the
// three sampled ones left would share set 0 wherever the relink shifts
// them (each is two lines from the next), so they thrash; linked together
// they take three lines of a four-line cache, no set holds more than its
// ways, and the plan predicts every stall gone and names them, in address
// order, for the ld-text fragment. Sampled code the plan may not touch
// counts against the cache: with two pinned lines the group would not fit.
func TestFlashGroupWhenTheRestFitsTheCache(t *testing.T) {
	opt := Options{Budget: 32, Objective: ObjectiveStalls, MinSamples: 1, CurveBudgets: []uint32{32}}
	p, err := Build(spreadInput(0), opt)
	if err != nil {
		t.Fatal(err)
	}
	left := []string{"A", "C", "E", "G"}
	left = slices.DeleteFunc(left, func(n string) bool { return slices.Contains(planned(p), n) })
	if got := names(p.FlashGroup); !slices.Equal(got, left) || len(got) != 3 {
		t.Errorf("flash group %v, want the three sampled functions not planned (%v) in address order", got, left)
	}
	if p.Prediction.Stalls != 400 {
		t.Errorf("predicted %v stall samples removed, want all 400: the group fits the cache", p.Prediction.Stalls)
	}
	if p.GroupWithin != 128 {
		t.Errorf("the group must lie within %d bytes, want the cache's 128", p.GroupWithin)
	}
	if !strings.Contains(p.Chosen, "the exact samples plan (0 stall samples left in flash): the sampled code it leaves in flash fits the cache") {
		t.Errorf("chosen: %q, want the samples plan, whose code left in flash fits the cache", p.Chosen)
	}
	var summary strings.Builder
	if err := WriteSummary(&summary, p, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(summary.String(), "flash group: the 3 sampled functions left in flash (96 bytes)") {
		t.Errorf("the summary does not name the flash group:\n%s", summary.String())
	}

	opt.KeepFlashOrder = true
	kept, err := Build(spreadInput(0), opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept.FlashGroup) != 0 {
		t.Errorf("--keep-flash-order: group %v, want none", names(kept.FlashGroup))
	}
	// Moving A alone: the relink moves C, E and G a line down, all into
	// set 1, where they thrash (300); linked together they fit.
	in := spreadInput(0)
	pr := newPressure(in)
	inPlan := make([]bool, len(in.Funcs))
	inPlan[0] = true
	if got := pr.remaining(inPlan, 32); got != 300 {
		t.Errorf("A moved, in the link's order: %v stall samples left, want 300", got)
	}
	groupable := make([]bool, len(in.Funcs))
	for i := range in.Funcs {
		groupable[i] = in.Funcs[i].Samples > 0
	}
	pr.setGroupable(groupable, make([][]int32, len(in.Funcs)))
	if got, exp := pr.remaining(inPlan, 32), pr.expected(inPlan, 32); got != 0 || exp != 0 {
		t.Errorf("A moved, the rest linked together: %v (expected %v) stall samples left, want 0", got, exp)
	}

	opt.KeepFlashOrder = false
	crowded, err := Build(spreadInput(2), opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(crowded.FlashGroup) != 0 {
		t.Errorf("with 64 bytes of pinned sampled code: group %v, want none (96 + 64 bytes do not fit 128)", names(crowded.FlashGroup))
	}
	// The QEMU demo's testbench is not on the board: sampled, it takes no
	// room in the cache.
	testbench := spreadInput(2)
	for i := range testbench.Funcs {
		if testbench.Funcs[i].Pin != "" {
			testbench.Funcs[i].Pin, testbench.Funcs[i].Kind = "testbench code", board.KindTestbench
		}
	}
	offBoard, err := Build(testbench, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(offBoard.FlashGroup) != 3 {
		t.Errorf("with 64 bytes of sampled testbench code: group %v, want three", names(offBoard.FlashGroup))
	}
	// With 32 bytes of it the group fits exactly; when the group calls
	// the planned function, the veneer of that call (8 bytes) is the group's
	// too, and it no longer does.
	exact, err := Build(spreadInput(1), opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(exact.FlashGroup) != 3 {
		t.Errorf("with 32 bytes of pinned sampled code: group %v, want three (96 + 32 bytes fit 128)", names(exact.FlashGroup))
	}
	calling := spreadInput(1)
	for _, caller := range []string{"A", "C", "E", "G"} {
		for _, callee := range []string{"A", "C", "E", "G"} {
			if caller != callee {
				calling.Edges = append(calling.Edges, Edge{Caller: funcAddr(calling, caller), Callee: funcAddr(calling, callee)})
			}
		}
	}
	opt.Budget, opt.CurveBudgets = 56, []uint32{56} // one function and the veneers of its three calls back
	veneered, err := Build(calling, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(veneered.Entries) != 1 || len(veneered.FlashGroup) != 0 {
		t.Errorf("calling the planned function: planned %v, group %v; want one planned and no group (96 + 8 + 32 bytes do not fit 128)", planned(veneered), names(veneered.FlashGroup))
	}
}

func funcAddr(in *Input, symbol string) uint32 {
	for _, f := range in.Funcs {
		if f.Symbol == symbol {
			return f.Addr
		}
	}
	panic("no function " + symbol)
}

func names(entries []Entry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Symbol)
	}
	return out
}

// TestSharedLineIsOneLine: two 16-byte functions in one 32-byte line and
// a third function two lines on, all in set 0 of pressureInput's cache
// (two ways): the set holds two lines, which fit, however many functions
// they hold; counted per function it would hold three and thrash.
func TestSharedLineIsOneLine(t *testing.T) {
	in := &Input{ITCMSize: 64 << 10, ITCMUsed: 0x100, BusySamples: 330, FillPenalty: 500,
		ICache: board.CacheGeometry{Size: 128, Ways: 2, LineSize: 32}}
	for k, name := range []string{"A", "B"} {
		f := oneLineFunc(name, 0, 110, LineHeat{Stalls: 100, Entries: 0.2, Insns: 4, Samples: 110})
		f.Addr, f.Size = f.Addr+uint32(16*k), 16
		in.Funcs = append(in.Funcs, f)
	}
	in.Funcs = append(in.Funcs, oneLineFunc("C", 2, 110, LineHeat{Stalls: 100, Entries: 0.2, Insns: 8, Samples: 110}))
	pr := newPressure(in)
	stay := make([]bool, len(in.Funcs))
	if got := pr.remaining(stay, 0); got != 0 {
		t.Errorf("A and B share a line: %v stall samples left in set 0, want 0 (two lines in two ways)", got)
	}
	if got := pr.lru(stay, 0); got != 0 {
		t.Errorf("A and B share a line: LRU predicts %v stall samples, want 0", got)
	}
}

// TestUnseenFunctions: Chao's estimate of the functions that ran without a
// sample, from the sampled functions wherever the plan lists them (once
// each), and the summary's line about it when the plan has a flash group.
func TestUnseenFunctions(t *testing.T) {
	entry := func(name string, samples int) Entry {
		return Entry{Symbol: name, Section: ".text." + name, Object: name + ".o", Samples: samples}
	}
	p := &Plan{Layout: LayoutLD,
		Entries:    []Entry{entry("a", 1), entry("b", 1), entry("c", 5)},
		FlashGroup: []Entry{entry("d", 2), entry("e", 1)},
		Excluded:   []Exclusion{{Entry: entry("e", 1), Reason: ReasonFewSamples}, {Entry: entry("f", 2), Reason: ReasonFewSamples}},
	}
	// f1 = 3 (a, b, e once), f2 = 2 (d, f): 9/4.
	if got := p.UnseenFunctions(); got != 2.25 {
		t.Errorf("unseen %v, want 2.25", got)
	}
	var out strings.Builder
	if err := WriteSummary(&out, p, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "functions that run without a sample: about 2") {
		t.Errorf("summary without the unseen functions:\n%s", out.String())
	}
	p.Excluded = p.Excluded[:1] // no function of two samples: f1(f1-1)/2
	p.FlashGroup = p.FlashGroup[1:]
	if got := p.UnseenFunctions(); got != 3 {
		t.Errorf("unseen %v without doubletons, want 3", got)
	}
}
