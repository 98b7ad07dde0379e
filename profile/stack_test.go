// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"fmt"
	"path/filepath"
	"reflect"
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

// The completed_frames label on constructed records of the checked-in
// firmware (_start → main → nonleaf → leaf_add), K = 8 words: in thread 1,
// leaf_add runs as a handler that interrupted nonleaf (EXC_RETURN to
// handler mode, MSP), so its 8 words hold only the exception frame and
// stop below nonleaf's saved return address; another record of thread 1,
// stopped in nonleaf at the next instruction with the same frame, copied
// up to the stack's top through main and _start. The first takes main and
// _start from it: 2 completed frames, labelled; the same records in
// thread 2, which has no such sample, stay truncated and unlabelled, like
// the donor, which unwound all of its own frames.
func TestCompletedFramesLabel(t *testing.T) {
	fw := profiletest.CheckedIn(t)
	leafCall := fw.Find(t, "nonleaf", `^bl\s.*<leaf_add>`, 0)
	interrupted := fw.Next(t, "nonleaf", leafCall)
	mainCall := fw.Find(t, "main", `^bl\s.*<nonleaf>`, 0)
	startCall := fw.Find(t, "_start", `^bl\s.*<main>`, 0)
	// The frames the CFI describes, which the layout of the words
	// below follows.
	fw.Find(t, "nonleaf", `^push\s+\{r3, lr\}`, 0)
	fw.Find(t, "main", `^push\s+\{r4, r5, r6, lr\}`, 0)
	fw.Find(t, "_start", `^push\s+\{r3, lr\}`, 0)

	const nonleafSP, fill = 0x20001000, 0xA5A5A5A5
	handler := profiletest.Group{N: 3, PC: fw.Entry(t, "leaf_add"), LR: 0xFFFFFFF1, Thread: 1, SP: nonleafSP - 32,
		Stack: []uint32{0, 1, 2, 3, 12, fw.ReturnAddress(t, "nonleaf", leafCall), interrupted, 0x01000000}}
	donor := profiletest.Group{N: 2, PC: fw.Next(t, "nonleaf", interrupted), LR: fw.ReturnAddress(t, "nonleaf", leafCall), Thread: 1, SP: nonleafSP,
		// nonleaf's r3 and return address, main's r4-r6 and return
		// address: fewer than K words, the copy reached the top.
		Stack: []uint32{fill, fw.ReturnAddress(t, "main", mainCall), fill, fill, fill, fw.ReturnAddress(t, "_start", startCall)}}
	other := handler
	other.Thread = 2
	c := fw.Capture(t, sample.FieldPC|sample.FieldLR|sample.FieldThread|sample.FieldStack, handler, donor, other)
	c.Header.StackWords = 8
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := Symbolize(c, fw.Image, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if u := s.Unwind; u.Complete != 5 || u.Completed != 3 || u.CompletedFrames != 6 || u.TruncatedDepth != 3 {
		t.Errorf("unwind stats %+v: want 5 complete, 3 of them by 6 completed frames, 3 truncated", u)
	}
	p, err := s.Profile()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "completed.pb.gz")
	if err := WriteFile(path, p); err != nil {
		t.Fatal(err)
	}
	p, err = ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		count     int64
		completed []int64
	}
	wants := map[string]want{
		fmt.Sprintf("%#x %#x %#x %#x", handler.PC, interrupted, mainCall, startCall): {3, []int64{2}},
		fmt.Sprintf("%#x %#x %#x", donor.PC, mainCall, startCall):                    {2, nil},
		fmt.Sprintf("%#x %#x", handler.PC, interrupted):                              {3, nil},
	}
	for _, smp := range p.Sample {
		var addrs []string
		for _, l := range smp.Location {
			addrs = append(addrs, fmt.Sprintf("%#x", l.Address))
		}
		key := strings.Join(addrs, " ")
		w, ok := wants[key]
		if !ok {
			t.Errorf("unexpected stack %s (%d samples, labels %v)", key, smp.Value[0], smp.NumLabel)
			continue
		}
		delete(wants, key)
		got := smp.NumLabel[LabelCompleted]
		if smp.Value[0] != w.count || !reflect.DeepEqual(got, w.completed) {
			t.Errorf("stack %s: %d samples, %s %v; want %d, %v", key, smp.Value[0], LabelCompleted, got, w.count, w.completed)
		}
		if len(got) > 0 && !reflect.DeepEqual(smp.NumUnit[LabelCompleted], []string{"frames"}) {
			t.Errorf("stack %s: %s in %v, want frames", key, LabelCompleted, smp.NumUnit[LabelCompleted])
		}
	}
	if len(wants) > 0 {
		t.Errorf("stacks missing from the profile: %v", wants)
	}
}
