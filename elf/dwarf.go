// SPDX-License-Identifier: Apache-2.0

package elf

import (
	"debug/dwarf"
	goelf "debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

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

// frameName is the naming part of a Frame, computed once per distinct name.
type frameName struct {
	function, short, mangled string
}

func newFrameName(name, linkage string) frameName {
	if linkage == "" {
		return frameName{function: name, short: name}
	}
	return frameName{
		function: demangle.Filter(linkage),
		short:    demangle.Filter(linkage, demangle.NoParams, demangle.NoTemplateParams),
		mangled:  linkage,
	}
}

// lineRow is one row of a DWARF line table. end marks the first address
// after a sequence, which has no line.
type lineRow struct {
	file      int32 // index into lineTable.files
	line, col int32
	end       bool
}

// lineTable holds the rows of every CU's line program in one array sorted by
// address (addrs is parallel to rows; both are merged into a pcMap).
type lineTable struct {
	addrs []uint32
	rows  []lineRow
	files []string
}

// node is a subprogram (parent -1) or an inlined subroutine.
type node struct {
	parent   int32
	name     int32 // index into inlineTree.names
	callFile int32 // for an inlined node, where its parent called it: index into lineTable.files, -1 if unknown
	callLine int32
	callCol  int32
	depth    int32
}

// subprogram describes a concrete function DWARF has, for naming Functions.
type subprogram struct {
	name, linkage string
	source        string   // the CU's file, absolute
	starts        []uint32 // start of each of its ranges
}

// inlineTree holds the nodes and their names; segStart/segNode map a PC to
// its innermost node: segStart[i] ≤ pc < segStart[i+1] lies in node
// segNode[i] (-1: none). The segments are merged into a pcMap.
type inlineTree struct {
	nodes    []node
	names    []frameName
	segStart []uint32
	segNode  []int32
	subs     map[uint32]*subprogram // by the start of each range of a subprogram
}

func (t *inlineTree) subprogramAt(addr uint32) *subprogram { return t.subs[addr] }

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

// mergePCMap merges the line rows (an end_sequence row ends a step with no
// row) and the node segments into one pcMap.
func mergePCMap(lines *lineTable, tree *inlineTree) pcMap {
	var m pcMap
	row, nd := int32(-1), int32(-1)
	i, j := 0, 0
	for i < len(lines.addrs) || j < len(tree.segStart) {
		var at uint32
		switch {
		case j == len(tree.segStart) || (i < len(lines.addrs) && lines.addrs[i] < tree.segStart[j]):
			at = lines.addrs[i]
		default:
			at = tree.segStart[j]
		}
		for ; i < len(lines.addrs) && lines.addrs[i] == at; i++ {
			row = int32(i)
			if lines.rows[i].end {
				row = -1
			}
		}
		for ; j < len(tree.segStart) && tree.segStart[j] == at; j++ {
			nd = tree.segNode[j]
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
// dropped: GNU ld resolves them to 0 (believed only if a function really
// starts at 0), lld to -1 or -2.
func isTombstone(addr uint64, hasCodeAt0 bool) bool {
	return (addr == 0 && !hasCodeAt0) || addr >= 0xfffffffe
}

// dwarfLoader accumulates the flat tables while walking every CU once.
type dwarfLoader struct {
	dw         *dwarf.Data
	debugLine  []byte // raw .debug_line, to read each line program's version
	infoSize   int    // size of .debug_info, bounding its number of DIEs
	lineSize   int    // size of .debug_line, bounding its number of rows
	hasCodeAt0 bool
	zSyms      map[uint32]string // _Z-mangled FUNC symbol (without clone suffix) by address

	lines    lineTable
	seqRows  []seqRow
	fileIdx  map[string]int32
	tree     inlineTree
	nameIdx  map[frameName]int32
	ranges   []nodeRange
	dies     map[dwarf.Offset]dieName
	nodeDIEs []dwarf.Offset // DIE of each node, to resolve its name at the end
	nodeSubs []*subprogram  // subprogram of each root node; nil for inlines
	warnings []string
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
// name, directly or through its abstract origin / specification.
type dieName struct {
	name, linkage string
	ref           dwarf.Offset
	hasRef        bool
}

// loadDWARF fills im.lines and im.tree. Missing or broken DWARF leaves them
// empty (or partial) with a warning: symbolization then falls back to the
// symbol table.
func (im *Image) loadDWARF(raw rawSymbols) {
	if im.file.Section(".debug_info") == nil {
		im.warnings = append(im.warnings, "no DWARF debug info: symbolizing from the symbol table only (no file:line, no inlined frames)")
		return
	}
	dw, err := im.file.DWARF()
	if err != nil {
		im.warnings = append(im.warnings, fmt.Sprintf("unusable DWARF (%v): symbolizing from the symbol table only", err))
		return
	}
	l := &dwarfLoader{
		dw:         dw,
		debugLine:  im.debugSection(".debug_line"),
		infoSize:   sectionSize(im.file, ".debug_info"),
		lineSize:   sectionSize(im.file, ".debug_line"),
		hasCodeAt0: raw.hasCodeAt0,
		zSyms:      map[uint32]string{},
		fileIdx:    map[string]int32{},
		nameIdx:    map[frameName]int32{},
		dies:       map[dwarf.Offset]dieName{},
		tree:       inlineTree{subs: map[uint32]*subprogram{}},
	}
	for _, s := range raw.funcs {
		if base, _ := SplitClone(s.name); strings.HasPrefix(base, "_Z") {
			l.zSyms[s.addr] = base
		}
	}
	if err := l.walk(); err != nil {
		l.warnings = append(l.warnings, fmt.Sprintf("DWARF partly unreadable (%v): some addresses fall back to the symbol table", err))
	}
	l.finishLines()
	l.finishNames()
	l.finishSegments()
	im.pcs = mergePCMap(&l.lines, &l.tree)
	l.lines.addrs, l.tree.segStart, l.tree.segNode = nil, nil, nil
	im.lines, im.tree = l.lines, l.tree
	im.warnings = append(im.warnings, l.warnings...)
}

// sectionSize returns the (uncompressed) size of the named section, 0 if
// absent.
func sectionSize(f *goelf.File, name string) int {
	if s := f.Section(name); s != nil {
		return int(min(s.Size, 1<<31))
	}
	return 0
}

// walk reads every DIE once, collecting line tables per CU and the
// subprogram / inlined-subroutine nodes with their ranges.
func (l *dwarfLoader) walk() error {
	r := l.dw.Reader()
	var stack []int32   // per open DIE with children: the node enclosing its children
	var cuFiles []int32 // this CU's line-table file indices → lineTable.files
	var cuSource string
	// Every DIE takes at least one byte, but debug/dwarf can return null
	// entries forever from some corrupt units: stop at the section size.
	limit := l.infoSize
	for n := 0; ; n++ {
		e, err := r.Next()
		if err != nil {
			return err
		}
		if e == nil {
			return nil
		}
		if n > limit {
			return fmt.Errorf(".debug_info yields more entries than its %d bytes can hold", limit)
		}
		if e.Tag == 0 {
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		enclosing := int32(-1)
		if len(stack) > 0 {
			enclosing = stack[len(stack)-1]
		}
		self := enclosing
		switch e.Tag {
		case dwarf.TagCompileUnit, dwarf.TagPartialUnit:
			stack = stack[:0]
			self = -1
			cuFiles, cuSource = l.readLines(e)
		case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine:
			l.recordName(e)
			if e.Tag == dwarf.TagInlinedSubroutine && enclosing < 0 {
				break // an inline outside any concrete function: nothing to attach it to
			}
			parent := int32(-1)
			if e.Tag == dwarf.TagInlinedSubroutine {
				parent = enclosing
			}
			if idx, ok := l.addNode(e, parent, cuFiles, cuSource); ok {
				self = idx
			}
		}
		if e.Children {
			if skipSubtree[e.Tag] {
				// Nothing below holds code; declarations there that a
				// subprogram names are read on demand (readDIEName).
				r.SkipChildren()
				continue
			}
			stack = append(stack, self)
		}
	}
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

func (l *dwarfLoader) recordName(e *dwarf.Entry) {
	var d dieName
	d.name, _ = e.Val(dwarf.AttrName).(string)
	d.linkage, _ = e.Val(dwarf.AttrLinkageName).(string)
	if d.linkage == "" {
		d.linkage, _ = e.Val(attrMIPSLinkageName).(string)
	}
	if ref, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); ok {
		d.ref, d.hasRef = ref, true
	} else if ref, ok := e.Val(dwarf.AttrSpecification).(dwarf.Offset); ok {
		d.ref, d.hasRef = ref, true
	}
	l.dies[e.Offset] = d
}

// addNode records a subprogram or inline DIE that covers code.
func (l *dwarfLoader) addNode(e *dwarf.Entry, parent int32, cuFiles []int32, cuSource string) (int32, bool) {
	rs, err := l.dw.Ranges(e)
	if err != nil || len(rs) == 0 {
		return 0, false
	}
	n := node{parent: parent, callFile: -1}
	if parent >= 0 {
		n.depth = l.tree.nodes[parent].depth + 1
		if f, ok := e.Val(dwarf.AttrCallFile).(int64); ok && f >= 0 && f < int64(len(cuFiles)) {
			n.callFile = cuFiles[f]
		}
		n.callLine = int32(intAttr(e, dwarf.AttrCallLine))
		n.callCol = int32(intAttr(e, dwarf.AttrCallColumn))
	}
	idx := int32(len(l.tree.nodes))
	kept := false
	for _, rg := range rs {
		lo, hi := rg[0], rg[1]
		if hi <= lo || hi > 1<<32 || isTombstone(lo, l.hasCodeAt0) {
			continue
		}
		kept = true
		l.ranges = append(l.ranges, nodeRange{lo: uint32(lo), hi: uint32(hi - 1), node: idx, depth: n.depth})
	}
	if !kept {
		return 0, false
	}
	var sub *subprogram
	if parent < 0 {
		sub = &subprogram{source: cuSource}
		for _, rg := range rs {
			if rg[1] > rg[0] && rg[1] <= 1<<32 && !isTombstone(rg[0], l.hasCodeAt0) {
				sub.starts = append(sub.starts, uint32(rg[0]))
				l.tree.subs[uint32(rg[0])] = sub
			}
		}
	}
	l.tree.nodes = append(l.tree.nodes, n)
	l.nodeDIEs = append(l.nodeDIEs, e.Offset)
	l.nodeSubs = append(l.nodeSubs, sub)
	return idx, true
}

func intAttr(e *dwarf.Entry, a dwarf.Attr) int64 {
	v, _ := e.Val(a).(int64)
	return v
}

// readLines appends a CU's line program to the flat table and returns the
// CU's file-index mapping (DW_AT_call_file indexes the same list) and its
// source file name.
func (l *dwarfLoader) readLines(cu *dwarf.Entry) ([]int32, string) {
	compDir, _ := cu.Val(dwarf.AttrCompDir).(string)
	source, _ := cu.Val(dwarf.AttrName).(string)
	if source != "" {
		source = joinCompDir(compDir, source)
	}
	// debug/dwarf joins relative names with comp_dir itself before DWARF 5;
	// from 5 on it leaves a relative directory entry unjoined.
	if off, ok := cu.Val(dwarf.AttrStmtList).(int64); !ok || l.lineVersion(off) < 5 {
		compDir = ""
	}
	lr, err := l.dw.LineReader(cu)
	if err != nil {
		l.warnings = append(l.warnings, fmt.Sprintf("line table of %s unreadable (%v)", source, err))
		return nil, source
	}
	if lr == nil {
		return nil, source
	}
	fileOf := map[*dwarf.LineFile]int32{}
	var files []int32
	for _, f := range lr.Files() {
		files = append(files, l.file(f, compDir, fileOf))
	}
	// Rows of one sequence are kept only if the sequence starts at a real
	// address; the linker leaves dropped functions' sequences at 0.
	var seq []seqRow
	keep := false
	var le dwarf.LineEntry
	for n := 0; ; n++ {
		if n > l.lineSize { // each row takes at least one opcode byte
			l.warnings = append(l.warnings, fmt.Sprintf("line table of %s yields more rows than .debug_line can hold", source))
			break
		}
		if err := lr.Next(&le); err != nil {
			if !errors.Is(err, io.EOF) {
				l.warnings = append(l.warnings, fmt.Sprintf("line table of %s cut short (%v)", source, err))
			}
			break
		}
		if len(seq) == 0 {
			keep = !isTombstone(le.Address, l.hasCodeAt0)
		}
		if le.Address < 1<<32 {
			row := lineRow{file: l.file(le.File, compDir, fileOf), line: int32(le.Line), col: int32(le.Column), end: le.EndSequence}
			seq = append(seq, seqRow{addr: uint32(le.Address), order: int32(len(l.seqRows) + len(seq)), row: row})
		}
		if le.EndSequence {
			if keep {
				l.seqRows = append(l.seqRows, seq...)
			}
			seq = seq[:0]
		}
	}
	return files, source
}

// file interns a line-table file name as an absolute path.
func (l *dwarfLoader) file(f *dwarf.LineFile, compDir string, cache map[*dwarf.LineFile]int32) int32 {
	if f == nil {
		return -1
	}
	if i, ok := cache[f]; ok {
		return i
	}
	name := joinCompDir(compDir, f.Name)
	i, ok := l.fileIdx[name]
	if !ok {
		i = int32(len(l.lines.files))
		l.lines.files = append(l.lines.files, name)
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

// lineVersion returns the version of the line program at off in
// .debug_line, 0 if unreadable.
func (l *dwarfLoader) lineVersion(off int64) int {
	b := l.debugLine
	if off < 0 || off+6 > int64(len(b)) {
		return 0
	}
	if binary.LittleEndian.Uint32(b[off:]) == 0xffffffff { // 64-bit DWARF
		if off+14 > int64(len(b)) {
			return 0
		}
		return int(binary.LittleEndian.Uint16(b[off+12:]))
	}
	return int(binary.LittleEndian.Uint16(b[off+4:]))
}

// finishLines sorts the rows by address. At one address an end_sequence
// row goes first (a sequence often ends where the next begins), and among
// the others the last one wins: GCC emits several rows per address
// (location views) and the last is the statement being executed.
func (l *dwarfLoader) finishLines() {
	rows := l.seqRows
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.addr != b.addr {
			return a.addr < b.addr
		}
		if a.row.end != b.row.end {
			return a.row.end
		}
		return a.order < b.order
	})
	// Keep one row per address: the last, or the end row alone.
	for i := 0; i < len(rows); i++ {
		if i+1 < len(rows) && rows[i+1].addr == rows[i].addr {
			continue
		}
		l.lines.addrs = append(l.lines.addrs, rows[i].addr)
		l.lines.rows = append(l.lines.rows, rows[i].row)
	}
	l.seqRows = nil
}

// finishNames resolves each node's name through abstract origins and
// specifications, and for a subprogram DWARF gives no linkage name (GCC
// omits it for templates instantiated with a lambda) takes the mangled ELF
// symbol at its address.
func (l *dwarfLoader) finishNames() {
	for i, off := range l.nodeDIEs {
		name, linkage := l.resolveName(off)
		n := &l.tree.nodes[i]
		if sub := l.nodeSubs[i]; sub != nil {
			sub.name, sub.linkage = name, linkage
			for _, start := range sub.starts {
				if z, ok := l.zSyms[start]; ok && linkage == "" {
					linkage = z
				}
			}
		}
		fn := newFrameName(name, linkage)
		idx, ok := l.nameIdx[fn]
		if !ok {
			idx = int32(len(l.tree.names))
			l.tree.names = append(l.tree.names, fn)
			l.nameIdx[fn] = idx
		}
		n.name = idx
	}
	l.dies, l.nodeDIEs, l.nodeSubs, l.nameIdx = nil, nil, nil, nil
}

func (l *dwarfLoader) resolveName(off dwarf.Offset) (name, linkage string) {
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

// readDIEName reads a DIE the walk did not record (a reference into a
// DIE of another tag, or past a broken unit).
func (l *dwarfLoader) readDIEName(off dwarf.Offset) dieName {
	r := l.dw.Reader()
	r.Seek(off)
	e, err := r.Next()
	if err != nil || e == nil || e.Offset != off {
		return dieName{}
	}
	l.recordName(e)
	return l.dies[off]
}

// finishSegments turns the nested node ranges into flat segments, each
// naming its innermost node. Properly nested ranges make this a stack sweep.
func (l *dwarfLoader) finishSegments() {
	rs := l.ranges
	sort.Slice(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.lo != b.lo {
			return a.lo < b.lo
		}
		if a.depth != b.depth {
			return a.depth < b.depth
		}
		return a.hi > b.hi
	})
	// hi is inclusive (stored as last address) so that ranges ending at
	// 2^32 fit; a point p is covered while p <= hi.
	points := make([]uint64, 0, 2*len(rs))
	for _, r := range rs {
		points = append(points, uint64(r.lo), uint64(r.hi)+1)
	}
	sort.Slice(points, func(i, j int) bool { return points[i] < points[j] })
	var stack []nodeRange
	next := 0
	t := &l.tree
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
		if k := len(t.segNode); k > 0 && t.segNode[k-1] == cur {
			continue
		}
		t.segStart = append(t.segStart, uint32(p))
		t.segNode = append(t.segNode, cur)
	}
	l.ranges = nil
}

// Symbolize returns the inline chain at addr, innermost first: the
// innermost frame has the line being executed, each outer frame the line
// that called (inlined) the frame before it. Bit 0 (Thumb) is ignored. An
// address inside a function that DWARF does not describe gets one frame
// from the symbol table (with file:line if a line table covers it). nil
// means addr is in no function (e.g. padding, data) or unknown.
func (im *Image) Symbolize(addr uint32) []Frame {
	pc := addr &^ 1
	ri, n := im.pcs.at(pc)
	hasRow := ri >= 0
	var row lineRow
	if hasRow {
		row = im.lines.rows[ri]
	}
	if n < 0 {
		// Outside every DWARF function only a symbol makes an address code:
		// line sequences also run over the padding between functions, and
		// llvm-symbolizer does not answer for padding either.
		fi := im.functionIndex(pc)
		if fi < 0 {
			return nil
		}
		name := im.funcNames[fi]
		f := Frame{Function: name.function, Short: name.short, Mangled: name.mangled}
		if hasRow {
			im.setLine(&f, row.file, row.line, row.col)
		}
		return []Frame{f}
	}
	t := &im.tree
	frames := make([]Frame, 0, t.nodes[n].depth+1)
	f := im.frameOf(n)
	if hasRow {
		im.setLine(&f, row.file, row.line, row.col)
	}
	frames = append(frames, f)
	for nd := t.nodes[n]; nd.parent >= 0; nd = t.nodes[nd.parent] {
		f := im.frameOf(nd.parent)
		im.setLine(&f, nd.callFile, nd.callLine, nd.callCol)
		frames = append(frames, f)
	}
	return frames
}

func (im *Image) frameOf(n int32) Frame {
	name := im.tree.names[im.tree.nodes[n].name]
	return Frame{Function: name.function, Short: name.short, Mangled: name.mangled}
}

func (im *Image) setLine(f *Frame, file, line, col int32) {
	if file >= 0 && int(file) < len(im.lines.files) {
		f.File = im.lines.files[file]
	}
	f.Line, f.Column = int(line), int(col)
}

// symbolFrameName names a frame from the symbol table alone: the symbol
// without its clone suffix, like a DWARF name.
func symbolFrameName(fn *Function) frameName {
	if strings.HasPrefix(fn.Base, "_Z") {
		return newFrameName("", fn.Base)
	}
	return newFrameName(fn.Base, "")
}
