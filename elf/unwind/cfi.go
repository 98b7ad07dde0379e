// SPDX-License-Identifier: Apache-2.0

package unwind

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"debug/elf"

	"github.com/go-delve/delve/pkg/dwarf/frame"
	"github.com/tcmprof/tcmprof/elf/thumb"
)

// A DecodeError is a .debug_frame that cannot be decoded.
type DecodeError struct {
	Err string // what the decoder found wrong
}

func (e *DecodeError) Error() string { return "malformed .debug_frame: " + e.Err }

// CFI answers, from the DWARF call-frame information in .debug_frame,
// whether the link register still holds the current function's return
// address at a given PC. A sampler that records LR alongside PC yields a
// caller only while that is true: once a function has pushed LR and called
// something else, LR is stale.
type CFI struct {
	fdes frame.FrameDescriptionEntries // sorted by start address, unambiguous
}

// LoadCFI reads f's .debug_frame. It returns nil, nil when f has none (built
// without -g, or stripped): callers then treat every answer as unknown.
func LoadCFI(f *elf.File) (*CFI, error) {
	sec := f.Section(".debug_frame")
	if sec == nil {
		return nil, nil
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("reading .debug_frame: %w", err)
	}
	var extents []thumb.FuncRange
	syms, err := f.Symbols()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return nil, fmt.Errorf("reading symbols: %w", err)
	}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 {
			extents = append(extents, thumb.FuncRange{Name: s.Name, Addr: uint32(s.Value) &^ 1, Size: uint32(s.Size)})
		}
	}
	return parseCFI(data, f.ByteOrder, extents)
}

// parseCFI parses .debug_frame contents. delve's parser trusts its input;
// the recover turns a panic on a malformed section into an error.
func parseCFI(data []byte, order binary.ByteOrder, funcs []thumb.FuncRange) (c *CFI, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, &DecodeError{Err: fmt.Sprint(r)}
		}
	}()
	parsed, err := frame.Parse(data, order, 0, 4, 0)
	if err != nil {
		return nil, &DecodeError{Err: err.Error()}
	}
	// Parse keeps file order but FDEForPC binary-searches: Append sorts.
	fdes := frame.FrameDescriptionEntries(nil).Append(parsed)
	cieRules := map[*frame.CommonInformationEntry]map[uint64]bool{}
	for _, fde := range fdes {
		rules, ok := cieRules[fde.CIE]
		if !ok {
			rules = cieRuleRegisters(fde.CIE.InitialInstructions)
			cieRules[fde.CIE] = rules
		}
		fde.Instructions = restoreAsCIE(fde.Instructions, rules)
	}
	return &CFI{fdes: dropAmbiguousFDEs(fdes, funcs)}, nil
}

// dropAmbiguousFDEs resolves overlapping FDEs. They arise because ld keeps
// the .debug_frame entries of functions --gc-sections removed and relocates
// them to address 0, which is where ITCM code lives on the i.MX RT (a
// Zephyr image has hundreds, over every function of an ITCM plan). In each
// overlapping group the FDEs that cover exactly a function symbol's extent
// win, each unless another FDE of the group has the same extent (a removed
// function of the same size as the one at 0); the rest is dropped so the
// answer is "unknown" rather than a guess.
func dropAmbiguousFDEs(fdes frame.FrameDescriptionEntries, funcs []thumb.FuncRange) frame.FrameDescriptionEntries {
	exact := map[[2]uint64]bool{}
	for _, fn := range funcs {
		exact[[2]uint64{uint64(fn.Addr), uint64(fn.Addr) + uint64(fn.Size)}] = true
	}
	out := fdes[:0:0]
	for i := 0; i < len(fdes); {
		j, end := i+1, fdes[i].End()
		for j < len(fdes) && fdes[j].Begin() < end {
			end = max(end, fdes[j].End())
			j++
		}
		if j == i+1 {
			out = append(out, fdes[i])
		} else {
			extents := map[[2]uint64]int{}
			for _, fde := range fdes[i:j] {
				extents[[2]uint64{fde.Begin(), fde.End()}]++
			}
			for _, fde := range fdes[i:j] {
				if e := [2]uint64{fde.Begin(), fde.End()}; exact[e] && extents[e] == 1 {
					out = append(out, fde)
				}
			}
		}
		i = j
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Begin() < out[j].Begin() })
	return out
}

// LRIsReturnAddress reports whether, just before the instruction at pc
// executes, LR still holds the return address of the function containing
// pc. known is false when no FDE covers pc (code without CFI, such as
// newlib's assembly, or a nil CFI). DW_CFA_undefined on the return-address
// column (the outermost frame) gives live=false, known=true.
//
// CFI cannot see a noreturn call that clobbers LR without saving it; GCC
// describes such a function as a leaf, so LR is reported live.
func (c *CFI) LRIsReturnAddress(pc uint32) (live, known bool) {
	if c == nil {
		return false, false
	}
	defer func() {
		if r := recover(); r != nil {
			live, known = false, false
		}
	}()
	pc &^= 1
	fde, err := c.fdes.FDEForPC(uint64(pc))
	if err != nil {
		return false, false
	}
	fc, err := fde.EstablishFrame(uint64(pc))
	if err != nil {
		return false, false
	}
	rule, ok := fc.Regs[fc.RetAddrReg]
	if !ok {
		return true, true // no rule: the ABI's initial state, LR untouched
	}
	switch rule.Rule {
	case frame.RuleSameVal:
		return true, true
	case frame.RuleRegister:
		return rule.Reg == fc.RetAddrReg, true
	default: // saved on the stack, recomputed, or undefined
		return false, true
	}
}

// DWARF call-frame opcodes that restoreAsCIE reads or writes.
const (
	cfaAdvanceLoc      = 0x1 << 6 // low 6 bits: delta
	cfaOffset          = 0x2 << 6 // low 6 bits: register; ULEB offset
	cfaRestore         = 0x3 << 6 // low 6 bits: register
	cfaSetLoc          = 0x01
	cfaAdvanceLoc1     = 0x02
	cfaAdvanceLoc2     = 0x03
	cfaAdvanceLoc4     = 0x04
	cfaRestoreExtended = 0x06
	cfaSameValue       = 0x08
	cfaDefCFAExpr      = 0x0f
	cfaExpression      = 0x10
	cfaValExpression   = 0x16
)

// cfaOperands gives, per opcode below 0x40, its operands after the opcode
// byte: 'u' ULEB128, 's' SLEB128, 'b' a ULEB128-sized block, a digit that
// many bytes (DWARF 5, 6.4.2; DW_CFA_GNU_args_size is 0x2e, and 0x2f is
// DW_CFA_GNU_negative_offset_extended). Opcodes missing here are unknown.
var cfaOperands = map[byte]string{
	0x00: "", cfaSetLoc: "4", cfaAdvanceLoc1: "1", cfaAdvanceLoc2: "2", cfaAdvanceLoc4: "4",
	0x05: "uu", cfaRestoreExtended: "u", 0x07: "u", cfaSameValue: "u", 0x09: "uu",
	0x0a: "", 0x0b: "", 0x0c: "uu", 0x0d: "u", 0x0e: "u", cfaDefCFAExpr: "b",
	cfaExpression: "ub", 0x11: "us", 0x12: "us", 0x13: "s", 0x14: "uu", 0x15: "us",
	cfaValExpression: "ub", 0x2e: "u", 0x2f: "uu",
}

// cfaNoRegister lists the opcodes whose first ULEB operand is not a
// register given a rule: the CFA's definitions and DW_CFA_GNU_args_size.
var cfaNoRegister = map[byte]bool{0x0c: true, 0x0d: true, 0x0e: true, 0x12: true, 0x2e: true}

// restoreAsCIE rewrites an FDE's instructions so that delve reads
// DW_CFA_restore as DWARF defines it: back to the rule the CIE's initial
// instructions give the register. delve gives a register the CIE leaves
// without a rule the rule "undefined", which says the caller's value is
// lost; for LR that reads as the outermost frame. GCC restores LR so after
// every early-return epilogue (pop {…, pc} in the middle of a function),
// so the unwinder stopped and LR samples read as stale there. Such a
// restore becomes DW_CFA_same_value, the ABI's rule for a register
// nothing saved. thumb.Instructions it cannot decode are returned unchanged.
func restoreAsCIE(instrs []byte, cieRules map[uint64]bool) []byte {
	ops, ok := decodeCFA(instrs)
	if !ok {
		return instrs
	}
	out := make([]byte, 0, len(instrs)+8)
	changed := false
	for _, o := range ops {
		if o.restore && !cieRules[o.reg] { // with a CIE rule delve restores it itself
			out = binary.AppendUvarint(append(out, cfaSameValue), o.reg)
			changed = true
			continue
		}
		out = append(out, instrs[o.start:o.end]...)
	}
	if !changed {
		return instrs
	}
	return out
}

// cieRuleRegisters lists the registers a CIE's initial instructions give a
// rule (any opcode naming a register, except the CFA's own), as far as
// they decode.
func cieRuleRegisters(instrs []byte) map[uint64]bool {
	regs := map[uint64]bool{}
	ops, _ := decodeCFA(instrs)
	for _, o := range ops {
		if o.hasReg {
			regs[o.reg] = true
		}
	}
	return regs
}

// cfaOp is one decoded call-frame instruction, instrs[start:end].
type cfaOp struct {
	start, end int
	reg        uint64 // the register it gives a rule, if hasReg
	hasReg     bool
	restore    bool // DW_CFA_restore or DW_CFA_restore_extended
}

// decodeCFA splits call-frame instructions into instructions; ok is false
// if an opcode is unknown or runs past the end, and ops then holds those
// before it.
func decodeCFA(instrs []byte) (ops []cfaOp, ok bool) {
	for p := 0; p < len(instrs); {
		op := instrs[p]
		o := cfaOp{start: p}
		p++
		switch op >> 6 {
		case cfaAdvanceLoc >> 6:
		case cfaOffset >> 6:
			o.reg, o.hasReg = uint64(op&0x3f), true
			if p = skipLEB(instrs, p); p < 0 {
				return ops, false
			}
		case cfaRestore >> 6:
			o.reg, o.hasReg, o.restore = uint64(op&0x3f), true, true
		default:
			operands, known := cfaOperands[op]
			if !known {
				return ops, false
			}
			if len(operands) > 0 && operands[0] == 'u' && !cfaNoRegister[op] {
				reg, n := readULEB(instrs[p:])
				if n == 0 {
					return ops, false
				}
				o.reg, o.hasReg, o.restore = reg, true, op == cfaRestoreExtended
			}
			if p = skipOperands(instrs, p, operands); p < 0 {
				return ops, false
			}
		}
		o.end = p
		ops = append(ops, o)
	}
	return ops, true
}

// skipOperands returns the offset after operands ops (cfaOperands' form)
// at p, -1 if they run past the end.
func skipOperands(b []byte, p int, ops string) int {
	for _, o := range ops {
		switch o {
		case 'u', 's':
			p = skipLEB(b, p)
		case 'b':
			n, k := readULEB(b[p:])
			if k == 0 || n > uint64(len(b)) {
				return -1
			}
			p += k + int(n)
		default:
			p += int(o - '0')
		}
		if p < 0 || p > len(b) {
			return -1
		}
	}
	return p
}

// skipLEB returns the offset after the LEB128 number at p, -1 if it runs
// past the end.
func skipLEB(b []byte, p int) int {
	for ; p < len(b); p++ {
		if b[p]&0x80 == 0 {
			return p + 1
		}
	}
	return -1
}

// readULEB reads a ULEB128 number; n is its length, 0 if malformed.
func readULEB(b []byte) (v uint64, n int) {
	v, n = binary.Uvarint(b)
	if n <= 0 {
		return 0, 0
	}
	return v, n
}
