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
