// SPDX-License-Identifier: Apache-2.0

package dwarfline

import (
	"debug/dwarf"
	"encoding/binary"
	"fmt"
)

// Most DIEs of a unit are types: in a Zephyr image every unit carries the
// kernel's, its driver's and its subsystem's struct graph, four DIEs in
// five at the unit's top level. The decoder needs none of them, but
// debug/dwarf can only step over a DIE by decoding it, every attribute
// allocated, and that was two thirds of decoding a unit. So a unit is first
// scanned here, by its abbreviations alone and without allocating, for the
// DIEs the walk would act on (its subprograms and inlines that may cover
// code); debug/dwarf then reads only those, each alone. A unit this cannot
// scan is read whole by debug/dwarf.

// abbrev is one abbreviation declaration of .debug_abbrev.
type abbrev struct {
	tag      dwarf.Tag
	children bool
	hasCode  bool // DW_AT_low_pc or DW_AT_ranges: a subprogram that may cover code
	attrs    []abbrevAttr
	// size is the bytes of a DIE's attributes when every form has a
	// size fixed in its unit (most type DIEs), -1 otherwise: the scanner
	// steps over those in one go. sibling is then where the
	// DW_AT_sibling value starts among them (-1: none).
	size, sibling int32
}

type abbrevAttr struct {
	attr dwarf.Attr
	form uint64
}

// DWARF forms (DWARF 5, section 7.5.6, and GNU extensions).
const (
	formAddr, formBlock2, formBlock4, formData2, formData4, formData8    = 0x01, 0x03, 0x04, 0x05, 0x06, 0x07
	formString, formBlock, formBlock1, formData1, formFlag, formSdata    = 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d
	formStrp, formUdata, formRefAddr, formRef1, formRef2, formRef4       = 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13
	formRef8, formRefUdata, formIndirect, formSecOffset, formExprloc     = 0x14, 0x15, 0x16, 0x17, 0x18
	formFlagPresent, formStrx, formAddrx, formRefSup4, formStrpSup       = 0x19, 0x1a, 0x1b, 0x1c, 0x1d
	formData16, formLineStrp, formRefSig8, formImplicitConst             = 0x1e, 0x1f, 0x20, 0x21
	formLoclistx, formRnglistx, formRefSup8, formStrx1, formStrx2        = 0x22, 0x23, 0x24, 0x25, 0x26
	formStrx3, formStrx4, formAddrx1, formAddrx2, formAddrx3, formAddrx4 = 0x27, 0x28, 0x29, 0x2a, 0x2b, 0x2c
	formGNUAddrIndex, formGNUStrIndex, formGNURefAlt, formGNUStrpAlt     = 0x1f01, 0x1f02, 0x1f20, 0x1f21
)

// abbrevTable is a unit's abbreviations by code. Producers number them
// 1, 2, 3...: those are in dense (dense[code-1]); any other code in sparse.
type abbrevTable struct {
	dense  []abbrev
	sparse map[uint64]*abbrev
}

func (t *abbrevTable) get(code uint64) *abbrev {
	if code-1 < uint64(len(t.dense)) {
		return &t.dense[code-1]
	}
	return t.sparse[code]
}

// formSize returns the size of a value of form in unit u, -1 if it
// varies from value to value.
func formSize(form uint64, u *unitHeader) int {
	switch form {
	case formFlagPresent, formImplicitConst:
		return 0
	case formData1, formFlag, formStrx1, formAddrx1, formRef1:
		return 1
	case formData2, formStrx2, formAddrx2, formRef2:
		return 2
	case formStrx3, formAddrx3:
		return 3
	case formData4, formRefSup4, formStrx4, formAddrx4, formRef4:
		return 4
	case formData8, formRefSig8, formRefSup8, formRef8:
		return 8
	case formData16:
		return 16
	case formAddr:
		return u.addrSize
	case formStrp, formLineStrp, formSecOffset, formStrpSup, formGNURefAlt, formGNUStrpAlt:
		return u.offSize
	case formRefAddr:
		if u.version == 2 {
			return u.addrSize
		}
		return u.offSize
	}
	return -1
}

// readAbbrevs reads the abbreviation table at off, for unit u.
func readAbbrevs(b []byte, off uint64, u *unitHeader) (*abbrevTable, error) {
	if off >= uint64(len(b)) {
		return nil, &DecodeError{Section: ".debug_abbrev", Offset: off, Err: "abbreviations past the end of the section"}
	}
	r := &scanBuf{section: ".debug_abbrev", b: b, p: off}
	type decl struct {
		code       uint64
		a          abbrev
		start, end int // its attributes in attrs
	}
	// Sized for a unit's usual table (GCC: a hundred declarations or so).
	decls := make([]decl, 0, 128)
	attrs := make([]abbrevAttr, 0, 512) // every declaration's, one after another
	for {
		code := r.uleb()
		if code == 0 || r.err != nil {
			break
		}
		d := decl{code: code, a: abbrev{tag: dwarf.Tag(r.uleb()), children: r.byte() != 0}, start: len(attrs)}
		for {
			attr, form := r.uleb(), r.uleb()
			if r.err != nil || attr == 0 && form == 0 {
				break
			}
			if form == formImplicitConst {
				r.sleb() // the value is here, not in the DIE
			}
			attrs = append(attrs, abbrevAttr{attr: dwarf.Attr(attr), form: form})
			d.a.hasCode = d.a.hasCode || attr == uint64(dwarf.AttrLowpc) || attr == uint64(dwarf.AttrRanges)
		}
		d.end = len(attrs)
		decls = append(decls, d)
	}
	t := &abbrevTable{dense: make([]abbrev, 0, len(decls))}
	for _, d := range decls {
		d.a.attrs = attrs[d.start:d.end:d.end]
		d.a.size, d.a.sibling = 0, -1
		for _, at := range d.a.attrs {
			n := int32(formSize(at.form, u))
			if n < 0 {
				d.a.size, d.a.sibling = -1, -1
				break
			}
			if at.attr == dwarf.AttrSibling {
				d.a.sibling = d.a.size
			}
			d.a.size += n
		}
		if d.code == uint64(len(t.dense))+1 {
			t.dense = append(t.dense, d.a)
			continue
		}
		if t.sparse == nil {
			t.sparse = map[uint64]*abbrev{}
		}
		t.sparse[d.code] = &d.a
	}
	return t, r.err
}

// foundDIE is a DIE scanUnit found: its offset in .debug_info, and the
// index of the nearest found DIE it lies in (-1: none).
type foundDIE struct {
	off    dwarf.Offset
	parent int32
}

// scanUnit returns the DIEs below unit i's unit DIE that the walk acts
// on, in order: the subprograms and inlined subroutines that may cover
// code, with the nearest such DIE each lies in. It steps over everything
// else the walk would pass without effect (DIEs it skips the subtree of:
// types, parameters, variables, call sites) and looks inside the rest
// (namespaces, lexical blocks, subprograms without code, such as abstract
// instances), as the walk would.
func (x *Index) scanUnit(i int) ([]foundDIE, error) {
	ud := x.open(i)
	u := x.unit(i)
	if ud.err != nil {
		return nil, ud.err
	}
	s := &dieScanner{scanBuf: scanBuf{section: ".debug_info", b: x.sec.info[:u.end], p: uint64(u.die)}, u: u, abbrevs: ud.abbrevs}
	unitDIE, err := s.next()
	if err != nil || unitDIE == nil || !unitDIE.children {
		return nil, err
	}
	if err := s.siblings(0, -1); err != nil {
		return nil, err
	}
	return s.found, nil
}

// form returns the form unit v's abbreviations give attribute a of its DIE
// at off (from the unit's start), 0 if none.
func (x *Index) form(v *unit, vd *unitData, off dwarf.Offset, a dwarf.Attr) uint64 {
	r := &scanBuf{section: ".debug_info", b: x.sec.info[:v.end], p: v.start + uint64(off)}
	if ab := vd.abbrevs.get(r.uleb()); ab != nil && r.err == nil {
		for _, at := range ab.attrs {
			if at.attr == a {
				return at.form
			}
		}
	}
	return 0
}

// maxScanDepth bounds the nesting of DIEs the scanner follows: corrupt
// DWARF may nest without end.
const maxScanDepth = 256

type dieScanner struct {
	scanBuf
	u       *unit
	abbrevs *abbrevTable
	found   []foundDIE
	sibling uint64 // the DW_AT_sibling of the DIE last read, 0 if none
	at      uint64 // offset of the DIE last read
}

// next reads the next DIE's attributes and returns its abbreviation, nil
// for a null entry.
func (s *dieScanner) next() (*abbrev, error) {
	s.at, s.sibling = s.p, 0
	code := s.uleb()
	if s.err != nil || code == 0 {
		return nil, s.err
	}
	a := s.abbrevs.get(code)
	if a == nil {
		return nil, &DecodeError{Section: ".debug_info", Offset: s.at, Err: fmt.Sprintf("DIE with unknown abbreviation %d", code)}
	}
	if a.size >= 0 {
		start := s.p
		if a.sibling >= 0 {
			s.p += uint64(a.sibling)
			for _, at := range a.attrs {
				if at.attr == dwarf.AttrSibling {
					s.sibling = s.value(at.form, 0)
					break
				}
			}
			s.p = start
		}
		s.skip(int(a.size))
		return a, s.err
	}
	for _, at := range a.attrs {
		v := s.value(at.form, 0)
		if at.attr == dwarf.AttrSibling {
			s.sibling = v
		}
	}
	return a, s.err
}

// siblings scans a list of sibling DIEs, lying in found DIE parent, up to
// its null entry (or the end of the unit).
func (s *dieScanner) siblings(depth int, parent int32) error {
	if depth > maxScanDepth {
		return &DecodeError{Section: ".debug_info", Offset: s.p, Err: "DIEs nested too deep"}
	}
	for s.p < uint64(len(s.b)) {
		a, err := s.next()
		if err != nil || a == nil {
			return err
		}
		inner := parent
		if (a.tag == dwarf.TagSubprogram || a.tag == dwarf.TagInlinedSubroutine) && a.hasCode {
			inner = int32(len(s.found))
			s.found = append(s.found, foundDIE{off: dwarf.Offset(s.at), parent: parent})
		}
		if a.children && !skipSubtree[a.tag] {
			err = s.siblings(depth+1, inner)
		} else {
			err = s.skipChildren(a, depth)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// skipChildren steps over the children of the DIE just read, by its
// DW_AT_sibling if it has one.
func (s *dieScanner) skipChildren(a *abbrev, depth int) error {
	if !a.children {
		return nil
	}
	if sib := s.u.start + s.sibling; s.sibling != 0 && sib > s.p && sib <= uint64(len(s.b)) {
		s.p = sib
		return nil
	}
	if depth > maxScanDepth {
		return &DecodeError{Section: ".debug_info", Offset: s.p, Err: "DIEs nested too deep"}
	}
	for {
		c, err := s.next()
		if err != nil || c == nil {
			return err
		}
		if err := s.skipChildren(c, depth+1); err != nil {
			return err
		}
	}
}

// value steps over one attribute value of the given form and returns it if
// it is a unit-relative reference (for DW_AT_sibling), else 0.
func (s *dieScanner) value(form uint64, indirections int) uint64 {
	switch form {
	case formRef1, formRef2, formRef4, formRef8:
		return s.fixed(formSize(form, &s.u.unitHeader))
	case formRefUdata:
		return s.uleb()
	case formSdata:
		s.sleb()
	case formUdata, formStrx, formAddrx, formLoclistx, formRnglistx, formGNUAddrIndex, formGNUStrIndex:
		s.uleb()
	case formString:
		for s.err == nil && s.byte() != 0 {
		}
	case formBlock1:
		s.skip(int(s.fixed(1)))
	case formBlock2:
		s.skip(int(s.fixed(2)))
	case formBlock4:
		s.skip(int(s.fixed(4)))
	case formBlock, formExprloc:
		s.skip(int(min(s.uleb(), 1<<31)))
	case formIndirect:
		if indirections > 0 {
			s.fail("DW_FORM_indirect names itself")
		} else {
			return s.value(s.uleb(), indirections+1)
		}
	default:
		if n := formSize(form, &s.u.unitHeader); n >= 0 {
			s.skip(n)
		} else {
			s.fail(fmt.Sprintf("unknown form 0x%x", form))
		}
	}
	return 0
}

// scanBuf reads little-endian DWARF values from a section; the first
// error sticks.
type scanBuf struct {
	section string // its name, for errors
	b       []byte
	p       uint64
	err     error
}

func (r *scanBuf) fail(msg string) {
	if r.err == nil {
		r.err = &DecodeError{Section: r.section, Offset: r.p, Err: msg}
	}
	r.p = uint64(len(r.b))
}

func (r *scanBuf) skip(n int) {
	if n < 0 || uint64(n) > uint64(len(r.b))-r.p {
		r.fail("value runs past the end")
		return
	}
	r.p += uint64(n)
}

func (r *scanBuf) byte() byte {
	if r.p >= uint64(len(r.b)) {
		r.fail("value runs past the end")
		return 0
	}
	r.p++
	return r.b[r.p-1]
}

// fixed reads an n-byte little-endian value, n ≤ 8.
func (r *scanBuf) fixed(n int) uint64 {
	if uint64(n) > uint64(len(r.b))-r.p {
		r.fail("value runs past the end")
		return 0
	}
	var buf [8]byte
	copy(buf[:], r.b[r.p:r.p+uint64(n)])
	r.p += uint64(n)
	return binary.LittleEndian.Uint64(buf[:])
}

func (r *scanBuf) uleb() uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		if c < 0x80 {
			return v
		}
	}
}

func (r *scanBuf) sleb() {
	for r.err == nil && r.byte() >= 0x80 {
	}
}
