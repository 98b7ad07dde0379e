// SPDX-License-Identifier: Apache-2.0

package thumb

import (
	"debug/elf"
	"reflect"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/internal/armtest"
)

// funcRanges is the oracle-side function list: every STT_FUNC symbol.
func funcRanges(t testing.TB, f *elf.File) (ranges []FuncRange, addrOf map[string]uint32) {
	t.Helper()
	syms, addrOf := armtest.FuncSymbols(t, f)
	ranges = make([]FuncRange, len(syms))
	for i, s := range syms {
		ranges[i] = FuncRange(s)
	}
	return ranges, addrOf
}

// TestCallEdgesAgainstObjdump builds the call graph of images whose flash
// and ITCM code call each other through GNU ld veneers (ldr.w pc form, and
// movw/movt form with -mpure-code) and checks it edge by edge against
// objdump: same sites, same targets, ViaVeneer exactly when objdump names
// the target __X_veneer, and the veneer resolved to X's address.
func TestCallEdgesAgainstObjdump(t *testing.T) {
	e := armtest.BuildExtras(t)
	for _, path := range []string{e.ELF, e.Pure, e.BLX} {
		f, _ := openCode(t, path)
		funcs, addrOf := funcRanges(t, f)
		edges, err := CallEdges(f, funcs)
		if err != nil {
			t.Fatal(err)
		}
		got := map[uint32]CallEdge{}
		for _, ed := range edges {
			got[ed.Site] = ed
		}
		var want, veneers int
		for _, in := range armtest.Objdump(t, path) {
			if !in.HasTarget {
				continue
			}
			caller, inFunc := addrOf[in.Func]
			if !inFunc {
				continue
			}
			want++
			ed, ok := got[in.Addr]
			if !ok {
				t.Errorf("%s: no edge for %s %s at %#x in %s", path, in.Mnemonic, in.Operands, in.Addr, in.Func)
				continue
			}
			delete(got, in.Addr)
			if ed.Caller != caller || ed.Target != in.Target {
				t.Errorf("%s: edge %+v; objdump: %s calls %#x at %#x", path, ed, in.Func, in.Target, in.Addr)
			}
			callee := in.Target
			if name, ok := strings.CutSuffix(in.TargetSym, "_veneer"); ok && strings.HasPrefix(name, "__") {
				veneers++
				callee = addrOf[strings.TrimPrefix(name, "__")]
			}
			if ed.ViaVeneer != (callee != in.Target) || ed.Callee != callee {
				t.Errorf("%s: edge at %#x to %s: ViaVeneer=%v Callee=%#x, want callee %#x", path, in.Addr, in.TargetSym, ed.ViaVeneer, ed.Callee, callee)
			}
		}
		for _, ed := range got {
			t.Errorf("%s: edge %+v that objdump does not show", path, ed)
		}
		t.Logf("%s: %d edges, %d through veneers", path, want, veneers)
		if want == 0 || (path != e.BLX && veneers < 4) {
			t.Errorf("%s: fixture lost its calls or veneers (%d edges, %d veneers)", path, want, veneers)
		}
	}
}

func TestCallEdgesRejectsNonARM(t *testing.T) {
	f, err := elf.Open("/proc/self/exe")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	_, err = CallEdges(f, nil)
	if fe, ok := err.(*FormatError); !ok || fe.Section != "" || !strings.Contains(err.Error(), "not a 32-bit ARM ELF") {
		t.Errorf("CallEdges on a host executable: %v, want a FormatError about the file", err)
	}
}

// TestExtrasThroughImage runs the same checks through the symbolizer's
// Image, as the rest of tcmprof will: its functions drive CallEdges, its
// Bytes drive CallSite, and its veneer flag drives Classify.
func TestExtrasThroughImage(t *testing.T) {
	e := armtest.BuildExtras(t)
	im, err := image.Open(e.ELF)
	if err != nil {
		t.Fatal(err)
	}
	viaImage, err := CallEdges(im.File(), FuncRanges(im.Functions()))
	if err != nil {
		t.Fatal(err)
	}
	symRanges, _ := funcRanges(t, im.File())
	viaSymtab, err := CallEdges(im.File(), symRanges)
	if err != nil {
		t.Fatal(err)
	}
	if len(viaImage) == 0 || !reflect.DeepEqual(viaImage, viaSymtab) {
		t.Errorf("edges from Image functions %v\ndiffer from symbol-table edges %v", viaImage, viaSymtab)
	}
	for _, ed := range viaImage {
		if site, ok := CallSite(im.Bytes, ed.Site+4+1); !ok || site != ed.Site {
			t.Errorf("CallSite over Image.Bytes after the call at %#x = %#x, %v", ed.Site, site, ok)
		}
		if f := im.FunctionAt(ed.Target); (f != nil && f.Veneer) != ed.ViaVeneer {
			t.Errorf("call at %#x to %#x: the image's function there is %+v, ViaVeneer %v", ed.Site, ed.Target, f, ed.ViaVeneer)
		}
	}
}
