// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"

	"github.com/tcmprof/tcmprof/elf"
	"github.com/tcmprof/tcmprof/sample"
)

// Options say how a capture is read against its image.
type Options struct {
	// Board gives the memory regions and the I-cache; nil means teensy41.
	Board *elf.Board
	// Map, when set, attributes code to the libraries of a GNU ld map file.
	Map *elf.Map
	// Idle says which samples are idle rather than busy.
	Idle IdleRules
	// ICache overrides the board's instruction cache when non-zero.
	ICache elf.CacheGeometry
	// Force reads a capture whose build-id differs from the image's.
	Force bool
}

// Site is one code address with everything tcmprof knows about it.
type Site struct {
	Addr     uint32
	Function *elf.Function // the physical function holding Addr; nil outside every function
	Frames   []elf.Frame   // inline chain, innermost first; empty without DWARF
	Region   elf.RegionKind
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

// Stack is the records that share a sampled PC, an accepted caller, an
// exception number and a thread.
type Stack struct {
	PC *Site
	// Caller is the call instruction LR returns to, when LR was accepted as
	// the PC's caller (see LRStats); nil otherwise.
	Caller *Site
	Exc    uint16
	Thread uint32
	Idle   bool
	Count  int
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
	Image   *elf.Image
	Board   *elf.Board
	Options Options
	Stacks  []Stack // ordered by PC, caller, exception, thread
	LR      LRStats
	// Warnings are what the reader could not check or use (no build-id,
	// no CFI...), for the user to see.
	Warnings []string
}

// Symbolize reads c against img. It refuses a capture whose build-id
// differs from the image's unless opts.Force.
func Symbolize(c *sample.Capture, img *elf.Image, opts Options) (*Symbolized, error) {
	if c == nil || img == nil {
		return nil, errors.New("profile: a capture and an image are both needed")
	}
	sites, err := NewSites(img, opts)
	if err != nil {
		return nil, err
	}
	s := &Symbolized{Capture: c, Image: img, Board: sites.Board(), Options: opts}
	warning, err := CheckBuildID(img, c.Header.BuildID, opts.Force)
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
	if c.Header.Fields&sample.FieldLR != 0 {
		cfi, err := elf.LoadCFI(img.File())
		if err != nil || cfi == nil {
			why := "the ELF has no .debug_frame"
			if err != nil {
				why = err.Error()
			}
			s.Warnings = append(s.Warnings, "no CFI ("+why+"): LR values are accepted only when the call before them targets the sampled function")
		}
		r.cfi = cfi
	}
	type key struct {
		pc, caller uint32
		exc        uint16
		thread     uint32
	}
	counts := make(map[key]int)
	hasLR := c.Header.Fields&sample.FieldLR != 0
	for _, rec := range c.Records {
		k := key{pc: rec.PC, exc: rec.Exc, thread: rec.Thread}
		if hasLR {
			k.caller = r.caller(rec.PC, rec.LR)
		}
		counts[k]++
	}
	s.Stacks = make([]Stack, 0, len(counts))
	for k, n := range counts {
		st := Stack{PC: sites.At(k.pc), Exc: k.exc, Thread: k.thread, Count: n}
		if k.caller != 0 {
			st.Caller = sites.At(k.caller)
		}
		st.Idle = opts.Idle.IdleSample(st.PC, k.exc, s.ThreadName(k.thread))
		s.Stacks = append(s.Stacks, st)
	}
	sort.Slice(s.Stacks, func(i, j int) bool {
		a, b := &s.Stacks[i], &s.Stacks[j]
		if a.PC.Addr != b.PC.Addr {
			return a.PC.Addr < b.PC.Addr
		}
		if ac, bc := siteAddr(a.Caller), siteAddr(b.Caller); ac != bc {
			return ac < bc
		}
		if a.Exc != b.Exc {
			return a.Exc < b.Exc
		}
		return a.Thread < b.Thread
	})
	return s, nil
}

func siteAddr(s *Site) uint32 {
	if s == nil {
		return 0
	}
	return s.Addr
}

// CheckBuildID compares the build-id a capture (or a running device)
// reports with the image's. It fails when they differ, unless force; the
// warning says what could not be checked, or that force was used.
func CheckBuildID(img *elf.Image, want []byte, force bool) (warning string, err error) {
	got, err := elf.BuildID(img.File())
	switch {
	case err != nil || len(got) == 0:
		return "the ELF has no GNU build-id: cannot check that the capture came from it (link with --build-id)", nil
	case len(want) == 0:
		return "the capture carries no build-id: cannot check that it came from this ELF", nil
	case !bytes.Equal(want, got):
		msg := fmt.Sprintf("capture build-id %s differs from ELF build-id %s", hex.EncodeToString(want), hex.EncodeToString(got))
		if !force {
			return "", fmt.Errorf("%s: the capture was taken from another build (--force reads it anyway)", msg)
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
	s     *Symbolized
	sites *Sites
	cfi   *elf.CFI // nil: LR is judged by its call instruction alone
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
	site, ok := elf.CallSite(code, lr)
	if !ok {
		l.NoCall++
		return 0
	}
	if r.liveAtPC(pc) {
		l.ByCFI++
		return site
	}
	if f := r.sites.At(pc).Function; f != nil {
		if target, _, ok := elf.BLTarget(code, site); ok {
			// A call between flash and ITCM goes through a linker veneer:
			// the function called is the veneer's destination.
			if dest, ok := elf.VeneerTarget(code, target&^1); ok {
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
