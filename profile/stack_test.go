// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/elf/unwind"
	"github.com/tcmprof/tcmprof/internal/armtest"
	"github.com/tcmprof/tcmprof/profile/profiletest"
	"github.com/tcmprof/tcmprof/sample"
)

// Records with stacks become stacks of the PC and its unwound callers; a
// stack the unwinder cannot start gets the validated LR as its caller, and
// the statistics say which was which.
func TestStacksFromSnapshots(t *testing.T) {
	fw := profiletest.Build(t)
	leaf := fw.Entry(t, "leaf_add")
	leafCall := fw.Find(t, "nonleaf", `^bl\s.*<leaf_add>`, 0)
	veneerCall := fw.Find(t, "main", `^bl\s.*<__fast_scale_veneer>`, 0)
	const n = 10
	c := fw.Capture(t, sample.FieldPC|sample.FieldLR|sample.FieldStack,
		// A leaf at its first instruction: its caller from LR, then the
		// caller's saved return address lies above the (empty) snapshot.
		profiletest.Group{N: n, PC: leaf, LR: fw.ReturnAddress(t, "nonleaf", leafCall), SP: 0x20001000},
		// A veneer has no CFI, nor needs any: its caller from LR.
		profiletest.Group{N: n, PC: fw.Entry(t, "__fast_scale_veneer"), LR: fw.ReturnAddress(t, "main", veneerCall), SP: 0x20001000},
		// An interrupt handler entered from a thread: complete at its entry.
		profiletest.Group{N: n, PC: leaf, LR: 0xFFFFFFFD, SP: 0x20001000, Stack: []uint32{1, 2}},
	)
	s, err := Symbolize(c, fw.Image, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := UnwindStats{Records: 3 * n, Complete: n, TruncatedDepth: 2 * n, Frames: 5 * n}
	if got := s.Unwind; got.String() != want.String() || len(got.ByStop) != 2 ||
		got.ByStop[unwind.StopDepth] != 2*n || got.ByStop[unwind.StopException] != n {
		t.Errorf("unwind stats %+v, want %+v", got, want)
	}
	callers := map[uint32][]uint32{}
	for _, st := range s.Stacks {
		var sites []uint32
		for _, c := range st.Callers {
			sites = append(sites, c.Addr)
		}
		callers[st.PC.Addr+uint32(len(sites))] = sites
	}
	if got := callers[leaf+1]; len(got) != 1 || got[0] != leafCall {
		t.Errorf("the leaf's callers %#x, want the call in nonleaf %#x", got, leafCall)
	}
	if got := callers[leaf]; len(got) != 0 {
		t.Errorf("the handler's callers %#x, want none", got)
	}
	if got := callers[fw.Entry(t, "__fast_scale_veneer")+1]; len(got) != 1 || got[0] != veneerCall {
		t.Errorf("the veneer's callers %#x, want the call in main %#x", got, veneerCall)
	}
	p, err := s.Profile()
	if err != nil {
		t.Fatal(err)
	}
	depth := map[int]int64{}
	for _, smp := range p.Sample {
		depth[len(smp.Location)] += smp.Value[0]
	}
	if depth[1] != n || depth[2] != 2*n {
		t.Errorf("pprof samples by stack depth %v, want %d of 1 and %d of 2", depth, n, 2*n)
	}
}

// Without CFI nothing unwinds: every stack fails at its first frame, and
// the LR rules give the caller where they accept LR.
func TestStacksFallBackToLRWithoutCFI(t *testing.T) {
	fw := profiletest.Build(t)
	stripped := filepath.Join(t.TempDir(), "nocfi.elf")
	armtest.MustRun(t, ".", "arm-none-eabi-objcopy", "--remove-section", ".debug_frame", fw.ELF, stripped)
	img, err := image.Open(stripped)
	if err != nil {
		t.Fatal(err)
	}
	leafCall := fw.Find(t, "nonleaf", `^bl\s.*<leaf_add>`, 0)
	c := fw.Capture(t, sample.FieldPC|sample.FieldLR|sample.FieldStack,
		profiletest.Group{N: 3, PC: fw.Entry(t, "leaf_add"), LR: fw.ReturnAddress(t, "nonleaf", leafCall), SP: 0x20001000},
		profiletest.Group{N: 2, PC: fw.Entry(t, "leaf_add"), LR: fw.Entry(t, "main") | 1, SP: 0x20001000})
	s, err := Symbolize(c, img, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if u := s.Unwind; u.Records != 5 || u.Failed != 5 || u.FallbackLR != 3 {
		t.Errorf("unwind stats %+v: want 5 failed, 3 with the LR caller", u)
	}
	for _, st := range s.Stacks {
		if want := st.Count == 3; (len(st.Callers) == 1 && st.Callers[0].Addr == leafCall) != want {
			t.Errorf("%d records with callers %v", st.Count, st.Callers)
		}
	}
	found := false
	for _, w := range s.Warnings {
		found = found || strings.Contains(w, "cannot be unwound")
	}
	if !found {
		t.Errorf("no warning that the stacks cannot be unwound: %q", s.Warnings)
	}
}
