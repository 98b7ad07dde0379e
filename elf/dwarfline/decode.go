// SPDX-License-Identifier: Apache-2.0

package dwarfline

// This file decodes one compile unit: its line program and its tree of
// subprograms and inlined subroutines, with the names they resolve to
// through abstract origins and specifications, and the code at address 0
// told apart from the functions the linker removed. It is longer than
// most because it is one walk whose steps share one state (unitLoader):
// cut into files, each step would be read away from what it fills in.

import (
	"cmp"
	"debug/dwarf"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/tcmprof/tcmprof/elf/symname"
)

// lineRow is one row of a DWARF line table. end marks the first address
// after a sequence, which has no line.
type lineRow struct {
	file      int32 // index into unitTables.files
	line, col int32
	end       bool
}

// node is a subprogram (parent -1) or an inlined subroutine.
type node struct {
	parent   int32
	name     int32 // index into unitTables.names
	callFile int32 // for an inlined node, where its parent called it: index into unitTables.files, -1 if unknown
	callLine int32
	callCol  int32
	depth    int32
}

// Subprogram is a concrete function DWARF has, as it names it.
type Subprogram struct {
	Name, Linkage string
	Source        string   // the compile unit's file, absolute
	starts        []uint32 // start of each of its ranges
}

// unitTables is what one compile unit's DWARF says about its code, decoded
// the first time an address falls in the unit: its line rows, its
// subprogram and inlined-subroutine nodes, and both merged into one pcMap;
// and its concrete functions by the start of each of their ranges.
type unitTables struct {
	source string // the unit's source file, absolute
	rows   []lineRow
	files  []string
	nodes  []node
	names  []Name
	pcs    pcMap
	subs   map[uint32]*Subprogram
}

// pcMap answers both questions about a PC, its line row and its innermost
// node, with one binary search: start[i] ≤ pc < start[i+1] has line row
// row[i] and node node[i] (-1: none). It is the union of the line table's
// and the inline tree's step functions.
type pcMap struct {
	start []uint32
	row   []int32
	node  []int32
}

func (m *pcMap) at(pc uint32) (row, node int32) {
	i := upperBound(m.start, pc) - 1
	if i < 0 {
		return -1, -1
	}
	return m.row[i], m.node[i]
}

// mergePCMap merges the line rows at lineAddrs (an end_sequence row ends a
// step with no row) and the node segments into one pcMap.
func mergePCMap(lineAddrs []uint32, rows []lineRow, segStart []uint32, segNode []int32) pcMap {
	var m pcMap
	row, nd := int32(-1), int32(-1)
	i, j := 0, 0
	for i < len(lineAddrs) || j < len(segStart) {
		var at uint32
		switch {
		case j == len(segStart) || (i < len(lineAddrs) && lineAddrs[i] < segStart[j]):
			at = lineAddrs[i]
		default:
			at = segStart[j]
		}
		for ; i < len(lineAddrs) && lineAddrs[i] == at; i++ {
			row = int32(i)
			if rows[i].end {
				row = -1
			}
		}
		for ; j < len(segStart) && segStart[j] == at; j++ {
			nd = segNode[j]
		}
		if k := len(m.start) - 1; k >= 0 && m.row[k] == row && m.node[k] == nd {
			continue
		}
		m.start = append(m.start, at)
		m.row = append(m.row, row)
		m.node = append(m.node, nd)
	}
	return m
}

// extent returns the address ranges [lo, hi] the unit's line rows or nodes
// cover, for a unit that neither .debug_aranges nor its own DIE places.
func (t *unitTables) extent() [][2]uint64 {
	var rs [][2]uint64
	m := &t.pcs
	for i, start := range m.start {
		if m.row[i] < 0 && m.node[i] < 0 {
			continue
		}
		end := uint64(1) << 32
		if i+1 < len(m.start) {
			end = uint64(m.start[i+1])
		}
		if k := len(rs) - 1; k >= 0 && rs[k][1] == uint64(start) {
			rs[k][1] = end
			continue
		}
		rs = append(rs, [2]uint64{uint64(start), end})
	}
	return rs
}

// upperBound returns the index of the first element of xs greater than v.
func upperBound(xs []uint32, v uint32) int {
	lo, hi := 0, len(xs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if xs[m] <= v {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// isTombstone reports DWARF addresses that stand for code the linker
// dropped: GNU ld resolves them to 0, lld to -1 or -2. Where a function
// really starts at 0 (codeAt0), an address 0 may be either: originCode
// tells them apart.
func isTombstone(addr uint64, codeAt0 bool) bool {
	return (addr == 0 && !codeAt0) || addr >= 0xfffffffe
}

// originCode is what the symbol table places at address 0. On the i.MX RT
// that is where ITCM starts, so an ITCM plan puts the first relocated
// function there; and GNU ld resolves every address of every function
// --gc-sections removed (subprogram ranges, line sequences, aranges,
// frame descriptions) to 0 as well: hundreds of them in a Zephyr image,
// many longer than the real function. The linker's symbol table is what
// it really placed, so a DWARF function at 0 is believed only if a symbol
// at 0 bears its name and its size; inlines within it and its line
// sequence go with it.
type originCode struct {
	syms []Symbol // the FUNC symbols at 0 (aliases)
}

func (o originCode) exists() bool { return len(o.syms) > 0 }

// describes reports whether the DWARF function named name (linkage: its
// linkage name, "" if none) whose range at 0 is size bytes long is the
// code at 0: a symbol there is named so (a clone by the name it was made
// from) and has that size, if it gives one.
func (o originCode) describes(name, linkage string, size uint64) bool {
	for _, s := range o.syms {
		if s.Size != 0 && uint64(s.Size) != size {
			continue
		}
		base, _ := symname.SplitClone(s.Name)
		switch {
		case linkage != "" && base == linkage, name != "" && base == name:
			return true
		case linkage == "" && name != "" && strings.HasPrefix(base, "_Z"):
			// GCC gives some C++ functions (templates taking a lambda)
			// no linkage name: their name is one of the mangled name's
			// <length><identifier> parts.
			if strings.Contains(base, strconv.Itoa(len(name))+name) {
				return true
			}
		}
	}
	return false
}

// unitLoader decodes one compile unit into unitTables, walking its DIEs
// once. The unit's Data reports offsets from the unit's start; the loader
// keeps DIEs by their offset in .debug_info.
type unitLoader struct {
	x  *Index
	u  *unit
	ud *unitData
	t  *unitTables

	cuFiles []int32 // the line table's file indices → t.files (DW_AT_call_file indexes them)
	// Where code starts at 0 (originCode): the line sequences at 0, the
	// nodes believed there and where the function believed there ends.
	originSeqs  []rowSpan
	originNodes map[int32]bool
	originEnd   uint32
	cuSource    string   // the unit's source file, absolute
	lineAddrs   []uint32 // address of each of t.rows
	seqRows     []seqRow
	fileIdx     map[string]int32
	nameIdx     map[Name]int32
	ranges      []nodeRange
	segStart    []uint32 // node segments: segStart[i] ≤ pc < segStart[i+1] lies in node segNode[i] (-1: none)
	segNode     []int32
	dies        map[dwarf.Offset]dieName // by offset in .debug_info
	nodeDIEs    []dwarf.Offset           // DIE of each node (in .debug_info), to resolve its name at the end
	nodeSubs    []*Subprogram            // subprogram of each root node; nil for inlines
}

type seqRow struct {
	addr  uint32
	order int32 // position in the input, so that the last row at an address wins
	row   lineRow
}

type nodeRange struct {
	lo, hi uint32
	node   int32
	depth  int32
}

// attrMIPSLinkageName is DW_AT_MIPS_linkage_name, which GCC emits instead
// of DW_AT_linkage_name for DWARF 2 and 3.
const attrMIPSLinkageName dwarf.Attr = 0x2007

// dieName is what a subprogram or inlined-subroutine DIE says about its
// name, directly or through its abstract origin / specification (ref, an
// offset in .debug_info).
type dieName struct {
	name, linkage string
	ref           dwarf.Offset
	hasRef        bool
}

// decodeUnit reads unit i's line program and subprogram / inline tree.
// What cannot be read is left out with a warning: those addresses fall
// back to the symbol table. With scan, only the DIEs scanUnit finds are
// read (the whole unit if it cannot scan it); without, every DIE.
func (x *Index) decodeUnit(i int, scan bool) *unitTables {
	l := &unitLoader{
		x:       x,
		u:       x.unit(i),
		ud:      x.open(i),
		t:       &unitTables{subs: map[uint32]*Subprogram{}},
		fileIdx: map[string]int32{},
		nameIdx: map[Name]int32{},
		dies:    map[dwarf.Offset]dieName{},

		originNodes: map[int32]bool{},
	}
	if err := l.walk(i, scan); err != nil {
		x.warn(fmt.Sprintf("DWARF partly unreadable (%v): some addresses fall back to the symbol table", err))
	}
	l.settleOriginSequences()
	l.t.source = l.cuSource
	l.finishLines()
	l.finishNames()
	l.finishSegments()
	l.t.pcs = mergePCMap(l.lineAddrs, l.t.rows, l.segStart, l.segNode)
	return l.t
}

// walk reads the unit DIE and its line table, then the subprogram and
// inlined-subroutine nodes with their ranges.
func (l *unitLoader) walk(i int, scan bool) error {
	u := l.u
	if l.ud.err != nil {
		return fmt.Errorf("unit at 0x%x: %w", u.start, l.ud.err)
	}
	r := l.ud.d.Reader()
	cu, err := r.Next()
	if err != nil || cu == nil {
		return err
	}
	if cu.Tag == dwarf.TagCompileUnit || cu.Tag == dwarf.TagPartialUnit {
		l.readLines(cu)
	}
	if !cu.Children {
		return nil
	}
	// Every DIE takes at least one byte, but debug/dwarf can return null
	// entries forever from some corrupt units: stop at the unit's size.
	budget := int(u.end - u.die)
	if scan {
		if found, err := l.x.scanUnit(i); err == nil {
			// Only the found DIEs are read, each alone: its enclosing
			// node is what its nearest found ancestor encloses its
			// children in.
			selves := make([]int32, len(found))
			for k, f := range found {
				rel := f.off - dwarf.Offset(u.start)
				r.Seek(rel)
				e, err := r.Next()
				if err != nil || e == nil || e.Offset != rel {
					return &DecodeError{Section: ".debug_info", Offset: uint64(f.off), Err: fmt.Sprintf("DIE unreadable (%v)", err)}
				}
				enclosing := int32(-1)
				if f.parent >= 0 {
					enclosing = selves[f.parent]
				}
				selves[k] = l.visit(e, enclosing)
			}
			return nil
		}
		r.Seek(0)
		r.Next()
	}
	for more := true; more; {
		if more, err = l.walkTree(r, &budget); err != nil {
			return err
		}
	}
	return nil
}

// walkTree reads the DIE at r's position, a child of the unit DIE or the
// subprogram or inline scanUnit found, and its subtree, adding nodes. more
// is false at the null entry that ends the unit DIE's children.
func (l *unitLoader) walkTree(r *dwarf.Reader, budget *int) (more bool, err error) {
	var stack []int32 // per open DIE with children: the node enclosing its children
	for {
		e, err := r.Next()
		if err != nil {
			return false, err
		}
		if e == nil {
			return false, nil
		}
		if *budget--; *budget < 0 {
			return false, &DecodeError{Section: ".debug_info", Offset: l.u.start,
				Err: fmt.Sprintf("unit yields more entries than its %d bytes can hold", l.u.end-l.u.die)}
		}
		if e.Tag == 0 {
			if len(stack) == 0 {
				return false, nil
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return true, nil
			}
			continue
		}
		enclosing := int32(-1)
		if len(stack) > 0 {
			enclosing = stack[len(stack)-1]
		}
		self := enclosing
		if e.Tag == dwarf.TagSubprogram || e.Tag == dwarf.TagInlinedSubroutine {
			self = l.visit(e, enclosing)
		}
		if e.Children {
			if !skipSubtree[e.Tag] {
				stack = append(stack, self)
				continue
			}
			// Nothing below holds code; declarations there that a
			// subprogram names are read on demand (readDIEName).
			r.SkipChildren()
		}
		if len(stack) == 0 {
			return true, nil
		}
	}
}

// visit records subprogram or inlined-subroutine DIE e, whose enclosing
// node is enclosing (-1: none), and returns the node that encloses its
// children: its own if it covers code, else enclosing.
func (l *unitLoader) visit(e *dwarf.Entry, enclosing int32) int32 {
	l.recordName(e, l.u, l.ud)
	parent := int32(-1)
	if e.Tag == dwarf.TagInlinedSubroutine {
		if enclosing < 0 {
			return enclosing // an inline outside any concrete function: nothing to attach it to
		}
		parent = enclosing
	}
	if idx, ok := l.addNode(e, parent); ok {
		return idx
	}
	return enclosing
}

// tagGNUCallSite is DW_TAG_GNU_call_site, GCC's call sites before DWARF 5.
const tagGNUCallSite dwarf.Tag = 0x4109

// skipSubtree lists the tags whose children never carry code ranges:
// types (class members are declarations; their code is a separate DIE at
// unit or namespace level), parameters, variables and call sites. Skipping
// them (by DW_AT_sibling) halves the walk.
var skipSubtree = map[dwarf.Tag]bool{
	dwarf.TagStructType: true, dwarf.TagClassType: true, dwarf.TagUnionType: true,
	dwarf.TagEnumerationType: true, dwarf.TagSubroutineType: true, dwarf.TagArrayType: true,
	dwarf.TagFormalParameter: true, dwarf.TagVariable: true,
	dwarf.TagCallSite: true, tagGNUCallSite: true,
}

// recordName records what DIE e of unit v (read through vd) says about
// its name.
func (l *unitLoader) recordName(e *dwarf.Entry, v *unit, vd *unitData) {
	var d dieName
	d.name, _ = e.Val(dwarf.AttrName).(string)
	d.linkage, _ = e.Val(dwarf.AttrLinkageName).(string)
	if d.linkage == "" {
		d.linkage, _ = e.Val(attrMIPSLinkageName).(string)
	}
	for _, a := range []dwarf.Attr{dwarf.AttrAbstractOrigin, dwarf.AttrSpecification} {
		if ref, ok := e.Val(a).(dwarf.Offset); ok {
			// The Data counts from the unit's start, as unit-relative
			// references do; a DW_FORM_ref_addr is already an offset
			// in .debug_info.
			if !vd.refAddrs || l.x.form(v, vd, e.Offset, a) != formRefAddr {
				ref += dwarf.Offset(v.start)
			}
			d.ref, d.hasRef = ref, true
			break
		}
	}
	l.dies[dwarf.Offset(v.start)+e.Offset] = d
}

// addNode records a subprogram or inline DIE that covers code.
func (l *unitLoader) addNode(e *dwarf.Entry, parent int32) (int32, bool) {
	rs, err := l.ud.d.Ranges(e)
	if err != nil || len(rs) == 0 {
		return 0, false
	}
	t := l.t
	n := node{parent: parent, callFile: -1}
	if parent >= 0 {
		n.depth = t.nodes[parent].depth + 1
		if f, ok := e.Val(dwarf.AttrCallFile).(int64); ok && f >= 0 && f < int64(len(l.cuFiles)) {
			n.callFile = l.cuFiles[f]
		}
		n.callLine = int32(intAttr(e, dwarf.AttrCallLine))
		n.callCol = int32(intAttr(e, dwarf.AttrCallColumn))
	}
	idx := int32(len(t.nodes))
	kept := rs[:0:0]
	for _, rg := range rs {
		lo, hi := rg[0], rg[1]
		if hi <= lo || hi > 1<<32 || isTombstone(lo, l.x.origin.exists()) {
			continue
		}
		if lo == 0 && !l.atOrigin(e, parent, hi) {
			continue
		}
		if lo == 0 {
			l.originNodes[idx] = true
		}
		kept = append(kept, rg)
		l.ranges = append(l.ranges, nodeRange{lo: uint32(lo), hi: uint32(hi - 1), node: idx, depth: n.depth})
	}
	if len(kept) == 0 {
		return 0, false
	}
	var sub *Subprogram
	if parent < 0 {
		sub = &Subprogram{Source: l.cuSource}
		for _, rg := range kept {
			sub.starts = append(sub.starts, uint32(rg[0]))
			t.subs[uint32(rg[0])] = sub
		}
	}
	t.nodes = append(t.nodes, n)
	l.nodeDIEs = append(l.nodeDIEs, dwarf.Offset(l.u.start)+e.Offset)
	l.nodeSubs = append(l.nodeSubs, sub)
	return idx, true
}

// atOrigin reports whether DIE e's range [0, hi) describes the code the
// image has at 0 (see originCode): for a subprogram, whether a symbol at 0
// bears its name and size; for an inline, whether its enclosing node was
// believed at 0. A subprogram believed there sets the end its line
// sequence must reach (settleOriginSequences).
func (l *unitLoader) atOrigin(e *dwarf.Entry, parent int32, hi uint64) bool {
	if parent >= 0 {
		return l.originNodes[parent]
	}
	name, linkage := l.resolveName(dwarf.Offset(l.u.start) + e.Offset)
	if !l.x.origin.describes(name, linkage, hi) {
		return false
	}
	l.originEnd = max(l.originEnd, uint32(hi))
	return true
}

func intAttr(e *dwarf.Entry, a dwarf.Attr) int64 {
	v, _ := e.Val(a).(int64)
	return v
}

// readLines reads the CU's line program, its file-index mapping and its
// source file name.
func (l *unitLoader) readLines(cu *dwarf.Entry) {
	compDir, _ := cu.Val(dwarf.AttrCompDir).(string)
	source, _ := cu.Val(dwarf.AttrName).(string)
	if source != "" {
		source = joinCompDir(compDir, source)
	}
	l.cuSource = source
	// debug/dwarf joins relative names with comp_dir itself before DWARF 5;
	// from 5 on it leaves a relative directory entry unjoined.
	version, size := 0, 0
	if off, ok := cu.Val(dwarf.AttrStmtList).(int64); ok {
		version, size = l.x.lineProgram(off)
	}
	if version < 5 {
		compDir = ""
	}
	// A row takes three bytes of line program or more.
	l.seqRows = make([]seqRow, 0, size/3)
	lr, err := l.ud.d.LineReader(cu)
	if err != nil {
		l.x.warn(fmt.Sprintf("line table of %s unreadable (%v)", source, err))
		return
	}
	if lr == nil {
		return
	}
	fileOf := map[*dwarf.LineFile]int32{}
	for _, f := range lr.Files() {
		l.cuFiles = append(l.cuFiles, l.file(f, compDir, fileOf))
	}
	// Rows of one sequence are kept only if the sequence starts at a real
	// address; the linker leaves dropped functions' sequences at 0. Where
	// code really starts at 0, the sequences there wait for the DIEs to
	// tell which one is real (settleOriginSequences).
	seq, first := len(l.seqRows), true // where the sequence's rows start
	keep, atZero := false, false
	var le dwarf.LineEntry
	var lastFile *dwarf.LineFile // rows run in one file for a while
	lastIdx := int32(-1)
	for n := 0; ; n++ {
		if n > len(l.x.sec.line) { // each row takes at least one opcode byte
			l.x.warn(fmt.Sprintf("line table of %s yields more rows than .debug_line can hold", source))
			break
		}
		if err := lr.Next(&le); err != nil {
			if !errors.Is(err, io.EOF) {
				l.x.warn(fmt.Sprintf("line table of %s cut short (%v)", source, err))
			}
			break
		}
		if first {
			keep, first = !isTombstone(le.Address, l.x.origin.exists()), false
			atZero = le.Address == 0
		}
		if le.Address < 1<<32 {
			if le.File != lastFile {
				lastFile, lastIdx = le.File, l.file(le.File, compDir, fileOf)
			}
			row := lineRow{file: lastIdx, line: int32(le.Line), col: int32(le.Column), end: le.EndSequence}
			l.seqRows = append(l.seqRows, seqRow{addr: uint32(le.Address), order: int32(len(l.seqRows)), row: row})
		}
		if le.EndSequence {
			switch {
			case !keep:
				l.seqRows = l.seqRows[:seq]
			case atZero && le.Address < 1<<32:
				l.originSeqs = append(l.originSeqs, rowSpan{from: seq, to: len(l.seqRows), end: uint32(le.Address)})
			}
			seq, first = len(l.seqRows), true
		}
	}
	l.seqRows = l.seqRows[:seq] // an unfinished sequence
}

// rowSpan is one line sequence's rows, seqRows[from:to], ending at end.
type rowSpan struct {
	from, to int
	end      uint32
}

// settleOriginSequences keeps, of the unit's line sequences that start at
// 0, the one of the function it really has there (atOrigin): the shortest
// that reaches the end of that function (with -ffunction-sections it ends
// there exactly; without, it runs on over the unit's other functions).
// The others are removed functions'. A unit with nothing at 0 keeps none.
func (l *unitLoader) settleOriginSequences() {
	if len(l.originSeqs) == 0 {
		return
	}
	best := -1
	if l.originEnd > 0 {
		for k, s := range l.originSeqs {
			if s.end >= l.originEnd && (best < 0 || s.end < l.originSeqs[best].end) {
				best = k
			}
		}
	}
	kept := l.seqRows[:0]
	next := 0 // the next sequence at 0, in row order
	for i := 0; i < len(l.seqRows); {
		if next < len(l.originSeqs) && i == l.originSeqs[next].from {
			s := l.originSeqs[next]
			if next == best {
				kept = append(kept, l.seqRows[s.from:s.to]...)
			}
			i, next = s.to, next+1
			continue
		}
		kept = append(kept, l.seqRows[i])
		i++
	}
	l.seqRows, l.originSeqs = kept, nil
}

// file interns a line-table file name as an absolute path.
func (l *unitLoader) file(f *dwarf.LineFile, compDir string, cache map[*dwarf.LineFile]int32) int32 {
	if f == nil {
		return -1
	}
	if i, ok := cache[f]; ok {
		return i
	}
	name := joinCompDir(compDir, f.Name)
	i, ok := l.fileIdx[name]
	if !ok {
		i = int32(len(l.t.files))
		l.t.files = append(l.t.files, name)
		l.fileIdx[name] = i
	}
	cache[f] = i
	return i
}

// joinCompDir makes a DWARF file name absolute (if comp_dir is) and clean:
// llvm-symbolizer and addr2line print comp_dir/dir/../../file verbatim; we
// print the file it names.
func joinCompDir(compDir, name string) string {
	if name == "" {
		return ""
	}
	if !path.IsAbs(name) && compDir != "" {
		name = compDir + "/" + name
	}
	return path.Clean(name)
}

// finishLines sorts the rows by address. At one address an end_sequence
// row goes first (a sequence often ends where the next begins), and among
// the others the last one wins: GCC emits several rows per address
// (location views) and the last is the statement being executed.
func (l *unitLoader) finishLines() {
	rows := l.seqRows
	slices.SortFunc(rows, func(a, b seqRow) int {
		if a.addr != b.addr {
			return cmp.Compare(a.addr, b.addr)
		}
		if a.row.end != b.row.end {
			if a.row.end {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.order, b.order)
	})
	// Keep one row per address: the last, or the end row alone.
	l.lineAddrs = make([]uint32, 0, len(rows))
	l.t.rows = make([]lineRow, 0, len(rows))
	for i := 0; i < len(rows); i++ {
		if i+1 < len(rows) && rows[i+1].addr == rows[i].addr {
			continue
		}
		l.lineAddrs = append(l.lineAddrs, rows[i].addr)
		l.t.rows = append(l.t.rows, rows[i].row)
	}
	l.seqRows = nil
}

// finishNames resolves each node's name through abstract origins and
// specifications, and for a subprogram DWARF gives no linkage name (GCC
// omits it for templates instantiated with a lambda) takes the mangled ELF
// symbol at its address.
func (l *unitLoader) finishNames() {
	t := l.t
	for i, off := range l.nodeDIEs {
		name, linkage := l.resolveName(off)
		n := &t.nodes[i]
		if sub := l.nodeSubs[i]; sub != nil {
			sub.Name, sub.Linkage = name, linkage
			for _, start := range sub.starts {
				if z, ok := l.x.zSyms[start]; ok && linkage == "" {
					linkage = z
				}
			}
		}
		fn := NameOf(name, linkage)
		idx, ok := l.nameIdx[fn]
		if !ok {
			idx = int32(len(t.names))
			t.names = append(t.names, fn)
			l.nameIdx[fn] = idx
		}
		n.name = idx
	}
	l.dies, l.nodeDIEs, l.nodeSubs, l.nameIdx = nil, nil, nil, nil
}

func (l *unitLoader) resolveName(off dwarf.Offset) (name, linkage string) {
	for hops := 0; hops < 16; hops++ { // bounded: corrupt DWARF may loop
		d, ok := l.dies[off]
		if !ok {
			d = l.readDIEName(off)
		}
		if name == "" {
			name = d.name
		}
		if linkage == "" {
			linkage = d.linkage
		}
		if linkage != "" || !d.hasRef {
			break
		}
		off = d.ref
	}
	return name, linkage
}

// readDIEName reads a DIE the walk did not record (a declaration inside a
// skipped type, or a DIE of another unit) at off in .debug_info.
func (l *unitLoader) readDIEName(off dwarf.Offset) dieName {
	v, vd := l.u, l.ud
	if uint64(off) < v.start || off >= v.end {
		i := l.x.unitOf(uint64(off))
		if i < 0 {
			return dieName{}
		}
		v, vd = l.x.unit(i), l.x.open(i)
		if vd.err != nil {
			return dieName{}
		}
	}
	r := vd.d.Reader()
	rel := off - dwarf.Offset(v.start)
	r.Seek(rel)
	e, err := r.Next()
	if err != nil || e == nil || e.Offset != rel {
		return dieName{}
	}
	l.recordName(e, v, vd)
	return l.dies[off]
}

// finishSegments turns the nested node ranges into flat segments, each
// naming its innermost node. Properly nested ranges make this a stack sweep.
func (l *unitLoader) finishSegments() {
	rs := l.ranges
	slices.SortFunc(rs, func(a, b nodeRange) int {
		// Of nodes with the same range (aliases in assembly: __adddf3
		// and __aeabi_dadd) the later DIE is innermost, as for
		// llvm-symbolizer.
		return cmp.Or(cmp.Compare(a.lo, b.lo), cmp.Compare(a.depth, b.depth), cmp.Compare(b.hi, a.hi), cmp.Compare(a.node, b.node))
	})
	// hi is inclusive (stored as last address) so that ranges ending at
	// 2^32 fit; a point p is covered while p <= hi.
	points := make([]uint64, 0, 2*len(rs))
	for _, r := range rs {
		points = append(points, uint64(r.lo), uint64(r.hi)+1)
	}
	slices.Sort(points)
	var stack []nodeRange
	next := 0
	for i, p := range points {
		if i > 0 && p == points[i-1] {
			continue
		}
		for len(stack) > 0 && uint64(stack[len(stack)-1].hi) < p {
			stack = stack[:len(stack)-1]
		}
		for next < len(rs) && uint64(rs[next].lo) == p {
			stack = append(stack, rs[next])
			next++
		}
		for len(stack) > 0 && uint64(stack[len(stack)-1].hi) < p {
			stack = stack[:len(stack)-1]
		}
		if p > 1<<32-1 {
			break
		}
		cur := int32(-1)
		if len(stack) > 0 {
			cur = stack[len(stack)-1].node
		}
		if k := len(l.segNode); k > 0 && l.segNode[k-1] == cur {
			continue
		}
		l.segStart = append(l.segStart, uint32(p))
		l.segNode = append(l.segNode, cur)
	}
	l.ranges = nil
}
