// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tcmprof/tcmprof/elf/board"
	"github.com/tcmprof/tcmprof/elf/dwarfline"
	"github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/elf/mapfile"
	"github.com/tcmprof/tcmprof/elf/thumb"
	"github.com/tcmprof/tcmprof/elf/unwind"
	"github.com/tcmprof/tcmprof/internal/wording"
	"github.com/tcmprof/tcmprof/sample"
)

// Options say how a capture is read against its image.
type Options struct {
	// Board gives the memory regions and the I-cache; nil means teensy41.
	Board *board.Board
	// Map, when set, attributes code to the libraries of a GNU ld map file.
	Map *mapfile.Map
	// Idle says which samples are idle rather than busy.
	Idle IdleRules
	// ICache overrides the board's instruction cache when non-zero.
	ICache board.CacheGeometry
	// Force reads a capture whose build-id differs from the image's.
	Force bool
}

// Site is one code address with everything tcmprof knows about it.
type Site struct {
	Addr     uint32
	Function *image.Function   // the physical function holding Addr; nil outside every function
	Frames   []dwarfline.Frame // inline chain, innermost first; empty without DWARF
	Region   board.RegionKind
	Library  string // from the map file; "" when unknown
	Idle     bool   // in an idle function, or right after a WFI/WFE
}

// Name is the site's physical function for tables: its display name, or
// the address when no function holds it.
func (s *Site) Name() string {
	if s.Function == nil {
		return fmt.Sprintf("0x%08x", s.Addr)
	}
	if s.Function.Display != "" {
		return s.Function.Display
	}
	return s.Function.Name
}

// Stack is the records that share a sampled PC, its callers, an exception
// number and a thread.
type Stack struct {
	PC *Site
	// Callers are the frames above PC, innermost first: for a capture with
	// stacks the call instructions the unwinder found (and the tail calls
	// and interrupted PCs of UnwoundFrame), else at most the call LR
	// returns to, when LR was accepted as the PC's caller (see LRStats).
	Callers []*Site
	// Completed is how many of the outermost Callers were not in the
	// records' own snapshots: unwound through the words below the
	// thread's stack top (Capture.StackTops, unwind.Unwinder.UnwindThread) or
	// completed from other records of the thread that share the frame
	// below them (unwind.Unwinder.CompleteStacks).
	Completed int
	Exc       uint16
	Thread    uint32
	Idle      bool
	Count     int
}

// UnwindStats says how far the stacks of a capture with the STACK field
// were unwound.
type UnwindStats struct {
	Records int // records with a stack snapshot
	// Complete: unwound to the outermost frame, or to the entry of the
	// exception that interrupted another stack's code; Completed of them
	// only with frames not in their own snapshot (the thread's stack-top
	// words, other records).
	Complete, Completed int
	// CompletedFrames counts the frames not from the records' own
	// snapshots, in stacks that reached their root and in those still
	// truncated.
	CompletedFrames int
	// TruncatedDepth: a caller's saved registers lay above the snapshot.
	TruncatedDepth int
	// Truncated: stopped past the first frame at code without CFI, a return
	// address after no call, or CFI the unwinder cannot use.
	Truncated int
	// Failed: no caller found from the first frame; FallbackLR of them got
	// the validated LR as their caller instead.
	Failed, FallbackLR int
	// Frames counts the frames of all stacks, the first included.
	Frames int
	// ByStop counts the records by why their unwind ended.
	ByStop map[unwind.Stop]int
}

func (u UnwindStats) String() string {
	if u.Records == 0 {
		return "no stacks"
	}
	p := func(n int) string { return wording.Percent(float64(n) / float64(u.Records)) }
	return fmt.Sprintf("%d stacks, %.1f frames on average (%.1f from the stack-top words or other samples): %d complete (%s; %d of them by completion), %d truncated by the snapshot's depth (%s), %d truncated by code the unwinder cannot pass (%s), %d failed at the first frame (%s; the validated LR stood in for %d)",
		u.Records, float64(u.Frames)/float64(u.Records), float64(u.CompletedFrames)/float64(u.Records),
		u.Complete, p(u.Complete), u.Completed, u.TruncatedDepth, p(u.TruncatedDepth),
		u.Truncated, p(u.Truncated), u.Failed, p(u.Failed), u.FallbackLR)
}

// count adds one unwind of frames frames, completed of them from other
// records, that ended at stop.
func (u *UnwindStats) count(frames, completed int, stop unwind.Stop) {
	u.Records++
	u.Frames += frames
	u.CompletedFrames += completed
	if completed > 0 && stop.Complete() {
		u.Completed++
	}
	if u.ByStop == nil {
		u.ByStop = map[unwind.Stop]int{}
	}
	u.ByStop[stop]++
	switch {
	case stop.Complete():
		u.Complete++
	case frames == 1:
		u.Failed++
	case stop == unwind.StopDepth:
		u.TruncatedDepth++
	default:
		u.Truncated++
	}
}

// LRStats says how many LR values were accepted as the sampled function's
// caller, and why the others were not.
type LRStats struct {
	Records int // records carrying an LR
	// Accepted LRs, by the rule that accepted them: the CFI says LR still
	// holds the return address at the PC, or the call before LR targets the
	// sampled function.
	ByCFI, ByCallTarget int
	ExcReturn           int // LR was an EXC_RETURN value
	NoCall              int // no BL/BLX precedes the return address
	Stale               int // a call precedes it, but neither rule holds: LR is left over from an earlier call
}

// Accepted is the number of LRs used as callers.
func (l LRStats) Accepted() int { return l.ByCFI + l.ByCallTarget }

func (l LRStats) String() string {
	return fmt.Sprintf("%d of %d LR values accepted as the caller (%d by CFI, %d by call target); rejected: %d EXC_RETURN, %d not after a call, %d stale",
		l.Accepted(), l.Records, l.ByCFI, l.ByCallTarget, l.ExcReturn, l.NoCall, l.Stale)
}

// Symbolized is a capture read against the image it ran.
type Symbolized struct {
	Capture *sample.Capture
	Image   *image.Image
	Board   *board.Board
	Options Options
	Stacks  []Stack // ordered by PC, callers, exception, thread
	LR      LRStats
	Unwind  UnwindStats // with the STACK field
	// Warnings are what the reader could not check or use (no build-id,
	// no CFI...), for the user to see.
	Warnings []string
}

// Symbolize reads c against img. It refuses a capture whose build-id
// differs from the image's unless opts.Force.
func Symbolize(c *sample.Capture, img *image.Image, opts Options) (*Symbolized, error) {
	if c == nil || img == nil {
		return nil, errors.New("a capture and an image are both needed")
	}
	sites, err := NewSites(img, opts)
	if err != nil {
		return nil, err
	}
	s := &Symbolized{Capture: c, Image: img, Board: sites.Board(), Options: opts}
	warning, err := CheckBuildID(img, c.Header.BuildID, "capture", opts.Force)
	if err != nil {
		return nil, err
	}
	if warning != "" {
		s.Warnings = append(s.Warnings, warning)
	}
	// Decode the DWARF of every sampled compile unit up front, on all
	// cores, rather than unit by unit as the PCs come.
	pcs := make([]uint32, len(c.Records))
	for i, rec := range c.Records {
		pcs[i] = rec.PC
	}
	img.Preload(pcs)
	r := &resolver{s: s, sites: sites, lrLive: make(map[uint32]bool)}
	if err := r.loadCFI(); err != nil {
		return nil, err
	}
	type key struct {
		callers   string // the callers' addresses, 4 bytes each
		completed int
		pc        uint32
		exc       uint16
		thread    uint32
	}
	counts := make(map[key]int)
	unwound := r.unwindAll()
	for i := range c.Records {
		rec := &c.Records[i]
		var u *unwind.Stack
		if unwound != nil {
			u = &unwound[i]
		}
		callers, completed := r.callers(rec, u)
		k := key{pc: rec.PC, exc: rec.Exc, thread: rec.Thread, callers: addrKey(callers), completed: completed}
		counts[k]++
	}
	s.Stacks = make([]Stack, 0, len(counts))
	for k, n := range counts {
		st := Stack{PC: sites.At(k.pc), Exc: k.exc, Thread: k.thread, Count: n, Completed: k.completed}
		for _, a := range keyAddrs(k.callers) {
			st.Callers = append(st.Callers, sites.At(a))
		}
		st.Idle = opts.Idle.IdleSample(st.PC, k.exc, s.ThreadName(k.thread))
		s.Stacks = append(s.Stacks, st)
	}
	sort.Slice(s.Stacks, func(i, j int) bool {
		a, b := &s.Stacks[i], &s.Stacks[j]
		if a.PC.Addr != b.PC.Addr {
			return a.PC.Addr < b.PC.Addr
		}
		if ac, bc := siteKey(a.Callers), siteKey(b.Callers); ac != bc {
			return ac < bc
		}
		if a.Exc != b.Exc {
			return a.Exc < b.Exc
		}
		if a.Thread != b.Thread {
			return a.Thread < b.Thread
		}
		return a.Completed < b.Completed
	})
	s.Warnings = append(s.Warnings, s.coverageWarnings()...)
	return s, nil
}

// coverageWarnings say when the figures can not mean what they seem to:
// a capture without samples (every share is of nothing), samples outside
// every function of the image (its PCs are not this ELF's code, though
// the build-ids agree), and samples in code no memory region of the board
// holds (the wrong board: the QEMU demo's testbench without --board
// qemu-demo), each with its count.
func (s *Symbolized) coverageWarnings() []string {
	n := len(s.Capture.Records)
	if n == 0 {
		return []string{"the capture holds no samples, so every figure is zero"}
	}
	outside, noRegion := 0, 0
	for i := range s.Stacks {
		switch st := &s.Stacks[i]; {
		case st.PC.Function == nil:
			outside += st.Count
		case st.PC.Region == "":
			noRegion += st.Count
		}
	}
	var ws []string
	if outside > 0 {
		ws = append(ws, fmt.Sprintf("%d of %d samples are outside the image (in no function of %s): they count for their addresses alone",
			outside, n, filepath.Base(s.Image.Path())))
	}
	if noRegion > 0 {
		ws = append(ws, fmt.Sprintf("%d of %d samples are in code outside every memory region of board %s (region unknown): name the board the capture ran on with --board (%s) or give its devicetree with --dts",
			noRegion, n, s.Board.Name, strings.Join(board.Names(), ", ")))
	}
	return ws
}

// loadCFI reads what judging LR and unwinding stacks need: the CFI for a
// capture with LR, the unwinder (CFI and tail calls) for one with stacks.
func (r *resolver) loadCFI() error {
	h := &r.s.Capture.Header
	if h.Fields&sample.FieldLR == 0 {
		return nil
	}
	cfi, err := unwind.LoadCFI(r.s.Image.File())
	if err != nil || cfi == nil {
		why := "the ELF has no .debug_frame"
		if err != nil {
			why = err.Error()
		}
		r.s.Warnings = append(r.s.Warnings, "no CFI ("+why+"): LR values are accepted only when the call before them targets the sampled function")
		if h.Fields&sample.FieldStack != 0 {
			r.s.Warnings = append(r.s.Warnings, "no CFI: the stack snapshots cannot be unwound")
		}
	}
	r.cfi = cfi
	if h.Fields&sample.FieldStack != 0 && cfi != nil {
		u, err := unwind.New(r.s.Image)
		if err != nil {
			return fmt.Errorf("%w", err)
		}
		r.unwinder = u
	}
	return nil
}

// unwindAll unwinds every record's stack snapshot and completes the
// stacks the snapshot's depth cut short from the other records of their
// thread (unwind.Unwinder.CompleteStacks): nil for a capture without stacks or an
// image without CFI.
func (r *resolver) unwindAll() []unwind.Stack {
	h := &r.s.Capture.Header
	if h.Fields&sample.FieldStack == 0 || r.unwinder == nil {
		return nil
	}
	out := make([]unwind.Stack, len(r.s.Capture.Records))
	for i := range r.s.Capture.Records {
		rec := &r.s.Capture.Records[i]
		// Fewer words than K: the copy stopped at the stack's top (no
		// words at all may also mean SP was outside the stack).
		snap := unwind.Snapshot{
			PC: rec.PC, SP: rec.SP, LR: rec.LR, Words: rec.Stack,
			AtTop: len(rec.Stack) > 0 && len(rec.Stack) < int(h.StackWords),
		}
		// The thread's outermost frames, which no K words from SP reach
		// under a large entry frame, from the words below its stack top
		// (protocol 1.3's STACK_TOP). A sample in a handler, on the
		// interrupt stack, ends at the exception entry before reaching
		// them.
		if top, ok := r.s.Capture.StackTops[rec.Thread]; ok && rec.Thread != 0 {
			snap.Root, snap.Top = top.Words, top.Top
		}
		out[i] = r.unwinder.UnwindThread(snap, rec.Thread)
	}
	r.unwinder.CompleteStacks(out)
	return out
}

// callers are rec's frames above its PC: its unwound (and completed)
// stack u when it passes the first frame, else the accepted LR caller;
// and how many of the outermost came from other records.
func (r *resolver) callers(rec *sample.Record, u *unwind.Stack) ([]uint32, int) {
	h := &r.s.Capture.Header
	if h.Fields&sample.FieldLR == 0 {
		return nil, 0
	}
	var out []uint32
	if h.Fields&sample.FieldStack != 0 {
		frames, completed, stop := 1, 0, unwind.StopNoCFI
		if u != nil {
			for _, f := range u.Frames[1:] {
				out = append(out, f.PC)
			}
			frames, completed, stop = len(u.Frames), u.Completed, u.Stop
		}
		r.s.Unwind.count(frames, completed, stop)
		if frames > 1 || stop.Complete() {
			r.caller(rec.PC, rec.LR) // counted in the LR statistics all the same
			return out, completed
		}
	}
	if site := r.caller(rec.PC, rec.LR); site != 0 {
		out = append(out, site)
		if h.Fields&sample.FieldStack != 0 {
			r.s.Unwind.FallbackLR++
		}
	}
	return out, 0
}

// addrKey packs addresses into a map key; keyAddrs unpacks it.
func addrKey(addrs []uint32) string {
	b := make([]byte, 0, 4*len(addrs))
	for _, a := range addrs {
		b = binary.BigEndian.AppendUint32(b, a)
	}
	return string(b)
}

func keyAddrs(k string) []uint32 {
	out := make([]uint32, 0, len(k)/4)
	for i := 0; i+4 <= len(k); i += 4 {
		out = append(out, binary.BigEndian.Uint32([]byte(k[i:i+4])))
	}
	return out
}

// siteKey orders stacks by their callers' addresses.
func siteKey(sites []*Site) string {
	addrs := make([]uint32, len(sites))
	for i, s := range sites {
		addrs[i] = s.Addr
	}
	return addrKey(addrs)
}

// CheckBuildID compares the build-id a capture or a running device (what
// names it: "capture", "device") reports with the image's. It fails when
// they differ, unless force; the warning says what could not be checked,
// or that force was used.
func CheckBuildID(img *image.Image, want []byte, what string, force bool) (warning string, err error) {
	got, err := image.BuildID(img.File())
	switch {
	case err != nil || len(got) == 0:
		return fmt.Sprintf("the ELF has no GNU build-id: cannot check that the %s's image is this one (link with --build-id)", what), nil
	case len(want) == 0:
		return fmt.Sprintf("the %s carries no build-id: cannot check that its image is this ELF", what), nil
	case !bytes.Equal(want, got):
		msg := fmt.Sprintf("%s build-id %s differs from ELF build-id %s", what, hex.EncodeToString(want), hex.EncodeToString(got))
		if !force {
			return "", fmt.Errorf("%s: the %s's image is another build; give that build's ELF or --build-dir (--force reads it anyway)", msg, what)
		}
		return msg + " (--force)", nil
	}
	return "", nil
}

// ThreadName is the name of thread id from the capture's thread table, its
// id in hex when the table has no name for it, and "" when the run did not
// record threads or id is 0 (unknown).
func (s *Symbolized) ThreadName(id uint32) string {
	if s.Capture.Header.Fields&sample.FieldThread == 0 {
		return ""
	}
	return ThreadName(s.Capture.Threads, id)
}

// ThreadName is the name of thread id in a thread table, its id in hex
// when the table has no name for it, and "" for id 0 (unknown).
func ThreadName(threads map[uint32]string, id uint32) string {
	if id == 0 {
		return ""
	}
	if n, ok := threads[id]; ok && n != "" {
		return n
	}
	return fmt.Sprintf("0x%08x", id)
}

// ContextName names the execution context of an exception number: "thread"
// for thread mode, the architectural name of a system exception, "irq N"
// for external interrupt N (exception 16+N).
func ContextName(exc uint16) string {
	switch {
	case exc == 0:
		return "thread"
	case exc >= 16:
		return fmt.Sprintf("irq %d", exc-16)
	case int(exc) < len(systemExceptions) && systemExceptions[exc] != "":
		return systemExceptions[exc]
	}
	return fmt.Sprintf("exception %d", exc)
}

var systemExceptions = [16]string{
	1: "Reset", 2: "NMI", 3: "HardFault", 4: "MemManage", 5: "BusFault", 6: "UsageFault",
	7: "SecureFault", 11: "SVCall", 12: "DebugMonitor", 14: "PendSV", 15: "SysTick",
}

// resolver judges each record's LR against the sampled PC.
type resolver struct {
	s        *Symbolized
	sites    *Sites
	cfi      *unwind.CFI      // nil: LR is judged by its call instruction alone
	unwinder *unwind.Unwinder // nil: no stacks, or no CFI to unwind them
	// lrLive caches the CFI's answer per PC: evaluating the CFI program
	// allocates, and a capture revisits the same PCs millions of times.
	lrLive map[uint32]bool
}

// liveAtPC reports whether the CFI says LR holds the return address at pc.
func (r *resolver) liveAtPC(pc uint32) bool {
	if r.cfi == nil {
		return false
	}
	live, ok := r.lrLive[pc]
	if !ok {
		var known bool
		live, known = r.cfi.LRIsReturnAddress(pc)
		live = live && known
		r.lrLive[pc] = live
	}
	return live
}

// caller returns the call-site address LR returns to when LR is really the
// caller of the function holding pc, 0 otherwise, and counts the verdict.
//
// LR holds the return address of the sampled function only until the
// function saves it and makes a call of its own. Two independent rules
// accept it: the CFI says that at pc LR still holds the return address
// (a leaf, or a non-leaf before its prologue); or the instruction before
// the return address is a BL/BLX whose target is the sampled function
// itself, directly or through a linker veneer (LR cannot be left over
// from one of its own calls then).
func (r *resolver) caller(pc, lr uint32) uint32 {
	l := &r.s.LR
	l.Records++
	code := r.s.Image.Bytes
	if lr >= 0xFFFFFF00 {
		l.ExcReturn++
		return 0
	}
	site, ok := thumb.CallSite(code, lr)
	if !ok {
		l.NoCall++
		return 0
	}
	if r.liveAtPC(pc) {
		l.ByCFI++
		return site
	}
	if f := r.sites.At(pc).Function; f != nil {
		if target, _, ok := thumb.BLTarget(code, site); ok {
			// A call between flash and ITCM goes through a linker veneer:
			// the function called is the veneer's destination.
			if dest, ok := thumb.VeneerTarget(code, target&^1); ok {
				target = dest
			}
			if target&^1 == f.Addr {
				l.ByCallTarget++
				return site
			}
		}
	}
	l.Stale++
	return 0
}
