// SPDX-License-Identifier: Apache-2.0

package thumb

import "encoding/binary"

// Flow says how control leaves a Thumb instruction.
type Flow uint8

const (
	// FlowNext: the instruction always falls through to the next one.
	FlowNext Flow = iota
	// FlowBranch: a direct branch to Target (B, B<c>, CBZ/CBNZ, their .W
	// forms); a conditional one (Conditional) may also fall through.
	FlowBranch
	// FlowCall: a call (BL, BLX immediate or register); execution comes
	// back to the next instruction when the callee returns.
	FlowCall
	// FlowJump: an indirect jump or a return (BX, POP {..pc}, LDR pc,
	// LDM with pc, MOV/ADD pc, TBB/TBH): the next instruction is reached
	// only from elsewhere, unless the jump is conditional (in an IT block).
	FlowJump
)

// Instruction is one decoded Thumb instruction.
type Instruction struct {
	Addr        uint32
	Size        uint32 // 2 or 4
	Flow        Flow
	Conditional bool   // a branch or jump that may fall through
	Target      uint32 // of a FlowBranch or a direct FlowCall
}

// FallsThrough reports whether execution can continue with the next
// instruction in address order right after this one (a call does, when
// its callee returns).
func (in Instruction) FallsThrough() bool {
	return in.Conditional || in.Flow == FlowNext || in.Flow == FlowCall
}

// Instructions decodes the Thumb instructions in [addr, addr+size) in
// address order: their lengths and the control flow the instruction-fetch
// model needs (branches, calls, returns). Literal pools inside the range
// decode as whatever instructions their bytes spell; they are never
// executed, so nothing that counts executed or sampled instructions sees
// them. The decoding stops at the first address code can not read.
func Instructions(code CodeReader, addr, size uint32) []Instruction {
	var out []Instruction
	end := uint64(addr) + uint64(size)
	itLeft := 0 // instructions left in the current IT block
	for a := addr; uint64(a)+2 <= end; {
		b, ok := code(a, 2)
		if !ok || len(b) < 2 {
			break
		}
		h1 := binary.LittleEndian.Uint16(b)
		in := Instruction{Addr: a, Size: 2}
		inIT := itLeft > 0
		if inIT {
			itLeft--
		}
		if isThumb32(h1) {
			b, ok := code(a+2, 2)
			if !ok || len(b) < 2 || uint64(a)+4 > end {
				break
			}
			in.Size = 4
			decodeThumb32(&in, h1, binary.LittleEndian.Uint16(b))
		} else if h1&0xFF00 == 0xBF00 && h1&0xF != 0 {
			// IT firstcond mask: the mask's lowest set bit ends the block.
			mask := h1 & 0xF
			itLeft = 4
			for mask&1 == 0 {
				mask >>= 1
				itLeft--
			}
		} else {
			decodeThumb16(&in, h1)
		}
		if inIT && in.Flow != FlowNext && in.Flow != FlowCall {
			in.Conditional = true
		}
		out = append(out, in)
		a += in.Size
	}
	return out
}

// decodeThumb16 sets the flow of a 16-bit Thumb instruction (ARMv7-M ARM,
// A5.2).
func decodeThumb16(in *Instruction, h uint16) {
	pc := in.Addr + 4
	switch {
	case h&0xF000 == 0xD000 && (h>>8)&0xF < 0xE: // B<c> T1
		in.Flow, in.Conditional = FlowBranch, true
		in.Target = pc + uint32(int32(int8(h&0xFF))<<1)
	case h&0xF800 == 0xE000: // B T2
		in.Flow = FlowBranch
		in.Target = pc + uint32(int32(int16(h<<5))>>4) // imm11:0, sign-extended
	case h&0xF500 == 0xB100: // CBZ, CBNZ
		in.Flow, in.Conditional = FlowBranch, true
		in.Target = pc + uint32((h>>9)&1)<<6 + uint32((h>>3)&0x1F)<<1
	case isBLXReg(h):
		in.Flow = FlowCall
	case h&0xFF87 == 0x4700, // BX Rm
		h&0xFF00 == 0xBD00, // POP {..., pc}
		h&0xFF87 == 0x4687, // MOV pc, Rm
		h&0xFF87 == 0x4487: // ADD pc, Rm
		in.Flow = FlowJump
	}
}

// decodeThumb32 sets the flow of a 32-bit Thumb instruction h1,h2.
func decodeThumb32(in *Instruction, h1, h2 uint16) {
	if target, _, ok := decodeBL(h1, h2, in.Addr); ok {
		in.Flow, in.Target = FlowCall, target
		return
	}
	if target, ok := decodeBW(h1, h2, in.Addr); ok {
		in.Flow, in.Target = FlowBranch, target
		return
	}
	rt := h2 >> 12
	switch {
	case h1&0xF800 == 0xF000 && h2&0xD000 == 0x8000 && (h1>>6)&0xF < 0xE: // B<c>.W T3
		s := uint32(h1>>10) & 1
		j1, j2 := uint32(h2>>13)&1, uint32(h2>>11)&1
		imm := s<<20 | j2<<19 | j1<<18 | uint32(h1&0x3F)<<12 | uint32(h2&0x7FF)<<1
		in.Flow, in.Conditional = FlowBranch, true
		in.Target = in.Addr + 4 + uint32(int32(imm<<11)>>11)
	case h1&0xFFF0 == 0xE8D0 && h2&0xFFE0 == 0xF000, // TBB, TBH
		h1&0xFF70 == 0xF850 && rt == 0xF,                               // LDR.W pc, [...] (immediate, register, literal)
		(h1&0xFFD0 == 0xE890 || h1&0xFFD0 == 0xE910) && h2&0x8000 != 0: // LDM/POP.W with pc
		in.Flow = FlowJump
	}
}
