// SPDX-License-Identifier: Apache-2.0

package linker

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/place"
)

// testSamples is a made-up profile of the test firmware. early_helper is
// the hottest function but boot code; drv_poll has too few samples;
// plain_mix is the whole plain .text of its archive member.
var testSamples = map[string]int{
	"proj/main.c:hot": 3000, "proj/main.c:warm": 500, "proj/main.c:foo": 800, "proj/main.c:foobar": 600,
	"proj/main.c:dup": 400, "net/ip.c:dup": 900, "drv/ip.c:dup": 50, "net/ip.c:ip_input": 300,
	"drv/ip.c:drv_poll": 5, "lib/util.c:util_hot": 700, "lib/util.c:util_mid": 650, "lib/util.c:util_cold": 20,
	"proj/main.c:star": 200, "proj/main.c:odd": 150, "proj/main.c:foo_clone": 100,
	"proj/main.c:early_helper.constprop.0": 2000, "proj/main.c:early_init": 10, "proj/main.c:main": 30,
	"proj/itcm.c:fast": 500, "proj/main.c:add3": 90, "proj/main.c:wide": 260, "lib/mix.c:plain_mix": 450,
}

func planInput(img *image) *place.Input {
	in := &place.Input{Funcs: append([]place.Func(nil), img.funcs...), Edges: img.edges,
		ITCMSize: itcmSize, ITCMUsed: img.itcmUsed, BootRoots: []string{"early_init"}, BuildID: "test"}
	for i := range in.Funcs {
		in.Funcs[i].Samples = testSamples[shortName(in.Funcs[i].Key.Source, in.Funcs[i].Symbol)]
		in.BusySamples += in.Funcs[i].Samples
	}
	in.BusySamples += 1000 // busy samples outside any function (e.g. veneers)
	return in
}

func verifyImage(img *image) *Image {
	return &Image{Funcs: img.funcs, ITCMSize: itcmSize, ITCMUsed: img.itcmUsed, Veneers: img.veneers}
}

func renderLD(t *testing.T, p *place.Plan) string {
	t.Helper()
	var buf bytes.Buffer
	skipped, err := RenderLD(&buf, p)
	if err != nil || len(skipped) > 0 {
		t.Fatalf("RenderLD: %v, skipped %v", err, skipped)
	}
	return buf.String()
}

func names(entries []place.Entry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, shortName(e.Key.Source, e.Symbol))
	}
	sort.Strings(out)
	return out
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestLDFragmentMatchesLinker is the oracle test for the cost model and the
// ld rendering: for a range of budgets, plan, render the fragment, relink
// with GNU ld, and check that exactly the planned functions (plus what was
// in ITCM before) are in ITCM, and that ITCM use and the veneer count are
// exactly as predicted.
func TestLDFragmentMatchesLinker(t *testing.T) {
	fw := buildFirmware(t)
	base := readImage(t, fw, fw.link(t, "base", ""))
	in := planInput(base)
	sawPartial, sawRemovedStub := false, false
	for _, budget := range []int64{0, 16, 40, 64, 100, 128, 200, -1} {
		t.Run(fmt.Sprint("budget=", budget), func(t *testing.T) {
			plan, err := place.Build(in, place.Options{Budget: budget, CurveBudgets: []uint32{}})
			if err != nil {
				t.Fatal(err)
			}
			if plan.VeneersBefore != base.veneers {
				t.Fatalf("model counts %d veneers in the base image, ld made %d", plan.VeneersBefore, base.veneers)
			}
			img := readImage(t, fw, fw.link(t, "planned", renderLD(t, plan)))
			want := append(names(plan.Entries), "proj/itcm.c:fast")
			sort.Strings(want)
			if got := keys(img.inITCM()); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("in ITCM after relink:\n  %v\nplanned:\n  %v", got, want)
			}
			if int64(img.itcmUsed) != plan.Prediction.ITCMUsed {
				t.Errorf("ITCM use %d bytes, predicted %d (%+v)", img.itcmUsed, plan.Prediction.ITCMUsed, plan.Prediction.Cost)
			}
			if img.veneers != plan.Prediction.Veneers {
				t.Errorf("%d veneers, predicted %d", img.veneers, plan.Prediction.Veneers)
			}
			if budget >= 0 && plan.Prediction.Bytes > budget {
				t.Errorf("plan uses %d bytes over budget %d", plan.Prediction.Bytes, budget)
			}
			if rep, err := Verify(plan, verifyImage(img)); err != nil || len(rep.Violations) > 0 {
				t.Errorf("verify: %v %v", err, rep.Violations)
			}
			for _, x := range plan.Excluded {
				if x.Symbol == "early_helper.constprop.0" && x.Reason != place.ReasonBoot {
					t.Errorf("early_helper excluded as %q", x.Reason)
				}
			}
			if budget < 0 && !slices.ContainsFunc(plan.Entries, func(e place.Entry) bool { return e.Symbol == "plain_mix" && e.Section == ".text" }) {
				t.Errorf("plain_mix, alone in its object's .text, not planned with all the ITCM: %v", names(plan.Entries))
			}
			sawPartial = sawPartial || (len(plan.Entries) > 0 && plan.Prediction.Samples < plan.UpperBound+1 && budget > 0 && budget < 200)
			sawRemovedStub = sawRemovedStub || plan.Prediction.RemovedStubs > 0
		})
	}
	if !sawPartial || !sawRemovedStub {
		t.Errorf("the budgets did not exercise a partial plan (%v) and a removed ITCM veneer (%v)", sawPartial, sawRemovedStub)
	}
}

// TestVerifyCatchesDepartures relinks with one planned function left out of
// the fragment, and with an excluded boot function added, and checks that
// verify names exactly those.
func TestVerifyCatchesDepartures(t *testing.T) {
	fw := buildFirmware(t)
	base := readImage(t, fw, fw.link(t, "base", ""))
	plan, err := place.Build(planInput(base), place.Options{Budget: -1, CurveBudgets: []uint32{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Entries) < 3 {
		t.Fatalf("plan too small for the test: %v", names(plan.Entries))
	}

	short := *plan
	left := plan.Entries[1]
	short.Entries = append(append([]place.Entry(nil), plan.Entries[:1]...), plan.Entries[2:]...)
	img := readImage(t, fw, fw.link(t, "short", renderLD(t, &short)))
	rep, err := Verify(plan, verifyImage(img))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Violations) != 1 || rep.Violations[0].Kind != ViolationNotInITCM || rep.Violations[0].Name != left.Key.String() {
		t.Fatalf("violations %v, want only %s not in ITCM", rep.Violations, left.Key)
	}

	extra := *plan
	var boot place.Entry
	for _, x := range plan.Excluded {
		if x.Symbol == "early_init" {
			boot = x.Entry
		}
	}
	extra.Entries = append(append([]place.Entry(nil), plan.Entries...), boot)
	img = readImage(t, fw, fw.link(t, "extra", renderLD(t, &extra)))
	rep, err = Verify(plan, verifyImage(img))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, v := range rep.Violations {
		kinds = append(kinds, v.Kind+" "+v.Name)
	}
	if len(rep.Violations) == 0 || rep.Violations[0].Kind != ViolationExcluded || !strings.Contains(rep.Violations[0].Name, "early_init") {
		t.Fatalf("violations %v, want early_init excluded in ITCM first", kinds)
	}
	for _, v := range rep.Violations[1:] {
		if v.Kind != ViolationITCMUse && v.Kind != ViolationVeneers {
			t.Errorf("unexpected violation %v", v)
		}
	}
}

// TestLDPatternsKeepDuplicatesApart moves the static dup of net/ip.c, or
// of net/ip.c and drv/ip.c, and nothing else: main.c has a .text.dup too,
// and the objects obj/net/ip.o and obj/drv/ip.o share their base name, so
// the patterns must name a directory. Linked by relative and by absolute
// paths, and relinked in a copy of the build directory: a pattern without
// a wildcard would make ld load the object a second time (duplicate
// symbols) or, from the old directory, a stale copy.
func TestLDPatternsKeepDuplicatesApart(t *testing.T) {
	built := buildFirmware(t)
	for _, tc := range []struct {
		name     string
		absolute bool
		move     []string
		lines    []string // fragment lines the plan must give
	}{
		{"one of two ip.o, relative", false, []string{"net/ip.c:dup"}, []string{"*/net/ip.o(.text.dup)"}},
		{"one of two ip.o, absolute", true, []string{"net/ip.c:dup"}, []string{"*/net/ip.o(.text.dup)"}},
		{"both ip.o, absolute", true, []string{"drv/ip.c:dup", "net/ip.c:dup"}, []string{"*/net/ip.o(.text.dup)", "*/drv/ip.o(.text.dup)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fw := *built
			fw.absolute = tc.absolute
			base := readImage(t, &fw, fw.link(t, "base", ""))
			in := planInput(base)
			for i := range in.Funcs {
				if name := shortName(in.Funcs[i].Key.Source, in.Funcs[i].Symbol); !slices.Contains(tc.move, name) {
					in.Funcs[i].Pin = "test: only " + strings.Join(tc.move, ", ") + " may move"
				}
			}
			plan, err := place.Build(in, place.Options{Budget: -1, CurveBudgets: []uint32{}})
			if err != nil {
				t.Fatal(err)
			}
			frag := renderLD(t, plan)
			for _, line := range tc.lines {
				if !slices.Contains(strings.Split(frag, "\n"), line) {
					t.Errorf("fragment lacks %q:\n%s", line, frag)
				}
			}
			moved := fw.copyTo(t)
			img := readImage(t, moved, moved.link(t, "dup", frag))
			want := append(slices.Clone(tc.move), "proj/itcm.c:fast")
			sort.Strings(want)
			if got := keys(img.inITCM()); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("in ITCM: %v, want %v", got, want)
			}
		})
	}
}
