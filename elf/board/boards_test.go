// SPDX-License-Identifier: Apache-2.0

package board

import (
	"debug/elf"
	"reflect"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/internal/armtest"
)

func TestBuiltinBoards(t *testing.T) {
	for _, name := range Names() {
		b, err := ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if b.ICache.Sets() != 512 {
			t.Errorf("%s: I-cache %+v has %d sets, want 32 KB / (2 ways * 32 B) = 512", name, b.ICache, b.ICache.Sets())
		}
	}
	b, _ := ByName("teensy41")
	want := []Region{
		{"ITCM", KindITCM, 0x00000000, 0x20000},
		{"DTCM", KindDTCM, 0x20000000, 0x20000},
		{"OCRAM2", KindOCRAM, 0x20200000, 0x80000},
		{"OCRAM", KindOCRAM, 0x20280000, 0x40000},
		{"FLASH", KindFlash, 0x60000000, 0x800000},
	}
	if !reflect.DeepEqual(b.Regions, want) {
		t.Errorf("teensy41 regions %v", b.Regions)
	}
	for _, fn := range []string{"z_arm_reset", "z_prep_c", "memcpy", "arch_early_memset", "data_copy_xip_relocation", "memset.part.0"} {
		if !b.IsBootCritical(fn) {
			t.Errorf("teensy41: %s not boot-critical", fn)
		}
	}
	if b.IsBootCritical("main") || b.IsBootCritical("memcpy_s") {
		t.Error("teensy41: main or memcpy_s taken as boot-critical")
	}
	for _, fn := range []string{"arch_data_copy", "z_data_copy", "arch_data_copy.constprop.0"} {
		if !b.IsBootCopy(fn) {
			t.Errorf("teensy41: %s not a boot copy routine", fn)
		}
	}
	if b.IsBootCopy("z_prep_c") || b.IsBootCopy("memcpy") {
		t.Error("teensy41: z_prep_c or memcpy taken as the boot copy")
	}
	b.Regions[0].Size = 1 // a caller's change must not leak into the next ByName
	if again, _ := ByName("teensy41"); again.Regions[0].Size != 0x20000 {
		t.Error("ByName returned shared state")
	}
	q, _ := ByName("qemu-demo")
	want = append(want, Region{"TESTBENCH", KindTestbench, 0x60800000, 0x800000})
	if !reflect.DeepEqual(q.BootCritical, []string{"Reset_Handler", "boot_copy"}) || !reflect.DeepEqual(q.BootCopy, []string{"boot_copy"}) || !reflect.DeepEqual(q.Regions, want) {
		t.Errorf("qemu-demo: %+v", q)
	}
	if _, err := ByName("teensy40"); err == nil || !strings.Contains(err.Error(), "qemu-demo, teensy41") {
		t.Errorf("unknown board error: %v", err)
	}
}

func TestBoardValidateRejects(t *testing.T) {
	for _, tc := range []struct {
		name    string
		regions []Region
		want    string
	}{
		{"overlap", []Region{{"A", KindITCM, 0, 0x100}, {"B", KindDTCM, 0x80, 0x100}}, "overlap"},
		{"empty", []Region{{"A", KindITCM, 0, 0}}, "empty"},
		{"past 4 GB", []Region{{"A", KindRAM, 0xFFFFFF00, 0x200}}, "past 4 GB"},
		{"kind", []Region{{"A", KindVeneer, 0, 4}}, "kind"},
	} {
		b := &Board{Name: tc.name, Regions: tc.regions}
		err := b.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %v, want %q", tc.name, err, tc.want)
		}
		if ie, ok := err.(*InvalidError); !ok || ie.Board != tc.name {
			t.Errorf("%s: Validate = %#v, want an InvalidError naming the board", tc.name, err)
		}
	}
	top := Region{"TOP", KindRAM, 0xFFFFFF00, 0x100}
	if err := (&Board{Regions: []Region{top}}).Validate(); err != nil || !top.Contains(0xFFFFFFFF) || top.Contains(0xFFFFFEFF) {
		t.Errorf("region ending at 4 GB: %v", err)
	}
}

// TestClassifyRealImage classifies the sections and symbols of an image
// linked for the Teensy map: flash code, ITCM code, DTCM data, and the ld
// veneers in both flash and ITCM.
func TestClassifyRealImage(t *testing.T) {
	e := armtest.BuildExtras(t)
	f, err := elf.Open(e.ELF)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, _ := ByName("teensy41")
	wantSection := map[string]RegionKind{".text": KindFlash, ".itcm": KindITCM, ".data": KindDTCM, ".bss": KindDTCM, ".note.gnu.build-id": KindFlash}
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 {
			continue
		}
		r, ok := b.RegionOf(uint32(s.Addr))
		if want, listed := wantSection[s.Name]; !listed && s.Size == 0 {
			continue
		} else if !ok || r.Kind != want || !r.Contains(uint32(s.Addr+s.Size-1)) {
			t.Errorf("section %s %#x+%#x: region %v, want %s", s.Name, s.Addr, s.Size, r, want)
		}
	}
	funcs, addrOf := armtest.FuncSymbols(t, f)
	isVeneer := func(addr uint32) bool {
		for _, fn := range funcs {
			if strings.HasSuffix(fn.Name, "_veneer") && addr-fn.Addr < fn.Size {
				return true
			}
		}
		return false
	}
	for name, want := range map[string]RegionKind{
		"main": KindFlash, "itcm_hot": KindITCM, "itcm_leaf": KindITCM, "memcpy": KindFlash,
		"__itcm_hot_veneer": KindVeneer, "__alpha_mix_veneer": KindVeneer,
	} {
		addr, ok := addrOf[name]
		if !ok {
			t.Fatalf("fixture lost %s", name)
		}
		if got, ok := b.Classify(addr+2, isVeneer); !ok || got != want {
			t.Errorf("Classify(%s+2 = %#x) = %s, %v; want %s", name, addr+2, got, ok, want)
		}
	}
	if kind, ok := b.Classify(0x40000000, nil); ok {
		t.Errorf("peripheral address classified as %s", kind)
	}
}

// A board's boot list names functions; a clone of one counts as it, a
// name that merely has a dot does not.
func TestBootListsUseTheCloneRule(t *testing.T) {
	b := &Board{BootCritical: []string{"ResetISR"}, BootCopy: []string{"memcpy"}}
	for name, want := range map[string]bool{"ResetISR": true, "ResetISR.part.0": true, "ResetISR.isra.0.cold": true, "ResetISR.x": false, "ResetISRx": false} {
		if got := b.IsBootCritical(name); got != want {
			t.Errorf("IsBootCritical(%q) = %v", name, got)
		}
	}
	if !b.IsBootCopy("memcpy.constprop.1") || b.IsBootCopy("memcpy.local") {
		t.Error("IsBootCopy does not follow SplitClone")
	}
}
