// SPDX-License-Identifier: Apache-2.0

// Package unwind walks the call stacks of Cortex-M samples: from the
// interrupted PC, SP and LR and a copy of the stack above SP, through the
// image's call-frame information (.debug_frame), checking every return
// address against the code (a call must precede it), putting back the
// frames tail calls left out, and completing stacks the copy's depth cut
// short from other samples of the same thread (complete.go). CFI also
// tells whether LR still holds the return address at a PC, for samples
// that record LR without a stack.
package unwind

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/go-delve/delve/pkg/dwarf/frame"
	"github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/elf/thumb"
)

// Snapshot is what a sample knows of the interrupted context: its PC,
// SP and LR, and a copy of the stack memory above SP.
type Snapshot struct {
	PC, SP, LR uint32
	// Words[i] is the word at SP + 4i.
	Words []uint32
	// AtTop says the words end at the top of the stack (the copy stopped
	// there, not at its limit): nothing lies above them.
	AtTop bool
	// Root, when not empty, are the words just below Top, the top of the
	// thread's stack, read at another moment than the sample: the frames
	// that live as long as the thread (its entry function's saved
	// registers, the kernel's entry trampoline) do not change, so they
	// continue an unwind that Words cannot carry past a large frame.
	// Where Words and Root overlap, Words is read.
	Root []uint32
	Top  uint32
}

// end is the address just past the snapshot's words.
func (s *Snapshot) end() uint64 { return uint64(s.SP) + 4*uint64(len(s.Words)) }

// rootStart is the address of Root's first word.
func (s *Snapshot) rootStart() uint64 { return uint64(s.Top) - 4*uint64(len(s.Root)) }

// word is the snapshot's word at addr, when it holds that address, and
// whether it came from Root.
func (s *Snapshot) word(addr uint64) (uint32, bool) {
	v, ok, _ := s.wordFrom(addr)
	return v, ok
}

func (s *Snapshot) wordFrom(addr uint64) (v uint32, ok, root bool) {
	if addr%4 != 0 {
		return 0, false, false
	}
	if addr >= uint64(s.SP) && addr+4 <= s.end() {
		return s.Words[(addr-uint64(s.SP))/4], true, false
	}
	if len(s.Root) > 0 && addr >= s.rootStart() && addr+4 <= uint64(s.Top) {
		return s.Root[(addr-s.rootStart())/4], true, true
	}
	return 0, false, false
}

// Frame is one frame of an unwound stack.
type Frame struct {
	// PC is the sampled PC in the first frame and in a frame an exception
	// interrupted; in the frames of callers it is the call instruction
	// (BL/BLX) the return address follows, so that it symbolizes to the
	// calling line; in a tail-call frame it is the tail call (B.W).
	PC uint32
	// SP is the stack pointer in this frame: for a caller, the callee's CFA.
	SP uint32
	// Interrupted says an exception entered above this frame: PC is the
	// interrupted instruction, not a call.
	Interrupted bool
	// Root says the frame's return address was read from the snapshot's
	// Root words (another moment's), not from the sample's own.
	Root bool
	// TailCall says the stack holds no frame of this function: it ended by
	// branching to the function below it (a tail call), whose return goes
	// to this function's caller. The unwinder puts it back when the call
	// its caller made and the tail calls of the image leave no other path.
	TailCall bool
}

// Stop says why an unwind ended.
type Stop uint8

// Why unwinds stop. The first two mean the stack was unwound completely;
// the others that it was cut short.
const (
	// StopOutermost: the last frame has no caller: its CFI says the
	// return address is undefined, the return address is 0, or its SP is
	// the top of the stack.
	StopOutermost Stop = iota
	// StopException: the last frame was entered by an exception whose
	// interrupted context ran on the other stack (EXC_RETURN bit 2), which
	// the snapshot does not hold.
	StopException
	// StopDepth: the next frame's saved registers lie above the snapshot.
	StopDepth
	// StopNoCFI: no CFI describes the last frame's PC.
	StopNoCFI
	// StopNotACall: the return address found does not follow a BL or BLX.
	StopNotACall
	// StopBadCFI: the CFI asks for a register the unwinder does not know or
	// an expression, moves the CFA below SP, or makes no progress.
	StopBadCFI
	// StopMaxFrames: MaxFrames frames and still going.
	StopMaxFrames
)

var stopNames = [...]string{
	StopOutermost: "complete", StopException: "complete to the exception entry",
	StopDepth: "truncated by the snapshot's depth", StopNoCFI: "no CFI",
	StopNotACall: "return address not after a call", StopBadCFI: "unusable CFI",
	StopMaxFrames: "too many frames",
}

func (s Stop) String() string {
	if int(s) < len(stopNames) {
		return stopNames[s]
	}
	return fmt.Sprintf("stop %d", uint8(s))
}

// Complete reports whether the stop means the whole stack was unwound.
func (s Stop) Complete() bool { return s == StopOutermost || s == StopException }

// MaxFrames bounds an unwind. Every frame but one after the first or
// an exception takes a word of the snapshot for its return address, so a
// snapshot of 64 words never needs more.
const MaxFrames = 2 * 64

// ARM DWARF register numbers.
const (
	regSP = 13
	regLR = 14
	regPC = 15
)

// Exception frames (ARMv7-M): r0-r3, r12, lr, pc, xPSR, 8 words; 26 with the
// FP extension (EXC_RETURN bit 4 clear); one more when xPSR bit 9 says the
// core aligned the stack.
const (
	excFrameLR, excFramePC, excFrameXPSR = 5, 6, 7
	excReturnStdFrame                    = 1 << 4
	excReturnPSP                         = 1 << 2
	xpsrAligner                          = 1 << 9
)

// registers are the values the unwinder knows in one frame.
type registers struct {
	val   [16]uint32
	known [16]bool
}

func (r *registers) set(reg int, v uint32) { r.val[reg], r.known[reg] = v, true }

// Unwinder walks call stacks through an image's call-frame information
// (.debug_frame), checking each return address against the image's code.
// It is safe for concurrent use.
type Unwinder struct {
	cfi  *CFI
	code thumb.CodeReader
	// functionAt finds the function holding an address (its start).
	functionAt func(uint32) *image.Function
	// tails are the image's tail calls (B.W to a function's start), by
	// the function they branch to.
	tails map[uint32][]thumb.CallEdge
	// frameless says, by function start, whether a function without CFI
	// leaves SP and LR alone (framelessLeaf), decided when a walk first
	// meets it: most images have few such functions, and most walks none.
	frameless sync.Map
}

// New reads im's CFI and tail calls. An image without
// .debug_frame gives an Unwinder whose every walk stops at the first frame
// (StopNoCFI); the error is for a .debug_frame that cannot be read.
func New(im *image.Image) (*Unwinder, error) {
	cfi, err := LoadCFI(im.File())
	if err != nil {
		return nil, err
	}
	u := &Unwinder{cfi: cfi, code: im.Bytes, functionAt: im.FunctionAt, tails: map[uint32][]thumb.CallEdge{}}
	tails, err := thumb.TailCalls(im.File(), thumb.FuncRanges(im.Functions()))
	if err != nil {
		return nil, err
	}
	for _, e := range tails {
		u.tails[e.Callee] = append(u.tails[e.Callee], e)
	}
	return u, nil
}

// isFrameless is framelessLeaf for f, decided once.
func (u *Unwinder) isFrameless(f *image.Function) bool {
	if v, ok := u.frameless.Load(f.Addr); ok {
		return v.(bool)
	}
	leaf := framelessLeaf(u.code, f)
	u.frameless.Store(f.Addr, leaf)
	return leaf
}

// framelessLeaf reports whether f's code provably leaves SP and LR alone:
// no call, no push or pop, no instruction that writes SP or LR or
// addresses memory through SP. Such a function (the C library's assembly
// memcpy, memset, strlen) needs no CFI to be unwound: at each of its
// instructions the caller's return address is in LR and its CFA is SP.
// The test errs towards "no": an instruction whose register fields could
// name SP or LR in any encoding counts as touching them, so an unusual
// leaf only stops the walk, as a function without CFI always did.
func framelessLeaf(code thumb.CodeReader, f *image.Function) bool {
	ins := thumb.Instructions(code, f.Addr, f.Size)
	if f.Size == 0 || len(ins) == 0 || ins[len(ins)-1].Addr+ins[len(ins)-1].Size != f.Addr+f.Size {
		return false // not all of it decodes
	}
	for _, in := range ins {
		b, ok := code(in.Addr, in.Size)
		if !ok || in.Flow == thumb.FlowCall {
			return false
		}
		h1 := binary.LittleEndian.Uint16(b)
		if in.Size == 2 {
			if touchesSPOrLR16(h1) {
				return false
			}
		} else if touchesSPOrLR32(h1, binary.LittleEndian.Uint16(b[2:])) {
			return false
		}
	}
	return true
}

// touchesSPOrLR16 is framelessLeaf's test of a 16-bit Thumb instruction
// (ARMv7-M ARM, A5.2): ADD/SUB SP, PUSH, POP, and the high-register
// ADD and MOV into SP or LR.
func touchesSPOrLR16(h uint16) bool {
	switch {
	case h&0xFF00 == 0xB000, // ADD/SUB SP, SP, #imm
		h&0xFE00 == 0xB400, // PUSH
		h&0xFE00 == 0xBC00: // POP
		return true
	case h&0xFD00 == 0x4400: // ADD Rdn, Rm / MOV Rd, Rm (high registers)
		rd := (h>>4)&8 | h&7
		return rd == regSP || rd == regLR
	}
	return false
}

// touchesSPOrLR32 is framelessLeaf's test of a 32-bit Thumb instruction:
// SP as the base register (loads, stores, LDM/STM, VPUSH/VPOP, ADD/SUB
// SP), SP or LR in the destination fields of data processing (bits
// 11:8) and loads (bits 15:12), LR or SP in an LDM's register list, and
// MSR (which may write the stack pointers).
func touchesSPOrLR32(h1, h2 uint16) bool {
	rd, rt := (h2>>8)&0xF, h2>>12
	switch {
	case h1&0xF == regSP,
		rd == regSP || rd == regLR,
		rt == regSP || rt == regLR,
		h1&0xFE50 == 0xE810 && h2&0x6000 != 0, // LDM/LDMDB loading SP or LR
		h1&0xFFE0 == 0xF380:                   // MSR
		return true
	}
	return false
}

// HasCFI reports whether the image has call-frame information at all.
func (u *Unwinder) HasCFI() bool { return u.cfi != nil }

// Unwind walks the call stack of s, frame by frame from s.PC, reading
// saved registers from s.Words, and returns the frames, innermost first
// (always at least the first), and why it stopped. A return address must
// follow a BL or BLX in code (thumb.CallSite); one that does not ends the walk
// rather than guess. An EXC_RETURN return address continues through the
// exception frame when the interrupted context used the same stack (a
// handler on MSP preempted by another on MSP). Functions that left the
// stack by a tail call come back as TailCall frames where the call before
// them leaves no doubt (tailCallPath).
// Any input, however wrong, gives a result: at most MaxFrames
// frames, never a panic.
func (u *Unwinder) Unwind(s Snapshot) (frames []Frame, stop Stop) {
	frames, stop, _ = u.walk(s)
	return frames, stop
}

// walk is Unwind, also returning the CFA of the last frame when the walk
// computed it before stopping (0 otherwise): a stack cut by depth is
// completed by the frames above that activation (CompleteStacks), which
// the last frame's function and CFA name.
func (u *Unwinder) walk(s Snapshot) (frames []Frame, stop Stop, outerCFA uint32) {
	defer func() {
		// delve's CFI interpreter trusts its input; a panic there ends the
		// walk where it stands.
		if r := recover(); r != nil {
			stop, outerCFA = StopBadCFI, 0
		}
	}()
	var regs registers
	regs.set(regSP, s.SP)
	regs.set(regLR, s.LR)
	regs.set(regPC, s.PC&^1)
	frames = []Frame{{PC: s.PC &^ 1, SP: s.SP}}
	for {
		if len(frames) >= MaxFrames {
			return frames, StopMaxFrames, 0
		}
		cur := frames[len(frames)-1]
		if len(frames) > 1 && (s.AtTop && uint64(cur.SP) == s.end() || len(s.Root) > 0 && cur.SP == s.Top) {
			return frames, StopOutermost, 0 // nothing above this frame
		}
		next, nextRegs, stop, ok := u.step(&s, cur, &regs)
		if !ok {
			return frames, stop, next.SP
		}
		if next.SP < cur.SP || next.SP == cur.SP && next.PC == cur.PC {
			return frames, StopBadCFI, 0 // no progress: a loop
		}
		if !next.Interrupted {
			for _, site := range u.tailCallPath(next.PC, cur.PC) {
				frames = append(frames, Frame{PC: site, SP: next.SP, TailCall: true})
			}
		}
		frames = append(frames, next)
		regs = nextRegs
	}
}

// maxTailChain bounds the tail calls put back between two frames.
const maxTailChain = 4

// tailCallPath returns the tail calls (their B.W addresses, innermost
// first) through which the call at site reached the function holding pc,
// when the call's target is another function: the functions it passed
// through ended with a tail call and left no frame. It returns nothing
// when the call goes straight to pc's function, the target is unknown (a
// call through a register) or the image's tail calls offer no path or
// more than one of the shortest length.
func (u *Unwinder) tailCallPath(site, pc uint32) []uint32 {
	callee := u.functionAt(pc)
	target, _, ok := thumb.BLTarget(u.code, site)
	if callee == nil || !ok {
		return nil
	}
	target &^= 1
	if dest, ok := thumb.VeneerTarget(u.code, target); ok {
		target = dest &^ 1
	}
	if target == callee.Addr {
		return nil
	}
	// Breadth-first from the callee back towards the call's target over
	// the tail calls into each function, counting the shortest paths.
	type reach struct {
		sites []uint32 // the tail calls from here down to the callee, innermost first
		ways  int
	}
	reached := map[uint32]reach{callee.Addr: {ways: 1}}
	level := []uint32{callee.Addr}
	for depth := 1; depth <= maxTailChain && len(level) > 0; depth++ {
		found := map[uint32]reach{}
		var next []uint32
		for _, f := range level {
			for _, e := range u.tails[f] {
				if _, shorter := reached[e.Caller]; shorter {
					continue
				}
				r, seen := found[e.Caller]
				if !seen {
					r.sites = append(append([]uint32(nil), reached[f].sites...), e.Site)
					next = append(next, e.Caller)
				}
				r.ways += reached[f].ways
				found[e.Caller] = r
			}
		}
		if r, ok := found[target]; ok {
			if r.ways != 1 {
				return nil
			}
			return r.sites
		}
		for f, r := range found {
			reached[f] = r
		}
		level = next
	}
	return nil
}

// step unwinds one frame: the caller of cur (or the context an exception
// interrupted) with its registers, or why there is none; then the
// returned Frame holds only cur's CFA as its SP, when step got as far as
// computing it.
func (u *Unwinder) step(s *Snapshot, cur Frame, regs *registers) (Frame, registers, Stop, bool) {
	var none Frame
	if u.cfi == nil {
		return none, *regs, StopNoCFI, false
	}
	fc, stop, ok := u.frameRules(cur.PC)
	if !ok {
		return none, *regs, stop, false
	}
	if fc.CFA.Rule != frame.RuleCFA || fc.CFA.Reg > regPC || !regs.known[fc.CFA.Reg] {
		return none, *regs, StopBadCFI, false
	}
	cfa := int64(regs.val[fc.CFA.Reg]) + fc.CFA.Offset
	if cfa < int64(cur.SP) || cfa > 0xFFFFFFFF {
		return none, *regs, StopBadCFI, false
	}
	at := Frame{SP: uint32(cfa)} // what a stop from here on returns
	// The caller's registers: callee-saved ones restored from the stack,
	// the rest as they are (the ABI's "same value" default).
	next := *regs
	fromRoot := false
	for reg, rule := range fc.Regs {
		if reg > regPC {
			continue
		}
		switch rule.Rule {
		case frame.RuleOffset:
			v, ok, root := s.wordFrom(uint64(cfa + rule.Offset))
			if !ok {
				if reg == fc.RetAddrReg {
					return at, *regs, StopDepth, false
				}
				next.known[reg] = false // saved above the snapshot
				continue
			}
			if reg == fc.RetAddrReg {
				fromRoot = root
			}
			next.set(int(reg), v)
		case frame.RuleValOffset:
			next.set(int(reg), uint32(cfa+rule.Offset))
		case frame.RuleRegister:
			if rule.Reg > regPC {
				next.known[reg] = false
				continue
			}
			next.val[reg], next.known[reg] = regs.val[rule.Reg], regs.known[rule.Reg]
		case frame.RuleSameVal:
		case frame.RuleUndefined:
			if reg == fc.RetAddrReg {
				return at, *regs, StopOutermost, false
			}
			next.known[reg] = false
		default:
			next.known[reg] = false
		}
	}
	if fc.RetAddrReg != regLR || !next.known[regLR] {
		return at, *regs, StopBadCFI, false
	}
	ra := next.val[regLR]
	next.set(regSP, uint32(cfa))
	if fromRoot && (ra >= thumb.ExcReturnMin || ra == 0) {
		// Root words are another moment's: only a call's return address
		// read there continues the stack. An EXC_RETURN or a 0 there is
		// what the thread did then, no proof of where this stack ends.
		return at, *regs, StopDepth, false
	}
	switch {
	case ra >= thumb.ExcReturnMin:
		return exceptionFrame(s, ra, uint32(cfa), next)
	case ra == 0:
		return at, *regs, StopOutermost, false
	}
	site, ok := thumb.CallSite(u.code, ra)
	if !ok {
		if fromRoot {
			return at, *regs, StopDepth, false // a stale word, as above
		}
		return at, *regs, StopNotACall, false
	}
	next.set(regPC, site)
	return Frame{PC: site, SP: uint32(cfa), Root: fromRoot}, next, 0, true
}

// frameRules are the CFI rules in force at pc. A GNU ld long-branch veneer
// and a frameless leaf (framelessLeaf) have no CFI but need none: they
// touch neither SP nor LR, so the caller's return address is in LR and
// the CFA is SP, the CIE's initial rules.
func (u *Unwinder) frameRules(pc uint32) (*frame.FrameContext, Stop, bool) {
	fde, err := u.cfi.fdes.FDEForPC(uint64(pc))
	if err != nil {
		if f := u.functionAt(pc); f != nil && (f.Veneer || u.isFrameless(f)) {
			return &frame.FrameContext{CFA: frame.DWRule{Rule: frame.RuleCFA, Reg: regSP}, RetAddrReg: regLR}, 0, true
		}
		return nil, StopNoCFI, false
	}
	fc, err := fde.EstablishFrame(uint64(pc))
	if err != nil {
		return nil, StopBadCFI, false
	}
	return fc, 0, true
}

// exceptionFrame continues through the exception frame at sp that an
// EXC_RETURN return address announces, when it lies on this stack.
func exceptionFrame(s *Snapshot, excReturn, sp uint32, regs registers) (Frame, registers, Stop, bool) {
	at := Frame{SP: sp} // what a stop returns, as step's
	if excReturn&excReturnPSP != 0 {
		// A handler runs on MSP; the interrupted thread's frame is on PSP.
		return at, regs, StopException, false
	}
	var w [8]uint32
	for i := range w {
		v, ok := s.word(uint64(sp) + 4*uint64(i))
		if !ok {
			return at, regs, StopDepth, false
		}
		w[i] = v
	}
	size := uint64(8)
	if excReturn&excReturnStdFrame == 0 {
		size = 26
	}
	if w[excFrameXPSR]&xpsrAligner != 0 {
		size++
	}
	top := uint64(sp) + 4*size
	if top > 0xFFFFFFFF {
		return at, regs, StopBadCFI, false
	}
	for i, reg := range []int{0, 1, 2, 3, 12} {
		regs.set(reg, w[i])
	}
	regs.set(regLR, w[excFrameLR])
	regs.set(regPC, w[excFramePC]&^1)
	regs.set(regSP, uint32(top))
	return Frame{PC: w[excFramePC] &^ 1, SP: uint32(top), Interrupted: true}, regs, 0, true
}
