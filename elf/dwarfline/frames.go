// SPDX-License-Identifier: Apache-2.0

package dwarfline

import (
	"slices"

	"github.com/ianlancetaylor/demangle"
)

// Frame is one level of a PC's inline chain.
type Frame struct {
	Function string // demangled full name, e.g. "net::ip::Iface::lookup(unsigned long) const"
	Short    string // demangled without parameters and template arguments, for display
	Mangled  string // linkage name; "" for C functions
	File     string // source file, cleaned; absolute unless the DWARF's comp_dir is relative; "" if unknown
	Line     int    // 0 if unknown
	Column   int    // 0 if unknown
}

// Name is how a Frame names its function: its Function, Short and Mangled.
type Name struct {
	Function, Short, Mangled string
}

// NameOf names a function from its name and linkage (mangled) name, either
// of which may be "": C functions have no linkage name, and a function
// only the symbol table knows has no other.
func NameOf(name, linkage string) Name {
	if linkage == "" {
		return Name{Function: name, Short: name}
	}
	return Name{
		Function: demangle.Filter(linkage),
		Short:    demangle.Filter(linkage, demangle.NoParams, demangle.NoTemplateParams),
		Mangled:  linkage,
	}
}

// AppendFrames appends to dst the inline chain DWARF gives for pc (Thumb
// bit clear), innermost first: the innermost frame has the line being
// executed, each outer frame the line that called (inlined) the frame
// before it; and reports whether a DWARF function describes pc. Where none
// does but a line table covers pc, it appends one frame holding only the
// line (File, Line, Column), for the caller to name from the symbol table;
// where neither does, it returns dst as it is. A caller answering address
// after address reuses one slice instead of allocating one per address.
//
// The first address that falls in a compile unit decodes that unit's DWARF
// (Preload decodes many at once, in parallel).
func (x *Index) AppendFrames(dst []Frame, pc uint32) (frames []Frame, described bool) {
	t, ri, n := x.lookup(pc)
	if n < 0 {
		if ri < 0 {
			return dst, false
		}
		var f Frame
		row := t.rows[ri]
		t.setLine(&f, row.file, row.line, row.col)
		return append(dst, f), false
	}
	// Frames are filled in place: a Frame is too big to copy cheaply.
	base := len(dst)
	dst = slices.Grow(dst, int(t.nodes[n].depth)+1)[:base+int(t.nodes[n].depth)+1]
	frames = dst[base:]
	clear(frames)
	t.name(&frames[0], n)
	if ri >= 0 {
		row := t.rows[ri]
		t.setLine(&frames[0], row.file, row.line, row.col)
	}
	for k, nd := 1, t.nodes[n]; nd.parent >= 0 && k < len(frames); k, nd = k+1, t.nodes[nd.parent] {
		t.name(&frames[k], nd.parent)
		t.setLine(&frames[k], nd.callFile, nd.callLine, nd.callCol)
	}
	return dst, true
}

// name names frame f after node n.
func (t *unitTables) name(f *Frame, n int32) {
	name := &t.names[t.nodes[n].name]
	f.Function, f.Short, f.Mangled = name.Function, name.Short, name.Mangled
}

func (t *unitTables) setLine(f *Frame, file, line, col int32) {
	if file >= 0 && int(file) < len(t.files) {
		f.File = t.files[file]
	}
	f.Line, f.Column = int(line), int(col)
}
