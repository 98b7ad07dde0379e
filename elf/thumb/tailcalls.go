// SPDX-License-Identifier: Apache-2.0

package thumb

import "debug/elf"

// TailCalls decodes every Thumb-2 B.W (encoding T4) in the executable
// sections of f that leaves its function for the start of another function
// of funcs (or for a GNU ld veneer): the tail calls GCC emits at -Os and
// -O2. They matter for placement as much as BL does: GNU ld gives an
// out-of-range B.W (R_ARM_THM_JUMP24) a long-branch veneer too. Branches
// inside a function and conditional branches (B<c>.W, ±1 MiB, which ld can
// not veneer) are not reported. Edges have the shape CallEdges returns.
func TailCalls(f *elf.File, funcs []FuncRange) ([]CallEdge, error) {
	_, tails, err := directBranches(f, funcs)
	return tails, err
}

// decodeBW decodes the unconditional branch B.W (T4: 11110 S imm10,
// 10 J1 1 J2 imm11) at addr. The offset is encoded as in BL.
func decodeBW(h1, h2 uint16, addr uint32) (target uint32, ok bool) {
	if h1&0xF800 != 0xF000 || h2&0xD000 != 0x9000 {
		return 0, false
	}
	return addr + 4 + uint32(branchOffset(h1, h2)), true
}
