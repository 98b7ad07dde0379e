// SPDX-License-Identifier: Apache-2.0

package thumb

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"

	"debug/elf"

	"github.com/tcmprof/tcmprof/elf/image"
)

// FuncRange is the part of a function the call-graph decoder needs; an
// image.Function converts to it (FuncRanges).
type FuncRange struct {
	Name string
	Addr uint32 // without the Thumb bit
	Size uint32
}

// FuncRanges converts the symbolizer's functions for CallEdges.
func FuncRanges(fs []*image.Function) []FuncRange {
	out := make([]FuncRange, len(fs))
	for i, f := range fs {
		out[i] = FuncRange{Name: f.Name, Addr: f.Addr, Size: f.Size}
	}
	return out
}

// CallEdge is one direct call: a BL or BLX immediate at Site inside the
// function starting at Caller. Target is what the instruction encodes; when
// that is a GNU ld long-branch veneer, ViaVeneer is set and Callee is where
// the veneer jumps. Otherwise Callee equals Target.
type CallEdge struct {
	Caller, Site, Target uint32
	ViaVeneer            bool
	Callee               uint32
}

// CallEdges decodes every BL/BLX immediate in the executable sections of f
// and returns the calls made from inside funcs, sorted by Site. Calls through
// registers (BLX Rm) and tail calls (B.W, see TailCalls) are not reported.
// Literal pools are skipped using the ARM mapping symbols ($t, $a, $d) that
// GNU as emits; a stripped ELF has none, and then every section is read as
// Thumb code, which can turn a literal into a spurious edge.
func CallEdges(f *elf.File, funcs []FuncRange) ([]CallEdge, error) {
	calls, _, err := directBranches(f, funcs)
	return calls, err
}

// directBranches is the one decoding walk behind CallEdges and TailCalls:
// it reads every 32-bit Thumb instruction in the Thumb-code spans of f's
// executable sections once and returns the BL/BLX immediates (calls) and the
// B.W that leave their function for another function's start (tails), both
// ordered by Site, with veneers resolved.
func directBranches(f *elf.File, funcs []FuncRange) (calls, tails []CallEdge, err error) {
	if f.Machine != elf.EM_ARM || f.Class != elf.ELFCLASS32 {
		return nil, nil, &FormatError{Msg: fmt.Sprintf("not a 32-bit ARM ELF (%v, %v)", f.Class, f.Machine)}
	}
	code, err := newELFCode(f)
	if err != nil {
		return nil, nil, err
	}
	byAddr := append([]FuncRange(nil), funcs...)
	sort.SliceStable(byAddr, func(i, j int) bool { return byAddr[i].Addr < byAddr[j].Addr })
	starts := make(map[uint32]bool, len(byAddr))
	for _, fr := range byAddr {
		starts[fr.Addr] = true
	}
	maps, err := armMappingSymbols(f)
	if err != nil {
		return nil, nil, err
	}
	for i, s := range code.sections {
		if s.Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		for _, sp := range thumbSpans(s, maps[elf.SectionIndex(code.index[i])]) {
			for a := sp.start; a+2 <= sp.end; {
				h1 := binary.LittleEndian.Uint16(s.data[a-s.addr:])
				if !isThumb32(h1) {
					a += 2
					continue
				}
				if a+4 > sp.end {
					break
				}
				h2 := binary.LittleEndian.Uint16(s.data[a+2-s.addr:])
				if target, _, ok := decodeBL(h1, h2, a); ok {
					if caller, ok := funcRangeAt(byAddr, a); ok {
						calls = append(calls, code.edge(caller, a, target))
					}
				} else if target, ok := decodeBW(h1, h2, a); ok && starts[target] {
					// A B.W to its own function's start is a loop, not a call.
					if caller, ok := funcRangeAt(byAddr, a); ok && caller.Addr != target {
						tails = append(tails, code.edge(caller, a, target))
					}
				}
				a += 4
			}
		}
	}
	sort.Slice(calls, func(i, j int) bool { return calls[i].Site < calls[j].Site })
	sort.Slice(tails, func(i, j int) bool { return tails[i].Site < tails[j].Site })
	return calls, tails, nil
}

// edge is the branch at site in caller to target, followed through the
// veneer when target is one.
func (c *elfCode) edge(caller FuncRange, site, target uint32) CallEdge {
	e := CallEdge{Caller: caller.Addr, Site: site, Target: target, Callee: target}
	if dest, ok := VeneerTarget(c.Read, target); ok {
		e.ViaVeneer, e.Callee = true, dest
	}
	return e
}

// isThumb32 reports whether a Thumb instruction starting with halfword h is
// 32 bits long (first five bits 11101, 11110 or 11111).
func isThumb32(h uint16) bool { return h>>11 >= 0x1D }

// funcRangeAt finds the function whose [Addr, Addr+Size) holds addr in funcs
// sorted by Addr. Functions do not nest, so only the entries at the nearest
// start address at or below addr (aliases share it) can hold it.
func funcRangeAt(funcs []FuncRange, addr uint32) (FuncRange, bool) {
	i := sort.Search(len(funcs), func(i int) bool { return funcs[i].Addr > addr }) - 1
	for j := i; j >= 0 && funcs[j].Addr == funcs[i].Addr; j-- {
		if fr := funcs[j]; addr-fr.Addr < fr.Size {
			return fr, true
		}
	}
	return FuncRange{}, false
}

// VeneerTarget recognises the GNU ld long-branch veneers a Cortex-M image
// can contain at addr and returns the address they jump to (Thumb bit
// cleared):
//
//	ldr.w pc, [pc, #-0]; .word dest            (long_branch_thumb2_only)
//	movw ip, #:lower16:dest; movt ip, #:upper16:dest; bx ip   (…_pure, -mpure-code)
func VeneerTarget(code CodeReader, addr uint32) (uint32, bool) {
	b, ok := code(addr, 8)
	if !ok || len(b) < 8 {
		return 0, false
	}
	h := func(i int) uint16 { return binary.LittleEndian.Uint16(b[2*i:]) }
	if h(0) == 0xF85F && h(1) == 0xF000 {
		lit, ok := code((addr+4)&^3, 4)
		if !ok || len(lit) < 4 {
			return 0, false
		}
		return binary.LittleEndian.Uint32(lit) &^ 1, true
	}
	lo, okLo := movImm16(h(0), h(1), 0xF240)
	hi, okHi := movImm16(h(2), h(3), 0xF2C0)
	if okLo && okHi {
		bx, ok := code(addr+8, 2)
		if ok && len(bx) == 2 && binary.LittleEndian.Uint16(bx) == 0x4760 { // bx ip
			return (hi<<16 | lo) &^ 1, true
		}
	}
	return 0, false
}

// movImm16 decodes MOVW (op 0xF240) or MOVT (op 0xF2C0) encoding T3/T1 with
// destination ip (r12) and returns its 16-bit immediate imm4:i:imm3:imm8.
func movImm16(h1, h2, op uint16) (uint32, bool) {
	if h1&0xFBF0 != op || h2&0x8000 != 0 || (h2>>8)&0xF != 12 {
		return 0, false
	}
	imm4 := uint32(h1 & 0xF)
	i := uint32(h1>>10) & 1
	imm3 := uint32(h2>>12) & 7
	imm8 := uint32(h2 & 0xFF)
	return imm4<<12 | i<<11 | imm3<<8 | imm8, true
}

// allocSection is an allocated section's bytes at its run-time address.
type allocSection struct {
	*elf.Section
	addr uint32
	data []byte
}

// elfCode reads an ELF's allocated PROGBITS sections by run-time
// address (VMA), which is what a sampled PC or an LR refers to.
type elfCode struct {
	sections []allocSection
	index    []int // ELF section index of sections[i]
}

func newELFCode(f *elf.File) (*elfCode, error) {
	c := &elfCode{}
	for i, s := range f.Sections {
		if s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_ALLOC == 0 || s.Size == 0 {
			continue
		}
		if s.Addr+s.Size > 1<<32 {
			return nil, &FormatError{Section: s.Name, Msg: fmt.Sprintf("at %#x+%#x does not fit in 32 bits", s.Addr, s.Size)}
		}
		data, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("reading section %s: %w", s.Name, err)
		}
		c.sections = append(c.sections, allocSection{Section: s, addr: uint32(s.Addr), data: data})
		c.index = append(c.index, i)
	}
	return c, nil
}

// Read implements CodeReader.
func (c *elfCode) Read(addr, n uint32) ([]byte, bool) {
	for _, s := range c.sections {
		off := uint64(addr) - uint64(s.addr)
		if addr >= s.addr && off+uint64(n) <= uint64(len(s.data)) {
			return s.data[off : off+uint64(n)], true
		}
	}
	return nil, false
}

// armMappingSymbol marks where a section switches between Thumb code ('t'),
// ARM code ('a') and data ('d') (ARM ELF ABI, "Mapping symbols").
type armMappingSymbol struct {
	addr uint32
	kind byte
}

func armMappingSymbols(f *elf.File) (map[elf.SectionIndex][]armMappingSymbol, error) {
	syms, err := f.Symbols()
	if err != nil && err != elf.ErrNoSymbols {
		return nil, fmt.Errorf("reading symbols: %w", err)
	}
	out := map[elf.SectionIndex][]armMappingSymbol{}
	for _, s := range syms {
		n := s.Name
		if len(n) < 2 || n[0] != '$' || strings.IndexByte("tad", n[1]) < 0 || (len(n) > 2 && n[2] != '.') {
			continue
		}
		out[s.Section] = append(out[s.Section], armMappingSymbol{addr: uint32(s.Value), kind: n[1]})
	}
	for _, ms := range out {
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].addr < ms[j].addr })
	}
	return out, nil
}

type codeSpan struct{ start, end uint32 }

// thumbSpans returns the Thumb-code parts of s. With no mapping symbols the
// whole section is taken as Thumb.
func thumbSpans(s allocSection, maps []armMappingSymbol) []codeSpan {
	end := s.addr + uint32(len(s.data))
	if len(maps) == 0 {
		return []codeSpan{{s.addr, end}}
	}
	var out []codeSpan
	for i, m := range maps {
		if m.kind != 't' || m.addr < s.addr || m.addr >= end {
			continue
		}
		stop := end
		if i+1 < len(maps) && maps[i+1].addr < end {
			stop = maps[i+1].addr
		}
		out = append(out, codeSpan{m.addr, stop})
	}
	return out
}
