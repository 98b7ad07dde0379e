// SPDX-License-Identifier: Apache-2.0

// Package thumb decodes the Thumb-2 code of a Cortex-M image: each
// instruction's length and control flow (Instructions), the call a return
// address follows (CallSite), the calls and tail calls between functions
// (CallEdges, TailCalls), and where GNU ld's long-branch veneers lead
// (VeneerTarget). It reads code through a CodeReader or an ELF's sections.
package thumb

import "encoding/binary"

// CodeReader returns n bytes of the image at addr, or ok=false when the
// image has no bytes there. (*elf.Image).Bytes has this shape.
type CodeReader func(addr, n uint32) ([]byte, bool)

// thumbHalfwords reads the two Thumb thumbHalfwords at addr.
func thumbHalfwords(code CodeReader, addr uint32) (h1, h2 uint16, ok bool) {
	b, ok := code(addr, 4)
	if !ok || len(b) < 4 {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint16(b), binary.LittleEndian.Uint16(b[2:]), true
}

// isBLPair reports whether h1,h2 is a 32-bit BL (T1) or BLX immediate (T2):
// first halfword 11110xxxxxxxxxxx, second 11J1 1J2 (BL) or 11J1 0J2 with
// bit 0 clear (BLX).
func isBLPair(h1, h2 uint16) bool {
	if h1&0xF800 != 0xF000 {
		return false
	}
	return h2&0xD000 == 0xD000 || h2&0xD001 == 0xC000
}

// isBLXReg reports whether h is the 16-bit BLX Rm: 010001111 Rm 000.
func isBLXReg(h uint16) bool { return h&0xFF87 == 0x4780 }

// decodeBL decodes the BL/BLX immediate h1,h2 at addr. toARM is true for
// BLX, whose target is an ARM-state address computed from Align(PC, 4).
func decodeBL(h1, h2 uint16, addr uint32) (target uint32, toARM bool, ok bool) {
	if !isBLPair(h1, h2) {
		return 0, false, false
	}
	off := branchOffset(h1, h2)
	pc := addr + 4
	if h2&0x1000 == 0 { // BLX: H (bit 0) is zero and the offset is word-aligned
		return (pc &^ 3) + uint32(off&^3), true, true
	}
	return pc + uint32(off), false, true
}

// branchOffset decodes the signed 25-bit offset S:I1:I2:imm10:imm11:0 that
// BL, BLX immediate and B.W (T4) share, with I1 = NOT(J1 XOR S) and
// I2 = NOT(J2 XOR S).
func branchOffset(h1, h2 uint16) int32 {
	s := uint32(h1>>10) & 1
	j1 := uint32(h2>>13) & 1
	j2 := uint32(h2>>11) & 1
	i1 := ^(j1 ^ s) & 1
	i2 := ^(j2 ^ s) & 1
	imm := s<<24 | i1<<23 | i2<<22 | uint32(h1&0x3FF)<<12 | uint32(h2&0x7FF)<<1
	return int32(imm<<7) >> 7 // sign-extend
}

// BLTarget decodes the BL or BLX immediate at addr (the address of its first
// halfword). toARM is true for BLX immediate, which switches to ARM state;
// M-profile cores fault on that, but the target is still decoded as the
// architecture defines it. ok is false when addr holds no such instruction.
func BLTarget(code CodeReader, addr uint32) (target uint32, toARM bool, ok bool) {
	h1, h2, ok := thumbHalfwords(code, addr&^1)
	if !ok {
		return 0, false, false
	}
	return decodeBL(h1, h2, addr&^1)
}

// ExcReturnMin is the lowest EXC_RETURN value: an LR of 0xFFFFFFxx after
// exception entry is a magic number, not a code address.
const ExcReturnMin = 0xFFFFFF00

// CallSite maps a return address (an LR value) to the address of the call
// instruction that produced it: ret-4 for a 32-bit BL/BLX immediate, ret-2
// for a 16-bit BLX Rm. Symbolizing the call site, not the return address,
// gives the caller's line instead of the statement after the call.
//
// ok is false for EXC_RETURN values, for LRs without the Thumb bit (every
// return address on an M-profile core has it) and when neither call
// encoding precedes the return address, i.e. LR is stale or was never a
// return address.
func CallSite(code CodeReader, lr uint32) (site uint32, ok bool) {
	if lr >= ExcReturnMin || lr&1 == 0 {
		return 0, false
	}
	ret := lr &^ 1
	if ret >= 4 {
		if h1, h2, ok := thumbHalfwords(code, ret-4); ok && isBLPair(h1, h2) {
			return ret - 4, true
		}
	}
	if ret >= 2 {
		if b, ok := code(ret-2, 2); ok && len(b) >= 2 && isBLXReg(binary.LittleEndian.Uint16(b)) {
			return ret - 2, true
		}
	}
	return 0, false
}
