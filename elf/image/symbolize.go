// SPDX-License-Identifier: Apache-2.0

package image

import (
	"strings"

	"github.com/tcmprof/tcmprof/elf/dwarfline"
)

// Symbolize returns the inline chain at addr, innermost first: the
// innermost frame has the line being executed, each outer frame the line
// that called (inlined) the frame before it. Bit 0 (Thumb) is ignored. An
// address inside a function that DWARF does not describe gets one frame
// from the symbol table (with file:line if a line table covers it). nil
// means addr is in no function (e.g. padding, data) or unknown.
//
// The first address that falls in a compile unit decodes that unit's DWARF
// (Preload decodes many at once, in parallel).
func (im *Image) Symbolize(addr uint32) []dwarfline.Frame { return im.AppendFrames(nil, addr) }

// AppendFrames appends the inline chain Symbolize returns for addr to dst
// and returns the extended slice: a caller answering address after
// address reuses one slice instead of allocating one per address.
func (im *Image) AppendFrames(dst []dwarfline.Frame, addr uint32) []dwarfline.Frame {
	pc := addr &^ 1
	frames, described := im.dwarf.AppendFrames(dst, pc)
	if described {
		return frames
	}
	// Outside every DWARF function only a symbol makes an address code:
	// line sequences also run over the padding between functions, and
	// llvm-symbolizer does not answer for padding either.
	fi := im.functionIndex(pc)
	if fi < 0 {
		return dst
	}
	im.finishFunction(fi)
	if len(frames) == len(dst) { // no line table covers pc either
		frames = append(frames, dwarfline.Frame{})
	}
	f, name := &frames[len(dst)], &im.funcNames[fi]
	f.Function, f.Short, f.Mangled = name.Function, name.Short, name.Mangled
	return frames
}

// Preload decodes, in parallel on all cores, the DWARF of every compile
// unit holding one of addrs, so that symbolizing a batch of addresses (a
// capture's PCs) does not decode unit after unit on one core. Lookups work
// without it; it only makes them start sooner.
func (im *Image) Preload(addrs []uint32) { im.dwarf.Preload(addrs) }

// symbolFrameName names a frame from the symbol table alone: the symbol
// without its clone suffix, like a DWARF name.
func symbolFrameName(fn *Function) dwarfline.Name {
	if strings.HasPrefix(fn.Base, "_Z") {
		return dwarfline.NameOf("", fn.Base)
	}
	return dwarfline.NameOf(fn.Base, "")
}
