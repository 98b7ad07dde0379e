package elf

import (
	"encoding/binary"
	"fmt"
	"sort"

	goelf "debug/elf"
)

// TailCalls decodes every Thumb-2 B.W (encoding T4) in the executable
// sections of f that leaves its function for the start of another function
// of funcs (or for a GNU ld veneer): the tail calls GCC emits at -Os and
// -O2. They matter for placement as much as BL does: GNU ld gives an
// out-of-range B.W (R_ARM_THM_JUMP24) a long-branch veneer too. Branches
// inside a function and conditional branches (B<c>.W, ±1 MiB, which ld can
// not veneer) are not reported. Edges have the shape CallEdges returns.
func TailCalls(f *goelf.File, funcs []FuncRange) ([]CallEdge, error) {
	if f.Machine != goelf.EM_ARM || f.Class != goelf.ELFCLASS32 {
		return nil, fmt.Errorf("tail calls: not a 32-bit ARM ELF (%v, %v)", f.Class, f.Machine)
	}
	code, err := newELFCode(f)
	if err != nil {
		return nil, err
	}
	byAddr := append([]FuncRange(nil), funcs...)
	sort.SliceStable(byAddr, func(i, j int) bool { return byAddr[i].Addr < byAddr[j].Addr })
	starts := make(map[uint32]bool, len(byAddr))
	for _, fr := range byAddr {
		starts[fr.Addr] = true
	}
	maps, err := armMappingSymbols(f)
	if err != nil {
		return nil, err
	}
	var edges []CallEdge
	for i, s := range code.sections {
		if s.Flags&goelf.SHF_EXECINSTR == 0 {
			continue
		}
		for _, sp := range thumbSpans(s, maps[goelf.SectionIndex(code.index[i])]) {
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
				if target, ok := decodeBW(h1, h2, a); ok && starts[target] {
					if caller, ok := funcRangeAt(byAddr, a); ok && caller.Addr != target {
						e := CallEdge{Caller: caller.Addr, Site: a, Target: target, Callee: target}
						if dest, ok := VeneerTarget(code.Read, target); ok {
							e.ViaVeneer, e.Callee = true, dest
						}
						edges = append(edges, e)
					}
				}
				a += 4
			}
		}
	}
	sort.Slice(edges, func(i, j int) bool { return edges[i].Site < edges[j].Site })
	return edges, nil
}

// decodeBW decodes the unconditional branch B.W (T4: 11110 S imm10,
// 10 J1 1 J2 imm11) at addr. The offset is encoded as in BL.
func decodeBW(h1, h2 uint16, addr uint32) (target uint32, ok bool) {
	if h1&0xF800 != 0xF000 || h2&0xD000 != 0x9000 {
		return 0, false
	}
	s := uint32(h1>>10) & 1
	j1 := uint32(h2>>13) & 1
	j2 := uint32(h2>>11) & 1
	i1 := ^(j1 ^ s) & 1
	i2 := ^(j2 ^ s) & 1
	imm := s<<24 | i1<<23 | i2<<22 | uint32(h1&0x3FF)<<12 | uint32(h2&0x7FF)<<1
	off := int32(imm<<7) >> 7
	return addr + 4 + uint32(off), true
}
