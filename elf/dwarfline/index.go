// SPDX-License-Identifier: Apache-2.0

package dwarfline

import (
	"cmp"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tcmprof/tcmprof/elf/symname"
)

// Index finds the compile unit of an address and decodes units on
// demand. It is safe for concurrent use. A nil *Index (an ELF without
// usable DWARF) knows nothing.
type Index struct {
	sec    dwarfSections
	origin originCode
	zSyms  map[uint32]string // _Z-mangled FUNC symbol (without clone suffix) by address
	warn   func(string)

	// units are those .debug_aranges lists, by the offset of their header
	// (listed, fixed at Load), then the others (once enumerated). A unit
	// index counts in that order.
	listed []*unit
	placed spanIndex // where .debug_aranges places the listed units

	enumOnce sync.Once
	others   []*unit
	byStart  []int     // every unit, by the offset of its header
	dieSpans spanIndex // where their own DIEs place the others
	// unplaced are the units nothing places; scanned indexes what they
	// hold, built on the first address no unit holds.
	unplaced []int
	scanOnce sync.Once
	scanned  spanIndex
}

// dwarfSections are the DWARF sections as the file holds them (inflated if
// compressed).
type dwarfSections struct {
	info, abbrev, line, ranges, str []byte
	dwarf5                          map[string][]byte // .debug_addr, .debug_line_str, .debug_str_offsets, .debug_rnglists
}

// spanIndex maps addresses to units: spans sorted by lo, with their lo
// also in los (for the binary search) and maxLast[i] the highest last of
// spans[:i+1], so that the spans holding a PC (several only in odd DWARF)
// are found by walking back from the binary search.
type spanIndex struct {
	spans   []unitSpan
	los     []uint32
	maxLast []uint32
}

// unit is one unit of .debug_info. Its header's start is known from the
// beginning; the rest is read when it is opened.
type unit struct {
	unitHeader
	openOnce sync.Once
	opened   unitData
	once     sync.Once
	tables   atomic.Pointer[unitTables]
}

// unitData is a unit opened for reading.
type unitData struct {
	d        *dwarf.Data
	abbrevs  *abbrevTable
	refAddrs bool // some DIE names another by DW_FORM_ref_addr
	err      error
}

// unitSpan says that unit holds the addresses lo..last (inclusive, so
// that a range ending at 2^32 fits).
type unitSpan struct {
	lo, last uint32
	unit     int32
}

// Symbol is one of the image's function symbols, as the index needs it:
// DWARF's name for the code at address 0 is believed only where a symbol
// there bears it (originCode), and a function DWARF gives no linkage name
// takes its mangled symbol's.
type Symbol struct {
	Name       string // as in the symbol table, clone suffix included
	Addr, Size uint32 // Addr without the Thumb bit
}

// New indexes the DWARF of f, which was parsed from data (uncompressed
// sections are read from data in place). funcs are the image's FUNC
// symbols, GNU ld's veneers excluded: they have no DWARF. warn receives
// what cannot be used, now and as units are decoded later. Without
// .debug_info New warns and returns nil, which knows nothing.
func New(f *elf.File, data []byte, funcs []Symbol, warn func(string)) *Index {
	sec := func(name string) []byte { return debugSection(f, data, ".debug_"+name) }
	x := &Index{
		sec: dwarfSections{
			info: sec("info"), abbrev: sec("abbrev"), line: sec("line"), ranges: sec("ranges"), str: sec("str"),
			dwarf5: map[string][]byte{},
		},
		zSyms: map[uint32]string{},
		warn:  warn,
	}
	if x.sec.info == nil {
		warn("no DWARF debug info: symbolizing from the symbol table only (no file:line, no inlined frames)")
		return nil
	}
	for _, name := range []string{"addr", "line_str", "str_offsets", "rnglists"} {
		if b := sec(name); b != nil {
			x.sec.dwarf5[".debug_"+name] = b
		}
	}
	for _, s := range funcs {
		if s.Addr == 0 {
			x.origin.syms = append(x.origin.syms, s)
		}
		if base, _ := symname.SplitClone(s.Name); strings.HasPrefix(base, "_Z") {
			x.zSyms[s.Addr] = base
		}
	}
	x.addAranges(sec("aranges"))
	return x
}

// debugSection returns the contents of the named .debug_* section of f,
// decompressed if it is compressed (objcopy --compress-debug-sections,
// gcc -gz; or the older .zdebug_* form); nil if absent or unreadable.
func debugSection(f *elf.File, data []byte, name string) []byte {
	s := f.Section(name)
	if s == nil {
		s = f.Section(".z" + strings.TrimPrefix(name, "."))
	}
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil
	}
	if s.Flags&elf.SHF_COMPRESSED == 0 && !strings.HasPrefix(s.Name, ".zdebug_") {
		return data[s.Offset : s.Offset+s.FileSize]
	}
	b, err := s.Data()
	if err != nil {
		return nil
	}
	return b
}

// unit returns unit i.
func (x *Index) unit(i int) *unit {
	if i < len(x.listed) {
		return x.listed[i]
	}
	return x.others[i-len(x.listed)]
}

// enumerate reads every unit header (once), adds the units .debug_aranges
// does not list and places them by their own DIE.
func (x *Index) enumerate() {
	x.enumOnce.Do(func() {
		listed := make(map[uint64]int, len(x.listed))
		for i, u := range x.listed {
			listed[u.start] = i
		}
		var broken error
		for _, h := range unitHeaders(x.sec.info) {
			if i, ok := listed[h.start]; ok {
				x.byStart = append(x.byStart, i)
				continue
			}
			i := len(x.listed) + len(x.others)
			x.others = append(x.others, &unit{unitHeader: h})
			x.byStart = append(x.byStart, i)
			ud := x.open(i)
			var cu *dwarf.Entry
			if ud.err == nil {
				cu, ud.err = ud.d.Reader().Next()
			}
			if ud.err != nil || cu == nil {
				broken = fmt.Errorf("unit at 0x%x: %v", h.start, ud.err)
				continue
			}
			if cu.Tag != dwarf.TagCompileUnit && cu.Tag != dwarf.TagPartialUnit {
				continue
			}
			if rs, err := ud.d.Ranges(cu); err == nil && x.dieSpans.add(i, rs, x.origin.exists()) > 0 {
				continue
			}
			x.unplaced = append(x.unplaced, i)
		}
		if broken != nil {
			x.warn(fmt.Sprintf("DWARF partly unreadable (%v): some addresses fall back to the symbol table", broken))
		}
		x.dieSpans.sort()
	})
}

// open returns unit i opened for reading (once): a debug/dwarf Data over
// its slice of .debug_info, and its abbreviations.
func (x *Index) open(i int) *unitData {
	u := x.unit(i)
	u.openOnce.Do(func() {
		ud := &u.opened
		defer func() {
			if r := recover(); r != nil { // debug/dwarf on hostile input
				ud.d, ud.err = nil, &DecodeError{Section: ".debug_info", Offset: u.start, Err: fmt.Sprintf("unit malformed (%v)", r)}
			}
		}()
		if u.end == 0 { // listed: only its start is known
			h, _, ok := readUnitHeader(x.sec.info, u.start)
			if !ok {
				ud.err = &DecodeError{Section: ".debug_info", Offset: u.start, Err: "no unit header"}
				return
			}
			// All but start, which other goroutines read (enumerate,
			// unitOf) without opening the unit: it is the same.
			u.die, u.end, u.version, u.offSize, u.addrSize, u.abbrevOff = h.die, h.end, h.version, h.offSize, h.addrSize, h.abbrevOff
		}
		ud.abbrevs, ud.err = readAbbrevs(x.sec.abbrev, u.abbrevOff, &u.unitHeader)
		if ud.err != nil {
			return
		}
		for _, a := range ud.abbrevs.dense {
			for _, at := range a.attrs {
				ud.refAddrs = ud.refAddrs || at.form == formRefAddr
			}
		}
		for _, a := range ud.abbrevs.sparse {
			for _, at := range a.attrs {
				ud.refAddrs = ud.refAddrs || at.form == formRefAddr
			}
		}
		s := &x.sec
		ud.d, ud.err = dwarf.New(s.abbrev, nil, nil, s.info[u.start:u.end], s.line, nil, s.ranges, s.str)
		for name, b := range s.dwarf5 {
			if ud.err == nil {
				ud.err = ud.d.AddSection(name, b)
			}
		}
		if ud.err == nil {
			// A Reader's first visit sets the unit up (DWARF 5 bases):
			// done here, before readers run in parallel.
			ud.d.Reader()
		}
	})
	return &u.opened
}

// unitOf returns the index of the unit whose bytes hold the .debug_info
// offset off, -1 if none.
func (x *Index) unitOf(off uint64) int {
	x.enumerate()
	k := sort.Search(len(x.byStart), func(k int) bool { return x.unit(x.byStart[k]).start > off }) - 1
	if k < 0 {
		return -1
	}
	i := x.byStart[k]
	if u := x.unit(i); x.open(i).err != nil || off >= uint64(u.end) {
		return -1
	}
	return i
}

// unitHeader locates one unit of .debug_info and says how to read it.
// Offsets are in .debug_info.
type unitHeader struct {
	start     uint64       // offset of its header: .debug_aranges names it, references count from it
	die, end  dwarf.Offset // its first DIE; the offset after its last byte
	version   int
	offSize   int // 4, or 8 in 64-bit DWARF
	addrSize  int
	abbrevOff uint64
}

// unitHeaders lists the units of .debug_info by their headers.
func unitHeaders(info []byte) []unitHeader {
	var hs []unitHeader
	for off := uint64(0); ; {
		h, next, ok := readUnitHeader(info, off)
		if ok {
			hs = append(hs, h)
		}
		if next <= off {
			return hs
		}
		off = next
	}
}

// readUnitHeader reads the header of the unit at off in .debug_info as
// debug/dwarf does (it keeps its units to itself): unit length, version,
// then per version and unit type the fields before the first DIE. next is
// where the next unit starts (off if the rest is unreadable); ok is false
// for a unit of length 0, which debug/dwarf skips, or a bad one.
func readUnitHeader(info []byte, off uint64) (h unitHeader, next uint64, ok bool) {
	le := binary.LittleEndian
	if off+4 > uint64(len(info)) || off+4 < off {
		return h, off, false
	}
	length, hdr, offSize := uint64(le.Uint32(info[off:])), uint64(4), 4
	if length == 0xffffffff {
		if off+12 > uint64(len(info)) {
			return h, off, false
		}
		length, hdr, offSize = le.Uint64(info[off+4:]), 12, 8
	}
	end := off + hdr + length
	if end > uint64(len(info)) || end < off+hdr {
		return h, off, false
	}
	if length == 0 || off+hdr+2 > end {
		return h, end, false
	}
	h = unitHeader{start: off, end: dwarf.Offset(end), version: int(le.Uint16(info[off+hdr:])), offSize: offSize}
	p := off + hdr + 2
	var size uint64 // of the rest of the header
	switch h.version {
	case 2, 3, 4:
		size = uint64(offSize) + 1 // abbreviation offset, address size
	case 5:
		size = 2 + uint64(offSize) // unit type, address size, abbreviation offset
		switch info[min(p, end-1)] {
		case 4, 5: // DW_UT_skeleton, DW_UT_split_compile: unit id
			size += 8
		case 2, 6: // DW_UT_type, DW_UT_split_type: signature, type offset
			size += 8 + uint64(offSize)
		}
	default:
		return h, off, false // debug/dwarf reads no further either
	}
	if p+size > end {
		return h, end, false
	}
	readOff := func(at uint64) uint64 {
		if offSize == 8 {
			return le.Uint64(info[at:])
		}
		return uint64(le.Uint32(info[at:]))
	}
	if h.version == 5 {
		h.addrSize, h.abbrevOff = int(info[p+1]), readOff(p+2)
	} else {
		h.abbrevOff, h.addrSize = readOff(p), int(info[p+uint64(offSize)])
	}
	h.die = dwarf.Offset(p + size)
	return h, end, true
}

// addAranges indexes the address ranges .debug_aranges gives, making a
// listed unit of each unit it names with any. Malformed sets are skipped:
// their units are then placed by their own DIE.
func (x *Index) addAranges(b []byte) {
	byStart := map[uint64]int{}
	le := binary.LittleEndian
	for off := uint64(0); off+4 <= uint64(len(b)); {
		length, hdr, offSize := uint64(le.Uint32(b[off:])), uint64(4), uint64(4)
		if length == 0xffffffff {
			if off+12 > uint64(len(b)) {
				break
			}
			length, hdr, offSize = le.Uint64(b[off+4:]), 12, 8
		}
		end := off + hdr + length
		if end > uint64(len(b)) || end < off {
			break
		}
		set := b[off:end]
		off = end
		p := hdr + 2 + offSize + 2 // version, unit offset, address and segment sizes
		if p > uint64(len(set)) {
			continue
		}
		var unitOff uint64
		if offSize == 8 {
			unitOff = le.Uint64(set[hdr+2:])
		} else {
			unitOff = uint64(le.Uint32(set[hdr+2:]))
		}
		addrSize, segSize := set[p-2], set[p-1]
		if le.Uint16(set[hdr:]) != 2 || addrSize != 4 || segSize != 0 || unitOff >= uint64(len(x.sec.info)) {
			continue // firmware for a 32-bit core has 4-byte addresses and no segments
		}
		var rs [][2]uint64
		for p = (p + 7) &^ 7; p+8 <= uint64(len(set)); p += 8 { // tuples start at a multiple of twice the address size
			lo, n := uint64(le.Uint32(set[p:])), uint64(le.Uint32(set[p+4:]))
			if lo == 0 && n == 0 {
				break
			}
			rs = append(rs, [2]uint64{lo, lo + n})
		}
		i, ok := byStart[unitOff]
		if !ok {
			i = len(x.listed)
		}
		if x.placed.add(i, rs, x.origin.exists()) > 0 && !ok {
			byStart[unitOff] = i
			x.listed = append(x.listed, &unit{unitHeader: unitHeader{start: unitOff}})
		}
	}
	x.placed.sort()
}

// add indexes the ranges [lo, hi) of unit i that may hold real code and
// returns how many did. sort must follow. With code at 0, every unit with a
// removed function claims 0 too: decoding the unit tells (originCode).
func (s *spanIndex) add(i int, rs [][2]uint64, codeAt0 bool) int {
	n := 0
	for _, r := range rs {
		lo, hi := r[0], min(r[1], 1<<32)
		if hi <= lo || isTombstone(lo, codeAt0) {
			continue
		}
		s.spans = append(s.spans, unitSpan{lo: uint32(lo), last: uint32(hi - 1), unit: int32(i)})
		n++
	}
	return n
}

func (s *spanIndex) sort() {
	slices.SortFunc(s.spans, func(a, b unitSpan) int {
		return cmp.Or(cmp.Compare(a.lo, b.lo), cmp.Compare(a.unit, b.unit))
	})
	s.los = make([]uint32, len(s.spans))
	s.maxLast = make([]uint32, len(s.spans))
	for i, sp := range s.spans {
		s.los[i], s.maxLast[i] = sp.lo, sp.last
		if i > 0 {
			s.maxLast[i] = max(s.maxLast[i-1], sp.last)
		}
	}
}

// each calls yield with each unit that holds pc, until yield returns
// false, and reports whether any did.
func (s *spanIndex) each(pc uint32, yield func(int) bool) bool {
	found := false
	for i := upperBound(s.los, pc) - 1; i >= 0 && s.maxLast[i] >= pc; i-- {
		if sp := s.spans[i]; sp.last >= pc {
			found = true
			if !yield(int(sp.unit)) {
				break
			}
		}
	}
	return found
}

// unitsAt calls yield with each unit that holds pc, until yield returns
// false. If .debug_aranges places pc in no unit, the others are placed
// (once) by their DIEs, and if none of them holds it either, the units
// nothing places are scanned (once) for it.
func (x *Index) unitsAt(pc uint32, yield func(int) bool) {
	if x == nil || x.placed.each(pc, yield) {
		return
	}
	x.enumerate()
	if x.dieSpans.each(pc, yield) || len(x.unplaced) == 0 {
		return
	}
	x.scanOnce.Do(func() {
		x.decodeAll(x.unplaced)
		for _, i := range x.unplaced {
			x.scanned.add(i, x.tables(i).extent(), x.origin.exists())
		}
		x.scanned.sort()
	})
	x.scanned.each(pc, yield)
}

// tables returns unit i decoded, decoding it on first use.
func (x *Index) tables(i int) *unitTables {
	u := x.unit(i)
	if t := u.tables.Load(); t != nil {
		return t
	}
	u.once.Do(func() { u.tables.Store(x.safeDecode(i)) })
	return u.tables.Load()
}

// safeDecode decodes unit i, turning a panic of debug/dwarf on hostile
// input (Load recovers from those, but units are decoded later) into an
// empty unit and a warning.
func (x *Index) safeDecode(i int) (t *unitTables) {
	defer func() {
		if r := recover(); r != nil {
			x.warn(fmt.Sprintf("DWARF unit at 0x%x malformed (%v): its addresses fall back to the symbol table", x.unit(i).start, r))
			t = &unitTables{}
		}
	}()
	return x.decodeUnit(i, true)
}

// lookup returns the line row and innermost node DWARF has for pc (-1:
// none) and the unit they belong to. Where several units claim pc, the
// first that has a node for it wins, else the first with a line row.
func (x *Index) lookup(pc uint32) (t *unitTables, row, node int32) {
	row, node = -1, -1
	x.unitsAt(pc, func(i int) bool {
		ut := x.tables(i)
		r, n := ut.pcs.at(pc)
		if n >= 0 {
			t, row, node = ut, r, n
			return false
		}
		if r >= 0 && row < 0 {
			t, row = ut, r
		}
		return true
	})
	return t, row, node
}

// LineSource returns the source file of the unit whose line table covers
// addr, "" if none: where no subprogram DIE describes a function
// (assembly built with -g), the line table still names its file.
func (x *Index) LineSource(addr uint32) string {
	if t, row, _ := x.lookup(addr); t != nil && row >= 0 {
		return t.source
	}
	return ""
}

// SubprogramAt returns the concrete function DWARF says starts at addr,
// or nil.
func (x *Index) SubprogramAt(addr uint32) (sub *Subprogram) {
	x.unitsAt(addr, func(i int) bool {
		sub = x.tables(i).subs[addr]
		return sub == nil
	})
	return sub
}

// decodeAll decodes the units listed, on all cores.
func (x *Index) decodeAll(units []int) {
	workers := min(runtime.GOMAXPROCS(0), len(units))
	if workers <= 1 { // no thread to wake and wait for, which costs most on a busy machine
		for _, i := range units {
			x.tables(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for k := next.Add(1) - 1; k < int64(len(units)); k = next.Add(1) - 1 {
				x.tables(units[k])
			}
		})
	}
	wg.Wait()
}

// lineProgram returns the version and size of the line program at off in
// .debug_line, zeros if unreadable.
func (x *Index) lineProgram(off int64) (version, size int) {
	b := x.sec.line
	if off < 0 || off+6 > int64(len(b)) {
		return 0, 0
	}
	length := int64(binary.LittleEndian.Uint32(b[off:]))
	if length == 0xffffffff { // 64-bit DWARF
		if off+14 > int64(len(b)) {
			return 0, 0
		}
		return int(binary.LittleEndian.Uint16(b[off+12:])), int(min(binary.LittleEndian.Uint64(b[off+4:]), uint64(len(b))))
	}
	return int(binary.LittleEndian.Uint16(b[off+4:])), int(min(length, int64(len(b))))
}

// Preload decodes, in parallel on all cores, the DWARF of every compile
// unit holding one of addrs, so that symbolizing a batch of addresses (a
// capture's PCs) does not decode unit after unit on one core. Lookups work
// without it; it only makes them start sooner.
func (x *Index) Preload(addrs []uint32) {
	if x == nil {
		return
	}
	need := map[int]bool{}
	var todo []int
	for _, a := range addrs {
		x.unitsAt(a&^1, func(i int) bool {
			if x.unit(i).tables.Load() == nil && !need[i] {
				need[i] = true
				todo = append(todo, i)
			}
			return true
		})
	}
	x.decodeAll(todo)
}
