// SPDX-License-Identifier: Apache-2.0

package unwind

import (
	"reflect"
	"testing"
)

// Completion on stacks whose frames are known: what it takes from other
// samples, and what it refuses. (Against gdb on the demo firmware:
// firmware-sampler/qemu/unwind_gdb_test.go.)
func TestCompleteStacks(t *testing.T) {
	fr := func(pc, sp uint32) Frame { return Frame{PC: pc, SP: sp} }
	root := []Frame{fr(0x300, 0x1F00), fr(0x400, 0x1FF0)} // the thread's outer frames
	mid := fr(0x200, 0x1E00)
	deep := []Frame{fr(0x100, 0x1000), fr(0x110, 0x1100), mid} // cut at mid
	stacks := []Stack{
		{Thread: 1, Frames: deep, Stop: StopDepth},
		// A shallower sample in mid reaches the root.
		{Thread: 1, Frames: append([]Frame{fr(0x204, 0x1DF0), mid}, root...), Stop: StopOutermost},
		// Another thread's frame at the same PC and SP gives nothing.
		{Thread: 2, Frames: []Frame{fr(0x120, 0x1100), mid, fr(0x999, 0x1F00)}, Stop: StopOutermost},
		// Chained: mid's sample gives only up to 0x300, whose own sample
		// reaches the root.
		{Thread: 3, Frames: deep, Stop: StopDepth},
		{Thread: 3, Frames: []Frame{mid, root[0]}, Stop: StopDepth},
		{Thread: 3, Frames: []Frame{fr(0x304, 0x1E80), root[0], root[1]}, Stop: StopOutermost},
		// Two samples disagree on what lies above mid beyond its first
		// caller: completed up to there, still truncated.
		{Thread: 4, Frames: deep, Stop: StopDepth},
		{Thread: 4, Frames: []Frame{mid, root[0], root[1]}, Stop: StopOutermost},
		{Thread: 4, Frames: []Frame{mid, root[0], fr(0x500, 0x1FF0)}, Stop: StopOutermost},
		// Cut by code without CFI, not by depth: left alone.
		{Thread: 1, Frames: deep, Stop: StopNoCFI},
	}
	CompleteStacks(stacks)
	full := append(append([]Frame(nil), deep...), root...)
	for _, c := range []struct {
		i         int
		frames    []Frame
		stop      Stop
		completed int
	}{
		{0, full, StopOutermost, 2},
		{1, append([]Frame{fr(0x204, 0x1DF0), mid}, root...), StopOutermost, 0},
		{2, []Frame{fr(0x120, 0x1100), mid, fr(0x999, 0x1F00)}, StopOutermost, 0},
		{3, full, StopOutermost, 2},
		{4, []Frame{mid, root[0], root[1]}, StopOutermost, 1},
		{6, append(append([]Frame(nil), deep...), root[0]), StopDepth, 1},
		{9, deep, StopNoCFI, 0},
	} {
		s := stacks[c.i]
		if !reflect.DeepEqual(s.Frames, c.frames) || s.Stop != c.stop || s.Completed != c.completed {
			t.Errorf("stack %d: %v, %v, %d completed; want %v, %v, %d", c.i, s.Frames, s.Stop, s.Completed, c.frames, c.stop, c.completed)
		}
	}
	if !reflect.DeepEqual(deep, []Frame{fr(0x100, 0x1000), fr(0x110, 0x1100), mid}) {
		t.Errorf("completion changed the frames it was given: %v", deep)
	}
}
