// SPDX-License-Identifier: Apache-2.0

package unwind

import (
	"reflect"
	"testing"

	"github.com/tcmprof/tcmprof/elf/image"
)

// Completion on stacks whose frames are known: what it takes from other
// samples, and what it refuses. Functions are 0x100 bytes long here, so
// that a PC names its function by its upper bits. (On real unwinds:
// TestCompleteStacksFromAnotherPCOfTheActivation; against gdb on the demo
// firmware: firmware-sampler/qemu/unwind_gdb_test.go.)
func TestCompleteStacks(t *testing.T) {
	u := &Unwinder{functionAt: func(pc uint32) *image.Function { return &image.Function{Addr: pc &^ 0xFF, Size: 0x100} }}
	fr := func(pc, sp uint32) Frame { return Frame{PC: pc, SP: sp} }
	root := []Frame{fr(0x300, 0x1F00), fr(0x400, 0x1FF0)} // the thread's outer frames
	mid := fr(0x200, 0x1E00)                              // its CFA is root[0]'s SP
	deep := []Frame{fr(0x100, 0x1000), fr(0x110, 0x1100), mid}
	cut := func(thread uint32) Stack { // a stack truncated in mid
		return Stack{Thread: thread, Frames: deep, Stop: StopDepth, outerCFA: root[0].SP}
	}
	stacks := []Stack{
		0: cut(1),
		// A shallower sample of thread 1, stopped in mid's function at
		// another PC than its call, in the same activation (same CFA),
		// reaches the root.
		1: {Thread: 1, Frames: append([]Frame{fr(0x2F0, 0x1E00)}, root...), Stop: StopOutermost},
		// Another thread's frames at the same PC and SP give nothing.
		2: {Thread: 2, Frames: []Frame{fr(0x120, 0x1100), mid, fr(0x999, 0x1F00)}, Stop: StopOutermost},
		// Chained: mid's sample gives only up to 0x300, whose own sample
		// reaches the root.
		3: cut(3),
		4: {Thread: 3, Frames: []Frame{mid, root[0]}, Stop: StopDepth, outerCFA: root[1].SP},
		5: {Thread: 3, Frames: []Frame{fr(0x304, 0x1E80), root[0], root[1]}, Stop: StopOutermost},
		// Two samples disagree on what lies above mid beyond its first
		// caller: completed up to there, still truncated.
		6: cut(4),
		7: {Thread: 4, Frames: []Frame{mid, root[0], root[1]}, Stop: StopOutermost},
		8: {Thread: 4, Frames: []Frame{mid, root[0], fr(0x500, 0x1FF0)}, Stop: StopOutermost},
		// Cut by code without CFI, not by depth: left alone.
		9: {Thread: 1, Frames: deep, Stop: StopNoCFI},
		// mid's function at another CFA is another activation: nothing.
		10: cut(5),
		11: {Thread: 5, Frames: append([]Frame{fr(0x2F0, 0x1E40), fr(0x3F0, 0x1F40)}, root[1:]...), Stop: StopOutermost},
		// Cut where the unwind never computed the last frame's CFA:
		// nothing names its activation.
		12: {Thread: 1, Frames: deep, Stop: StopDepth},
		// Thread 6 called mid's function from 0x300 at first, then from
		// 0x310 at the same depth: its samples disagree, and a truncated
		// one takes what the nearest donors before and after it agree on.
		13: cut(6), // no donor before it
		14: {Thread: 6, Frames: append([]Frame{fr(0x2F0, 0x1E00)}, root...), Stop: StopOutermost},
		15: cut(6), // between two calls from 0x300
		16: {Thread: 6, Frames: append([]Frame{fr(0x2F4, 0x1E00)}, root...), Stop: StopOutermost},
		17: cut(6), // between the last from 0x300 and the first from 0x310
		18: {Thread: 6, Frames: []Frame{fr(0x2F0, 0x1E00), fr(0x310, 0x1F00), root[1]}, Stop: StopOutermost},
		19: cut(6), // between two calls from 0x310
		20: {Thread: 6, Frames: []Frame{fr(0x2F8, 0x1E00), fr(0x310, 0x1F00), root[1]}, Stop: StopOutermost},
	}
	u.CompleteStacks(stacks)
	full := append(append([]Frame(nil), deep...), root...)
	for _, c := range []struct {
		i         int
		frames    []Frame
		stop      Stop
		completed int
	}{
		{0, full, StopOutermost, 2},
		{1, append([]Frame{fr(0x2F0, 0x1E00)}, root...), StopOutermost, 0},
		{2, []Frame{fr(0x120, 0x1100), mid, fr(0x999, 0x1F00)}, StopOutermost, 0},
		{3, full, StopOutermost, 2},
		{4, []Frame{mid, root[0], root[1]}, StopOutermost, 1},
		{6, append(append([]Frame(nil), deep...), root[0]), StopDepth, 1},
		{9, deep, StopNoCFI, 0},
		{10, deep, StopDepth, 0},
		{12, deep, StopDepth, 0},
		{13, deep, StopDepth, 0},
		{15, full, StopOutermost, 2},
		{17, deep, StopDepth, 0},
		{19, append(append([]Frame(nil), deep...), fr(0x310, 0x1F00), root[1]), StopOutermost, 2},
	} {
		s := stacks[c.i]
		if !reflect.DeepEqual(s.Frames, c.frames) || s.Stop != c.stop || s.Completed != c.completed {
			t.Errorf("stack %d: %v, %v, %d completed; want %v, %v, %d", c.i, s.Frames, s.Stop, s.Completed, c.frames, c.stop, c.completed)
		}
	}
	// The partly completed stack names its new last frame's activation:
	// root[0] at the CFA root[1]'s SP is.
	if s := stacks[6]; s.outerCFA != root[1].SP {
		t.Errorf("stack 6 ends at CFA %#x, want %#x", s.outerCFA, root[1].SP)
	}
	if !reflect.DeepEqual(deep, []Frame{fr(0x100, 0x1000), fr(0x110, 0x1100), mid}) {
		t.Errorf("completion changed the frames it was given: %v", deep)
	}
}

// On the extras image's real CFI (alpha_sum ← itcm_hot ← main): a sample
// in alpha_sum whose words end below itcm_hot's return address is
// truncated in itcm_hot's activation; a sample taken in itcm_hot itself,
// after its call, with the same CFA, reaches main and completes it; the
// same sample of another thread, or with itcm_hot's frame elsewhere,
// does not.
func TestCompleteStacksFromAnotherPCOfTheActivation(t *testing.T) {
	c := newChain(t)
	at := func(addr uint32) int { return int((addr - c.sp) / 4) }
	deep := c.snapshot
	deep.Words = deep.Words[:at(c.hotRAAt)]
	// In itcm_hot after its call: SP is the CFA alpha_sum had.
	after := c.snapshot
	after.PC, after.SP, after.LR, after.Words = c.hotCall+4, c.cfaSum, 0, c.snapshot.Words[at(c.cfaSum):]
	moved := after
	moved.SP, moved.Words = after.SP+8, after.Words[2:] // the same frame 8 bytes higher
	stacks := []Stack{
		c.u.UnwindThread(deep, 1), c.u.UnwindThread(after, 1),
		c.u.UnwindThread(deep, 2), c.u.UnwindThread(moved, 2),
	}
	if s := stacks[0]; len(s.Frames) != 2 || s.Stop != StopDepth || s.outerCFA != c.cfaHot {
		t.Fatalf("the deep sample: %+v, %v, CFA %#x; want alpha_sum and itcm_hot, truncated, CFA %#x", s.Frames, s.Stop, s.outerCFA, c.cfaHot)
	}
	if s := stacks[1]; len(s.Frames) != 2 || s.Stop != StopOutermost || s.Frames[1].SP != c.cfaHot {
		t.Fatalf("the sample in itcm_hot: %+v, %v; want itcm_hot and main, complete", s.Frames, s.Stop)
	}
	c.u.CompleteStacks(stacks)
	want := []Frame{{PC: c.pc, SP: c.sp}, {PC: c.hotCall, SP: c.cfaSum}, {PC: c.mainCall, SP: c.cfaHot}}
	if s := stacks[0]; !reflect.DeepEqual(s.Frames, want) || s.Stop != StopOutermost || s.Completed != 1 {
		t.Errorf("completed: %+v, %v, %d completed; want %+v, complete, 1", s.Frames, s.Stop, s.Completed, want)
	}
	if s := stacks[2]; len(s.Frames) != 2 || s.Stop != StopDepth || s.Completed != 0 {
		t.Errorf("thread 2's deep sample, whose itcm_hot sample has another CFA: %+v, %v, %d completed", s.Frames, s.Stop, s.Completed)
	}
}

// UnwindThread reads one return address from the words below the thread's
// stack top, the one that ends the stack at the top, and counts its frame
// as completed; a chain that needs more of them, or does not end at the
// top, is cut back to the sample's own frames, still naming the last
// one's activation for CompleteStacks.
func TestUnwindThreadReadsOneStepFromTheStackTop(t *testing.T) {
	c := newChain(t)
	at := func(addr uint32) int { return int((addr - c.sp) / 4) }
	s := c.snapshot
	s.Words = c.snapshot.Words[:at(c.hotRAAt)]
	// main is the thread's entry: the top is its SP, and the words below
	// it hold itcm_hot's return address into main.
	s.Top, s.Root = c.cfaHot, c.snapshot.Words[at(c.hotRAAt):at(c.cfaHot)]
	got := c.u.UnwindThread(s, 1)
	want := []Frame{{PC: c.pc, SP: c.sp}, {PC: c.hotCall, SP: c.cfaSum}, {PC: c.mainCall, SP: c.cfaHot, Root: true}}
	if !reflect.DeepEqual(got.Frames, want) || got.Stop != StopOutermost || got.Completed != 1 {
		t.Errorf("to the top: %+v, %v, %d completed; want %+v, complete, 1", got.Frames, got.Stop, got.Completed, want)
	}
	// The top above main's frame: main's frame is not the last, and its
	// return address (0) read there proves nothing.
	s.Top, s.Root = c.top+8, append(append([]uint32(nil), c.snapshot.Words[at(c.hotRAAt):]...), 0xA5A5A5A5, 0xA5A5A5A5)
	got = c.u.UnwindThread(s, 1)
	if !reflect.DeepEqual(got.Frames, want[:2]) || got.Stop != StopDepth || got.Completed != 0 || got.outerCFA != c.cfaHot {
		t.Errorf("past the top's words: %+v, %v, %d completed, CFA %#x; want %+v, truncated, 0, CFA %#x",
			got.Frames, got.Stop, got.Completed, got.outerCFA, want[:2], c.cfaHot)
	}
}
