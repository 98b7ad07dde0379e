// SPDX-License-Identifier: Apache-2.0

package thumb

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/internal/armtest"
)

// objdumpFlow is the flow the oracle's mnemonic and operands imply, and
// the branch target objdump prints ("b.n 8000104 <loop+0x8>").
func objdumpFlow(in armtest.Insn) (flow Flow, conditional bool, target uint32, hasTarget bool) {
	m, ops := in.Mnemonic, in.Operands
	base := strings.TrimSuffix(strings.TrimSuffix(m, ".n"), ".w")
	dest := ops
	if i := strings.LastIndex(ops, ", "); i >= 0 { // cbz r0, 8000104 <f+0x8>
		dest = ops[i+2:]
	}
	target, _, hasTarget = armtest.Destination(dest)
	conds := []string{"eq", "ne", "cs", "hs", "cc", "lo", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt", "le"}
	isCond := func(s string) bool {
		for _, c := range conds {
			if s == c {
				return true
			}
		}
		return false
	}
	writesPC := strings.HasPrefix(ops, "pc,") || strings.Contains(ops, "pc}")
	switch {
	case base == "bl" || base == "blx":
		return FlowCall, false, target, hasTarget
	case base == "b":
		return FlowBranch, false, target, hasTarget
	case base == "cbz" || base == "cbnz":
		return FlowBranch, true, target, hasTarget
	case strings.HasPrefix(base, "b") && len(base) == 3 && isCond(base[1:]):
		return FlowBranch, true, target, hasTarget
	case strings.HasPrefix(base, "bx"), base == "tbb", base == "tbh", base == "pop" && writesPC,
		strings.HasPrefix(base, "ldr") && strings.HasPrefix(ops, "pc,"),
		strings.HasPrefix(base, "ldm") && writesPC,
		(base == "mov" || base == "add") && strings.HasPrefix(ops, "pc,"):
		return FlowJump, len(base) > 2 && strings.HasPrefix(base, "bx") && isCond(base[2:]), 0, false
	}
	return FlowNext, false, 0, false
}

// TestInstructionsAgainstObjdump decodes every function of the test
// firmware (-O0, -Os, -O2) and the veneer images and checks each
// instruction against objdump: the same addresses and lengths, calls,
// direct branches with objdump's targets, returns and indirect jumps, and
// every conditional branch (and jump in an IT block, "bxeq lr") marked so.
func TestInstructionsAgainstObjdump(t *testing.T) {
	armtest.NeedTools(t, "arm-none-eabi-objdump")
	e := armtest.BuildExtras(t)
	paths := []string{e.ELF, e.Pure}
	for _, v := range []string{"O0-dwarf4", "Os-dwarf4", "O2-dwarf4"} {
		paths = append(paths, filepath.Join(armtest.SymbolizeDir(t), v+".elf"))
	}
	for _, path := range paths {
		f, code := openCode(t, path)
		funcs, _ := funcRanges(t, f)
		byFunc := map[string][]armtest.Insn{}
		for _, in := range armtest.Objdump(t, path) {
			if !in.ARM {
				byFunc[in.Func] = append(byFunc[in.Func], in)
			}
		}
		var checked, branches, jumps, conditional int
		for _, fr := range funcs {
			want := byFunc[fr.Name]
			if fr.Size == 0 || len(want) == 0 {
				continue
			}
			got := map[uint32]Instruction{}
			for _, in := range Instructions(code, fr.Addr, fr.Size) {
				got[in.Addr] = in
			}
			for _, w := range want {
				if w.Addr-fr.Addr >= fr.Size {
					continue
				}
				g, ok := got[w.Addr]
				if !ok {
					t.Errorf("%s: %s: no instruction at %#x (%s %s)", path, fr.Name, w.Addr, w.Mnemonic, w.Operands)
					continue
				}
				checked++
				flow, cond, target, hasTarget := objdumpFlow(w)
				if g.Size != w.Len || g.Flow != flow || (hasTarget && g.Target != target) {
					t.Errorf("%s: %s at %#x: %s %s: got size %d flow %d target %#x; objdump: size %d flow %d target %#x",
						path, fr.Name, w.Addr, w.Mnemonic, w.Operands, g.Size, g.Flow, g.Target, w.Len, flow, target)
				}
				if cond && !g.Conditional {
					t.Errorf("%s: %s at %#x: %s %s is conditional, decoded as not", path, fr.Name, w.Addr, w.Mnemonic, w.Operands)
				}
				switch {
				case g.Flow == FlowBranch:
					branches++
				case g.Flow == FlowJump:
					jumps++
				}
				if g.Conditional && g.Flow == FlowJump {
					conditional++
				}
			}
		}
		t.Logf("%s: %d instructions, %d branches, %d jumps (%d conditional)", filepath.Base(path), checked, branches, jumps, conditional)
		if checked == 0 || branches == 0 || jumps == 0 {
			t.Errorf("%s: nothing to check (%d instructions, %d branches, %d jumps)", path, checked, branches, jumps)
		}
	}
}
