// SPDX-License-Identifier: Apache-2.0

package linker

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/internal/armtest"
	"github.com/tcmprof/tcmprof/internal/zephyrtest"
	"github.com/tcmprof/tcmprof/place"
)

// The Zephyr rendering is checked by running it through a model of the two
// programs that consume it, CMake's zephyr_code_relocate() and
// gen_relocate_app.py, with Python's re as the oracle (internal/zephyrtest).

// TestZephyrRelocatesExactlyThePlan renders the plan of the test firmware
// for Zephyr and runs it through the model against the real objects'
// section lists, near misses included (.text.foobar, .text.foo.constprop.0,
// .rodata.foo, .rel.text.foo, .text.aXb for .text.a*b, .text.dup of other
// files).
func TestZephyrRelocatesExactlyThePlan(t *testing.T) {
	fw := buildFirmware(t)
	base := readImage(t, fw, fw.link(t, "base", ""))
	in := planInput(base)
	// Keep the near misses of planned names in flash: foobar and the
	// fake clone for foo, and drv/ip.c's dup for net/ip.c's.
	for i := range in.Funcs {
		switch shortName(in.Funcs[i].Key.Source, in.Funcs[i].Symbol) {
		case "drv/ip.c:dup", "proj/main.c:foobar", "proj/main.c:foo_clone":
			in.Funcs[i].Pin = "test: near miss stays in flash"
		}
	}
	plan, err := place.Build(in, place.Options{Budget: -1, Layout: place.LayoutZephyr, CurveBudgets: []uint32{}})
	if err != nil {
		t.Fatal(err)
	}
	var cmake bytes.Buffer
	skipped, err := RenderZephyr(&cmake, plan)
	if err != nil || len(skipped) > 0 {
		t.Fatalf("RenderZephyr: %v, skipped %v", err, skipped)
	}
	objectOf := make(map[string]object)
	for _, o := range fw.objects {
		objectOf[o.source] = o
	}
	got := zephyrtest.Relocated(t, cmake.String(), ZephyrLocation, func(source string) []string {
		o, ok := objectOf[source]
		if !ok {
			t.Fatalf("FILES names %s, which is not a source of the firmware", source)
		}
		return armtest.SectionNames(t, filepath.Join(fw.dir, o.path))
	})
	want := make(map[string][]string)
	for _, e := range plan.Entries {
		want[e.Key.Source] = append(want[e.Key.Source], e.Section)
	}
	for s := range want {
		sort.Strings(want[s])
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("relocated\n  %v\nplanned\n  %v\nCMake:\n%s", got, want, cmake.String())
	}
	planned := make(map[string]bool)
	for _, e := range plan.Entries {
		planned[shortName(e.Key.Source, e.Symbol)] = true
	}
	for _, must := range []string{"proj/main.c:foo", "proj/main.c:star", "proj/main.c:odd", "net/ip.c:dup", "proj/main.c:dup"} {
		if !planned[must] {
			t.Errorf("the plan lost %s; the near-miss checks need it", must)
		}
	}

	// The script's linker script names objects by base name and GNU ld
	// reads both parts as globs: the pinned drv/ip.c dup (drv/ip.o like
	// net/ip.o) and .text.aXb (for .text.a*b) move too. The collision check
	// must name exactly those, and linking the script's lines for real must
	// move exactly the plan plus them.
	col := ZephyrCollisions(plan, base.funcs)
	var colNames []string
	for _, c := range col {
		colNames = append(colNames, shortName(c.Other.Key.Source, c.Other.Symbol))
	}
	sort.Strings(colNames)
	if fmt.Sprint(colNames) != "[drv/ip.c:dup proj/main.c:not_star]" {
		t.Errorf("collisions %v, want drv/ip.c:dup and main.c:not_star", colNames)
	}

	type keep struct{ object, section string }
	var keeps []keep
	for source, sections := range got {
		for _, sec := range sections {
			keeps = append(keeps, keep{filepath.Base(objectOf[source].path), sec})
		}
	}
	sort.Slice(keeps, func(a, b int) bool {
		if keeps[a].object != keeps[b].object {
			return keeps[a].object < keeps[b].object
		}
		return keeps[a].section < keeps[b].section
	})
	var script strings.Builder
	script.WriteString(". = ALIGN(4);\n")
	for _, k := range keeps {
		fmt.Fprintf(&script, "KEEP(*%s(\"%s\"))\n", k.object, k.section)
	}
	script.WriteString(". = ALIGN(4);\n")
	img := readImage(t, fw, fw.link(t, "zephyr", script.String()))
	wantIn := append(append(names(plan.Entries), colNames...), "proj/itcm.c:fast")
	sort.Strings(wantIn)
	if gotIn := keys(img.inITCM()); fmt.Sprint(gotIn) != fmt.Sprint(wantIn) {
		t.Fatalf("in ITCM after the Zephyr-style link\n  %v\nwant\n  %v", gotIn, wantIn)
	}
	rep, err := Verify(plan, verifyImage(img))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Violations) != 1 || rep.Violations[0].Kind != ViolationExcluded || !strings.Contains(rep.Violations[0].Name, "drv/ip.c") {
		t.Errorf("verify: %v, want only the pinned drv/ip.c dup in ITCM", rep.Violations)
	}
	t.Logf("Zephyr-style link: ITCM use %d, predicted %d (tolerance %d); veneers %d, predicted %d",
		rep.ITCMUsed, rep.PredictedITCMUsed, rep.ITCMTolerance, rep.Veneers, rep.PredictedVeneers)
}

// TestZephyrFilterEscaping pushes names with every character that means
// something to CMake, the relocation line or a regex through the model.
func TestZephyrFilterEscaping(t *testing.T) {
	planned := []string{".text.a;b", ".text.c,d", `.text.e"f`, ".text.g$<h>", `.text.i\j`, ".text.k(l)|m", ".text.n+o*p?", ".text.q r", ".text.ü", ".text.s${t}"}
	nearMisses := []string{".text.a", ".text.ab", ".text.cXd", ".text.c", ".text.eXf", ".text.g", `.text.ij`, ".text.k(l)", ".text.m",
		".text.noo", ".text.n+o*p", ".text.qr", ".text.u", ".text.s", ".rel.text.a;b", ".text.a;b.constprop.0", "X.text.a;b"}
	p := &place.Plan{Version: place.PlanVersion, Layout: place.LayoutZephyr, BlockAlign: 8}
	for _, s := range planned {
		p.Entries = append(p.Entries, place.Entry{Key: place.KeyFor("/src/odd.c", "f"), Symbol: "f" + s, Section: s, Object: "odd.c.obj"})
	}
	p.Entries = append(p.Entries,
		place.Entry{Key: place.KeyFor("/src/a,b.c", "g"), Symbol: "g", Section: ".text.g", Object: "x.obj"},
		place.Entry{Key: place.KeyFor("src/rel.c", "h"), Symbol: "h", Section: ".text.h", Object: "y.obj"},
		place.Entry{Key: place.KeyFor("/src/plain.c", "legacy"), Symbol: "legacy", Section: ".text", Object: "z.obj"})
	var cmake bytes.Buffer
	skipped, err := RenderZephyr(&cmake, p)
	if err != nil {
		t.Fatal(err)
	}
	var skippedNames []string
	for _, s := range skipped {
		skippedNames = append(skippedNames, s.Entry.Symbol)
	}
	if fmt.Sprint(skippedNames) != "[g h legacy]" {
		t.Errorf("skipped %v, want the comma path, the relative path and the plain .text", skippedNames)
	}
	got := zephyrtest.Relocated(t, cmake.String(), ZephyrLocation, func(string) []string { return append(append([]string(nil), planned...), nearMisses...) })
	want := append([]string(nil), planned...)
	sort.Strings(want)
	if fmt.Sprint(got["/src/odd.c"]) != fmt.Sprint(want) || len(got) != 1 {
		t.Fatalf("relocated %q\nwant %q\nCMake:\n%s", got, want, cmake.String())
	}
}

// TestZephyrRelocatesTheFlashGroup splits a plan of the test firmware into
// ITCM entries and a flash group and checks, through the model of CMake
// and gen_relocate_app.py, that the group's sections go to FLASH_TEXT with
// NOCOPY (run where they load, no boot copy) and the ITCM ones to
// ITCM_TEXT, each exactly.
func TestZephyrRelocatesTheFlashGroup(t *testing.T) {
	fw := buildFirmware(t)
	base := readImage(t, fw, fw.link(t, "base", ""))
	plan, err := place.Build(planInput(base), place.Options{Budget: -1, Layout: place.LayoutZephyr, CurveBudgets: []uint32{}})
	if err != nil {
		t.Fatal(err)
	}
	half := len(plan.Entries) / 2
	if half == 0 {
		t.Fatalf("plan of %d entries: too few to split", len(plan.Entries))
	}
	plan.Entries, plan.FlashGroup = plan.Entries[:half], plan.Entries[half:]
	var cmake bytes.Buffer
	if skipped, err := RenderZephyr(&cmake, plan); err != nil || len(skipped) > 0 {
		t.Fatalf("RenderZephyr: %v, skipped %v", err, skipped)
	}
	objectOf := make(map[string]object)
	for _, o := range fw.objects {
		objectOf[o.source] = o
	}
	sectionsOf := func(source string) []string {
		return armtest.SectionNames(t, filepath.Join(fw.dir, objectOf[source].path))
	}
	for _, tc := range []struct {
		location string
		entries  []place.Entry
	}{{ZephyrLocation, plan.Entries}, {ZephyrFlashLocation, plan.FlashGroup}} {
		want := make(map[string][]string)
		for _, e := range tc.entries {
			want[e.Key.Source] = append(want[e.Key.Source], e.Section)
		}
		for s := range want {
			sort.Strings(want[s])
		}
		if got := zephyrtest.Relocated(t, cmake.String(), tc.location, sectionsOf); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: relocated\n  %v\nplanned\n  %v\nCMake:\n%s", tc.location, got, want, cmake.String())
		}
	}
}
