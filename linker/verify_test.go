// SPDX-License-Identifier: Apache-2.0

package linker

import (
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/place"
)

// TestVerifyRules checks the rules that the relink tests do not reach:
// renumbered clones resolve, pinned code that already was in ITCM may stay,
// and ITCM use and veneers beyond tolerance are violations while less is a
// note.
func TestVerifyRules(t *testing.T) {
	entry := func(sym string, addr uint32) place.Entry {
		return place.Entry{Key: place.KeyFor("/s/a.c", sym), Symbol: sym, Section: ".text." + sym, Object: "a.o", Addr: addr, Size: 16}
	}
	plan := &place.Plan{Version: place.PlanVersion, Layout: place.LayoutLD, BlockAlign: 8, ITCMSize: 0x1000,
		Entries: []place.Entry{entry("hot.constprop.0", 0x6000_0000)},
		Excluded: []place.Exclusion{
			{Entry: entry("vectors_helper", 0x40), Reason: place.ReasonPinned, Detail: "vector code"},
			{Entry: entry("boot", 0x6000_0100), Reason: place.ReasonBoot},
		},
		Prediction: place.Prediction{ITCMUsed: 0x200, Veneers: 4},
	}
	fn := func(sym string, addr uint32) place.Func {
		return place.Func{Key: place.KeyFor("/s/a.c", sym), Symbol: sym, Addr: addr, Size: 16}
	}
	img := &Image{ITCMSize: 0x1000, ITCMUsed: 0x200, Veneers: 4,
		Funcs: []place.Func{fn("hot.constprop.2", 0x100), fn("vectors_helper", 0x40), fn("boot", 0x6000_0100)}}
	rep, err := Verify(plan, img)
	if err != nil || len(rep.Violations) != 0 {
		t.Fatalf("clean image: %v %v", err, rep.Violations)
	}
	if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "hot.constprop.2") {
		t.Errorf("notes %q, want the renumbered clone", rep.Notes)
	}

	img.ITCMUsed = 0x200 + uint32(ITCMTolerance(plan)) + 1
	img.Veneers = 4 + VeneerTolerance(plan) + 1
	rep, _ = Verify(plan, img)
	var kinds []string
	for _, v := range rep.Violations {
		kinds = append(kinds, v.Kind)
	}
	if strings.Join(kinds, ",") != ViolationITCMUse+","+ViolationVeneers {
		t.Errorf("violations %q, want ITCM use and veneers", kinds)
	}

	img.ITCMUsed, img.Veneers = 0x100, 1
	img.Funcs[2].Addr = 0x300 // boot code moved into ITCM
	rep, _ = Verify(plan, img)
	if len(rep.Violations) != 1 || rep.Violations[0].Kind != ViolationExcluded {
		t.Errorf("violations %v, want only the boot function", rep.Violations)
	}
	if len(rep.Notes) != 3 {
		t.Errorf("notes %q, want clone, less ITCM, fewer veneers", rep.Notes)
	}
}

// TestVerifyFlashGroup checks the flash group's rules: together is clean;
// other code among its members but within the cache's size is a note (a
// relocation pattern can take a section of another object of the same
// name); spread over more than the cache, in ITCM, or gone is a violation.
func TestVerifyFlashGroup(t *testing.T) {
	entry := func(sym string, addr uint32) place.Entry {
		return place.Entry{Key: place.KeyFor("/s/a.c", sym), Symbol: sym, Section: ".text." + sym, Object: "a.o", Addr: addr, Size: 16}
	}
	plan := &place.Plan{Version: place.PlanVersion, Layout: place.LayoutZephyr, BlockAlign: 8, ITCMSize: 0x1000,
		FlashGroup:  []place.Entry{entry("g1", 0x6000_0000), entry("g2", 0x6000_4000)},
		GroupWithin: 128,
	}
	fn := func(sym string, addr uint32) place.Func {
		return place.Func{Key: place.KeyFor("/s/a.c", sym), Symbol: sym, Addr: addr, Size: 16, Align: 4}
	}
	for _, tc := range []struct {
		what      string
		g1, g2    uint32
		violation string // a substring of the one violation, "" for none
		noteAmong bool
	}{
		{"together", 0x6000_1000, 0x6000_1010, "", false},
		{"other code among them", 0x6000_1000, 0x6000_1050, "", true},
		{"spread", 0x6000_1000, 0x6000_1100, "flash group: its 2 functions are spread over 272 bytes from 0x60001000, more than the 128 they must lie within; linked together they take 40 (was the image built with the plan's FLASH_TEXT relocations?)", false},
		{"one in ITCM", 0x6000_1000, 0x100, "flash group: g2", false},
	} {
		img := &Image{ITCMSize: 0x1000, Funcs: []place.Func{fn("g1", tc.g1), fn("g2", tc.g2)}}
		rep, err := Verify(plan, img)
		if err != nil {
			t.Fatal(err)
		}
		var vs []string
		for _, v := range rep.Violations {
			vs = append(vs, v.String())
		}
		if tc.violation == "" && len(vs) > 0 || tc.violation != "" && (len(vs) != 1 || !strings.Contains(vs[0], tc.violation)) {
			t.Errorf("%s: violations %q, want %q", tc.what, vs, tc.violation)
		}
		among := len(rep.Notes) == 1 && strings.Contains(rep.Notes[0], "other code lies among them")
		if among != tc.noteAmong {
			t.Errorf("%s: notes %q", tc.what, rep.Notes)
		}
	}
	img := &Image{ITCMSize: 0x1000, Funcs: []place.Func{fn("g1", 0x6000_1000)}}
	if rep, _ := Verify(plan, img); len(rep.Violations) != 1 || rep.Violations[0].Kind != ViolationMissing {
		t.Errorf("g2 gone: violations %v, want it missing", rep.Violations)
	}
}
