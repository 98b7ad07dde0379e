// SPDX-License-Identifier: Apache-2.0

package unwind

import "sort"

// Completion of stacks that the snapshot's depth cut short, from other
// samples of the same thread.
//
// A frame's callers do not change while the frame is live: a function
// activation, named by its function and its CFA (the SP its caller had at
// the call), was called by the same chain of callers whichever sample
// sees it, and wherever in the function that sample stopped. A sample
// taken deeper in the call tree copies K words from a lower SP and loses
// the outer frames; a sample taken while the thread was shallower, in
// the same activation or in another of its callees, reaches them. So a
// truncated stack whose outermost activation appears in other samples of
// its thread takes the callers those samples unwound above it.
//
// On the QEMU demo this is what completes the sampler's own encoder in the
// console thread: send_data and tcmp_data_add keep frames of 22 and 24
// words, so a sample in the encoder's callees ends in send_data, whose
// return address lies beyond its 32 words; the samples taken in
// send_data's own code reach it, but at other PCs than the call, which a
// match on the exact PC never used.
//
// The same function at the same CFA can still be two activations: a
// function called from two places at the same stack depth. The samples
// then disagree on the callers above that frame. A truncated sample then
// takes what the nearest samples before and after it (in the capture's
// order) agree on: a thread that calls the function from one place for a
// while and then from another (the demo's usb_host thread calls run_burst
// from its calibration first, then from its loop) is seen from the right
// place, except between the last sample of one and the first of the
// other, or where it switched callers and back between two samples. Where
// those disagree too, the stack is completed only as far as they agree. A
// different caller that no sample reached stays a risk, which the gdb
// oracle (firmware-sampler/qemu/unwind_gdb_test.go) measures.

// Stack is one sample's unwind as completion reads and extends it.
type Stack struct {
	// Thread names the stack the frames live on: the sample's thread id
	// (0 when unknown, which makes all samples one thread). Frames of two
	// threads never complete each other.
	Thread uint32
	// Frames and Stop are Unwind's result; CompleteStacks appends the
	// completed frames and updates Stop.
	Frames []Frame
	Stop   Stop
	// Completed is how many of the outermost Frames came from other
	// samples (0: the stack is the sample's own unwind).
	Completed int
	// outerCFA is the CFA of the last frame, when the unwind computed it
	// (0 otherwise): with the frame's function, what completion matches.
	outerCFA uint32
}

// cfa is the CFA of frame i of s.
func (s *Stack) cfa(i int) uint32 {
	if i+1 < len(s.Frames) {
		return s.Frames[i+1].SP
	}
	return s.outerCFA
}

// UnwindThread unwinds a sample s of thread (Unwind) for completion: its
// Completed counts the outermost frames whose return addresses came from
// s.Root, the words below the thread's stack top read at another moment
// than the sample, which are no more the sample's own than the frames
// CompleteStacks borrows from other samples.
//
// The words are trusted for one step only: the return of the thread's
// entry function, to the outermost frame at the top. They were read at
// another moment: the entry function's frame and the kernel's entry code
// above it do not change while the thread lives, but below them the words
// hold whatever the thread was calling then. On the QEMU demo host_main's
// frame is small, and the return address of the run_burst it calls, from
// one of two call sites, lies within the 32 words: read there it named the
// wrong call site in 2-4 % of the gdb oracle's stops. So an unwind that
// reads more than the last return address from the words, or does not end
// at the top through it, is cut back to the sample's own frames, truncated
// by depth as it was without the words.
func (u *Unwinder) UnwindThread(s Snapshot, thread uint32) Stack {
	frames, stop, cfa := u.walk(s)
	n := 0
	for n+1 < len(frames) && frames[len(frames)-1-n].Root {
		n++
	}
	if n > 1 || n == 1 && (stop != StopOutermost || frames[len(frames)-1].SP != s.Top) {
		// The first frame cut is the new last frame's caller: its SP is
		// that frame's CFA.
		frames, stop, n, cfa = frames[:len(frames)-n], StopDepth, 0, frames[len(frames)-n].SP
	}
	return Stack{Thread: thread, Frames: frames, Stop: stop, Completed: n, outerCFA: cfa}
}

// activation is a frame as completion matches it: its thread, its
// function (the PC itself where no function holds it) and its CFA. A
// tail-call frame and the frame it branched to share the CFA but not the
// function; a frame an exception interrupted is its function's activation
// like any other.
type activation struct {
	thread, function, cfa uint32
}

func (u *Unwinder) activationOf(s *Stack, i int) activation {
	function := s.Frames[i].PC
	if f := u.functionAt(function); f != nil {
		function = f.Addr
	}
	return activation{s.Thread, function, s.cfa(i)}
}

// suffix is what the samples holding an activation agree lies above it,
// and the CFA of its last frame.
type suffix struct {
	frames   []Frame
	stop     Stop
	outerCFA uint32
}

// CompleteStacks extends every stack in stacks that ended at StopDepth
// with the frames the other stacks of its thread unwound above its
// outermost activation, as far as those stacks agree (or else the
// nearest before and after it in stacks, which is in the order the
// samples were taken), repeating from the new outermost frame while the
// stack stays truncated by depth. It changes Frames, Stop and Completed of
// the stacks it extends; the others, and the frames each stack unwound
// itself, stay as they are.
func (u *Unwinder) CompleteStacks(stacks []Stack) {
	// Every stack's own frames, before any is extended: a donor gives
	// what it unwound, never what it was given.
	own := make([]suffix, len(stacks))
	for i := range stacks {
		own[i] = suffix{stacks[i].Frames, stacks[i].Stop, stacks[i].outerCFA}
	}
	// The stacks that unwound above each activation, in the stacks'
	// order, and the activation's position in each.
	type donor struct{ stack, pos int32 }
	donors := map[activation][]donor{}
	for i := range stacks {
		s := &stacks[i]
		for p := 0; p+1 < len(s.Frames); p++ {
			k := u.activationOf(s, p)
			donors[k] = append(donors[k], donor{int32(i), int32(p)})
		}
	}
	aboveIn := func(d donor) suffix {
		o := own[d.stack]
		return suffix{o.frames[d.pos+1:], o.stop, o.outerCFA}
	}
	agreed := map[activation]suffix{}
	above := func(k activation) suffix {
		if s, ok := agreed[k]; ok {
			return s
		}
		var cands []suffix
		for _, d := range donors[k] {
			cands = append(cands, aboveIn(d))
		}
		s := agree(cands)
		agreed[k] = s
		return s
	}
	// bracketed is what the nearest donors before and after stack i
	// agree lies above k: where the donors of a capture disagree (the
	// function was called from two places at the same depth, one after
	// the other), those around the sample saw its activation's callers,
	// unless the thread changed callers and back between them.
	bracketed := func(k activation, i int) suffix {
		d := donors[k]
		next := sort.Search(len(d), func(j int) bool { return int(d[j].stack) > i })
		if next == 0 || next == len(d) {
			return suffix{}
		}
		return agree([]suffix{aboveIn(d[next-1]), aboveIn(d[next])})
	}
	for i := range stacks {
		s := &stacks[i]
		for s.Stop == StopDepth && s.outerCFA != 0 && len(s.Frames) < MaxFrames {
			k := u.activationOf(s, len(s.Frames)-1)
			add := above(k)
			if add.stop == StopDepth {
				if b := bracketed(k, i); len(b.frames) > len(add.frames) {
					add = b
				}
			}
			if len(add.frames) == 0 {
				break
			}
			if n := MaxFrames - len(s.Frames); len(add.frames) > n {
				add = suffix{add.frames[:n], StopMaxFrames, 0}
			}
			s.Frames = append(s.Frames[:len(s.Frames):len(s.Frames)], add.frames...)
			s.Completed += len(add.frames)
			s.Stop, s.outerCFA = add.stop, add.outerCFA
		}
	}
}

// agree is what the candidate suffixes (the frames above one activation
// in several samples) have in common: the longest, when every other is a
// prefix of it (with a stop that says complete if one of the longest
// does); else the frames before the first position where two differ, as a
// stack still truncated by depth.
func agree(cands []suffix) suffix {
	if len(cands) == 0 {
		return suffix{}
	}
	long := cands[0]
	for _, c := range cands[1:] {
		if len(c.frames) > len(long.frames) || len(c.frames) == len(long.frames) && c.stop.Complete() {
			long = c
		}
	}
	// A candidate that differs from the longest at i agrees with it before
	// i, so the first such i over all of them is where two first differ.
	cut := len(long.frames)
	for _, c := range cands {
		for i := 0; i < min(len(c.frames), cut); i++ {
			if !sameFrame(c.frames[i], long.frames[i]) {
				cut = i
				break
			}
		}
	}
	if cut < len(long.frames) {
		// The last frame kept is the caller of the first that differs:
		// that frame's SP is its CFA.
		return suffix{long.frames[:cut:cut], StopDepth, long.frames[cut].SP}
	}
	return long
}

// sameFrame compares two frames as stacks: where their return addresses
// were read does not matter.
func sameFrame(a, b Frame) bool {
	a.Root, b.Root = false, false
	return a == b
}
