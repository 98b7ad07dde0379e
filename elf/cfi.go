// SPDX-License-Identifier: Apache-2.0

package elf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	goelf "debug/elf"

	"github.com/go-delve/delve/pkg/dwarf/frame"
)

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
func LoadCFI(f *goelf.File) (*CFI, error) {
	sec := f.Section(".debug_frame")
	if sec == nil {
		return nil, nil
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("reading .debug_frame: %w", err)
	}
	var extents []FuncRange
	syms, err := f.Symbols()
	if err != nil && !errors.Is(err, goelf.ErrNoSymbols) {
		return nil, fmt.Errorf("reading symbols: %w", err)
	}
	for _, s := range syms {
		if goelf.ST_TYPE(s.Info) == goelf.STT_FUNC && s.Size > 0 {
			extents = append(extents, FuncRange{Name: s.Name, Addr: uint32(s.Value) &^ 1, Size: uint32(s.Size)})
		}
	}
	return parseCFI(data, f.ByteOrder, extents)
}

// parseCFI parses .debug_frame contents. delve's parser trusts its input;
// the recover turns a panic on a malformed section into an error.
func parseCFI(data []byte, order binary.ByteOrder, funcs []FuncRange) (c *CFI, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("malformed .debug_frame: %v", r)
		}
	}()
	parsed, err := frame.Parse(data, order, 0, 4, 0)
	if err != nil {
		return nil, fmt.Errorf("malformed .debug_frame: %w", err)
	}
	// Parse keeps file order but FDEForPC binary-searches: Append sorts.
	fdes := frame.FrameDescriptionEntries(nil).Append(parsed)
	return &CFI{fdes: dropAmbiguousFDEs(fdes, funcs)}, nil
}

// dropAmbiguousFDEs resolves overlapping FDEs. They arise because ld keeps
// the .debug_frame entries of functions --gc-sections removed and relocates
// them to address 0, which is where ITCM code lives on the i.MX RT. In each
// overlapping group the FDE that covers exactly a function symbol's extent
// wins; if none does, the whole group is dropped so the answer is "unknown"
// rather than a guess.
func dropAmbiguousFDEs(fdes frame.FrameDescriptionEntries, funcs []FuncRange) frame.FrameDescriptionEntries {
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
			var keep []*frame.FrameDescriptionEntry
			for _, fde := range fdes[i:j] {
				if exact[[2]uint64{fde.Begin(), fde.End()}] {
					keep = append(keep, fde)
				}
			}
			if len(keep) == 1 {
				out = append(out, keep[0])
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
