// SPDX-License-Identifier: Apache-2.0

package board

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// ReadZephyrDTS builds a Board from a Zephyr build's zephyr/zephyr.dts, the
// flattened devicetree Zephyr writes after preprocessing (every macro such
// as DT_SIZE_K already expanded to a number). It takes the memories named
// by the chosen properties zephyr,flash, zephyr,itcm, zephyr,dtcm and
// zephyr,sram, plus every enabled node with a zephyr,memory-region property.
//
// A flash chip behind a QSPI/FlexSPI controller has an address on the
// controller's bus, not in the memory map; its window is the controller's
// second reg entry (on i.MX RT: <0x60000000 size>), and its size, when the
// node has a "size" property, is that many bits.
//
// The devicetree says nothing about caches, so ICache is left zero; the
// Board's BootCritical list is Zephyr's.
func ReadZephyrDTS(r io.Reader) (*Board, error) {
	src, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading devicetree: %w", err)
	}
	tree, err := parseDTS(string(src))
	if err != nil {
		return nil, err
	}
	b := &Board{Name: "zephyr", BootCritical: append([]string(nil), zephyrBootCritical...),
		BootCopy: append([]string(nil), zephyrBootCopy...)}
	if model, ok := tree.root.stringProp("model"); ok {
		b.Name = model
	}
	seen := map[*dtsNode]bool{}
	add := func(n *dtsNode, kind RegionKind) error {
		if seen[n] {
			return nil
		}
		seen[n] = true
		reg, err := tree.memoryOf(n, kind == KindFlash)
		if err != nil {
			return err
		}
		reg.Kind = kind
		b.Regions = append(b.Regions, reg)
		return nil
	}
	chosen := tree.root.child("chosen")
	for _, c := range []struct {
		prop string
		kind RegionKind
	}{
		{"zephyr,flash", KindFlash},
		{"zephyr,itcm", KindITCM},
		{"zephyr,dtcm", KindDTCM},
		{"zephyr,sram", ""}, // OCRAM on i.MX RT, plain RAM elsewhere: see regionKind
	} {
		if chosen == nil || chosen.props[c.prop] == nil {
			continue
		}
		n, err := tree.resolvePathProp(chosen, c.prop)
		if err != nil {
			return nil, err
		}
		kind := c.kind
		if kind == "" {
			kind = regionKind(n, KindRAM)
		}
		if err := add(n, kind); err != nil {
			return nil, err
		}
	}
	var walkErr error
	tree.root.walk(func(n *dtsNode) {
		if _, ok := n.stringProp("zephyr,memory-region"); !ok || walkErr != nil {
			return
		}
		if status, _ := n.stringProp("status"); status == "disabled" {
			return
		}
		walkErr = add(n, regionKind(n, KindRAM))
	})
	if walkErr != nil {
		return nil, walkErr
	}
	if len(b.Regions) == 0 {
		return nil, &DevicetreeError{Msg: "no chosen zephyr,flash/itcm/dtcm/sram and no zephyr,memory-region nodes (is this a Zephyr zephyr.dts?)"}
	}
	sort.Slice(b.Regions, func(i, j int) bool { return b.Regions[i].Start < b.Regions[j].Start })
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("devicetree: %w", err)
	}
	return b, nil
}

// regionKind classifies a memory node by its zephyr,memory-region name
// (ITCM, DTCM, OCRAM, OCRAM2, FLASH...) or, lacking one, its node name.
func regionKind(n *dtsNode, fallback RegionKind) RegionKind {
	name, ok := n.stringProp("zephyr,memory-region")
	if !ok {
		name = n.baseName()
	}
	switch name = strings.ToUpper(name); {
	case strings.HasPrefix(name, "ITCM"):
		return KindITCM
	case strings.HasPrefix(name, "DTCM"):
		return KindDTCM
	case strings.HasPrefix(name, "OCRAM"):
		return KindOCRAM
	case strings.HasPrefix(name, "FLASH"):
		return KindFlash
	}
	return fallback
}

// memoryOf returns the memory range a node occupies, named after its
// zephyr,memory-region or, lacking one, its first label or node name.
func (t *dtsTree) memoryOf(n *dtsNode, flash bool) (Region, error) {
	name, ok := n.stringProp("zephyr,memory-region")
	if !ok {
		name = n.name
		if len(n.labels) > 0 {
			name = n.labels[0]
		}
	}
	regs, err := n.reg()
	if err != nil {
		return Region{}, err
	}
	if flash && n.parent != nil && (len(regs) == 0 || !regs[0].hasSize) {
		// A chip on a controller's bus: use the controller's memory window.
		win, err := n.parent.reg()
		if err != nil {
			return Region{}, err
		}
		if len(win) < 2 || !win[1].hasSize {
			return Region{}, dtsErrorf("flash %s has no size and its controller %s no memory window (second reg entry)", n.path(), n.parent.path())
		}
		off := uint64(0)
		if len(regs) > 0 {
			off = regs[0].addr
		}
		r := dtsReg{addr: win[1].addr + off, size: win[1].size - min(off, win[1].size), hasSize: true}
		if bits, ok, err := n.u64Prop("size"); err != nil {
			return Region{}, err
		} else if ok && bits/8 < r.size {
			r.size = bits / 8
		}
		regs = []dtsReg{r}
	}
	if len(regs) == 0 || !regs[0].hasSize {
		return Region{}, dtsErrorf("%s has no reg with a size", n.path())
	}
	r := regs[0]
	if r.addr+r.size > 1<<32 || r.size > 1<<32-1 {
		return Region{}, dtsErrorf("%s reg <%#x %#x> does not fit in 32 bits", n.path(), r.addr, r.size)
	}
	return Region{Name: name, Start: uint32(r.addr), Size: uint32(r.size)}, nil
}

// dtsTree is a parsed devicetree source with its label index.
type dtsTree struct {
	root   *dtsNode
	labels map[string]*dtsNode
}

type dtsNode struct {
	name     string // "itcm@0"; "/" for the root
	labels   []string
	props    map[string][]dtsValue
	children []*dtsNode
	parent   *dtsNode
}

// dtsValue is one comma-separated component of a property value.
type dtsValue struct {
	str   string    // a "string"
	ref   string    // &label or &{/path} used as a path
	cells []dtsCell // <...>
	bytes []byte    // [...]
	kind  byte      // 's', 'r', 'c' or 'b'
}

type dtsCell struct {
	num uint64
	ref string // a phandle reference inside <>, left unresolved
}

type dtsReg struct {
	addr, size uint64
	hasSize    bool
}

func (n *dtsNode) child(name string) *dtsNode {
	for _, c := range n.children {
		if c.name == name {
			return c
		}
	}
	return nil
}

func (n *dtsNode) baseName() string {
	name, _, _ := strings.Cut(n.name, "@")
	return name
}

func (n *dtsNode) path() string {
	if n.parent == nil {
		return "/"
	}
	if n.parent.parent == nil {
		return "/" + n.name
	}
	return n.parent.path() + "/" + n.name
}

func (n *dtsNode) walk(fn func(*dtsNode)) {
	fn(n)
	for _, c := range n.children {
		c.walk(fn)
	}
}

func (n *dtsNode) stringProp(name string) (string, bool) {
	v := n.props[name]
	if len(v) == 0 || v[0].kind != 's' {
		return "", false
	}
	return v[0].str, true
}

// cellsProp concatenates the <...> groups of a property.
func (n *dtsNode) cellsProp(name string) ([]dtsCell, bool, error) {
	vals, ok := n.props[name]
	if !ok {
		return nil, false, nil
	}
	var cells []dtsCell
	for _, v := range vals {
		if v.kind != 'c' {
			return nil, true, dtsErrorf("%s: property %s is not a list of cells", n.path(), name)
		}
		cells = append(cells, v.cells...)
	}
	return cells, true, nil
}

// u64Prop reads a one- or two-cell number.
func (n *dtsNode) u64Prop(name string) (uint64, bool, error) {
	cells, ok, err := n.cellsProp(name)
	if !ok || err != nil {
		return 0, ok, err
	}
	if len(cells) == 0 || len(cells) > 2 {
		return 0, true, dtsErrorf("%s: %s has %d cells", n.path(), name, len(cells))
	}
	return joinCells(n, name, cells)
}

func joinCells(n *dtsNode, prop string, cells []dtsCell) (uint64, bool, error) {
	var v uint64
	for _, c := range cells {
		if c.ref != "" {
			return 0, true, dtsErrorf("%s: %s holds a reference where a number belongs", n.path(), prop)
		}
		v = v<<32 | c.num
	}
	return v, true, nil
}

// addressCells returns the #address-cells and #size-cells that govern n's
// reg: its parent's, defaulting to 2 and 1 as the devicetree spec says.
func (n *dtsNode) addressCells() (ac, sc int, err error) {
	ac, sc = 2, 1
	if n.parent == nil {
		return ac, sc, nil
	}
	if v, ok, err := n.parent.u64Prop("#address-cells"); err != nil {
		return 0, 0, err
	} else if ok {
		ac = int(v)
	}
	if v, ok, err := n.parent.u64Prop("#size-cells"); err != nil {
		return 0, 0, err
	} else if ok {
		sc = int(v)
	}
	if ac < 1 || ac > 2 || sc < 0 || sc > 2 {
		return 0, 0, dtsErrorf("%s: unsupported #address-cells %d / #size-cells %d", n.parent.path(), ac, sc)
	}
	return ac, sc, nil
}

// reg decodes n's reg into (address, size) pairs.
func (n *dtsNode) reg() ([]dtsReg, error) {
	cells, ok, err := n.cellsProp("reg")
	if !ok || err != nil {
		return nil, err
	}
	ac, sc, err := n.addressCells()
	if err != nil {
		return nil, err
	}
	if len(cells)%(ac+sc) != 0 {
		return nil, dtsErrorf("%s: reg has %d cells, not a multiple of %d+%d", n.path(), len(cells), ac, sc)
	}
	var regs []dtsReg
	for i := 0; i < len(cells); i += ac + sc {
		addr, _, err := joinCells(n, "reg", cells[i:i+ac])
		if err != nil {
			return nil, err
		}
		size, _, err := joinCells(n, "reg", cells[i+ac:i+ac+sc])
		if err != nil {
			return nil, err
		}
		regs = append(regs, dtsReg{addr: addr, size: size, hasSize: sc > 0})
	}
	return regs, nil
}

// resolvePathProp follows a chosen-style property: &label, &{/path} or a
// "/path" string.
func (t *dtsTree) resolvePathProp(n *dtsNode, prop string) (*dtsNode, error) {
	v := n.props[prop]
	if len(v) != 1 || (v[0].kind != 'r' && v[0].kind != 's') {
		return nil, dtsErrorf("%s: %s is not a node reference", n.path(), prop)
	}
	target, err := t.lookup(v[0].ref + v[0].str)
	if err != nil {
		return nil, dtsErrorf("%s: %s: %v", n.path(), prop, err)
	}
	return target, nil
}

// lookup finds a node by label or by absolute path. A path component
// without a unit address matches a single child of that base name.
func (t *dtsTree) lookup(ref string) (*dtsNode, error) {
	if !strings.HasPrefix(ref, "/") {
		if n := t.labels[ref]; n != nil {
			return n, nil
		}
		return nil, fmt.Errorf("no node labelled %q", ref)
	}
	n := t.root
	for _, part := range strings.Split(strings.Trim(ref, "/"), "/") {
		if part == "" {
			continue
		}
		next := n.child(part)
		if next == nil && !strings.Contains(part, "@") {
			for _, c := range n.children {
				if c.baseName() == part {
					if next != nil {
						return nil, fmt.Errorf("path %s: %q is ambiguous under %s", ref, part, n.path())
					}
					next = c
				}
			}
		}
		if next == nil {
			return nil, fmt.Errorf("no node at path %s", ref)
		}
		n = next
	}
	return n, nil
}

// dtsLexer splits devicetree source into tokens. It keeps the line number
// for error messages.
type dtsLexer struct {
	src  string
	pos  int
	line int
}

type dtsToken struct {
	kind byte   // 'w' word, 'l' label (word:), 's' string, 'r' &ref, 'p' punctuation, 0 EOF
	text string // word, label, unquoted string, ref target or punctuation char
	line int
}

func isDTSWordChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(",._+*#?@-/", c) >= 0
}

func (l *dtsLexer) errorf(format string, args ...any) error {
	return &DevicetreeError{Line: l.line, Msg: fmt.Sprintf(format, args...)}
}

// skipSpace skips blanks and comments.
func (l *dtsLexer) skipSpace() error {
	for l.pos < len(l.src) {
		switch c := l.src[l.pos]; {
		case c == '\n':
			l.line++
			l.pos++
		case c == ' ' || c == '\t' || c == '\r':
			l.pos++
		case strings.HasPrefix(l.src[l.pos:], "//"):
			for l.pos < len(l.src) && l.src[l.pos] != '\n' {
				l.pos++
			}
		case strings.HasPrefix(l.src[l.pos:], "/*"):
			end := strings.Index(l.src[l.pos+2:], "*/")
			if end < 0 {
				return l.errorf("unterminated comment")
			}
			l.line += strings.Count(l.src[l.pos:l.pos+2+end], "\n")
			l.pos += end + 4
		default:
			return nil
		}
	}
	return nil
}

func (l *dtsLexer) next() (dtsToken, error) {
	if err := l.skipSpace(); err != nil {
		return dtsToken{}, err
	}
	if l.pos >= len(l.src) {
		return dtsToken{line: l.line}, nil
	}
	start, c := l.pos, l.src[l.pos]
	tok := dtsToken{line: l.line}
	switch {
	case c == '"':
		var sb strings.Builder
		for l.pos++; ; l.pos++ {
			if l.pos >= len(l.src) || l.src[l.pos] == '\n' {
				return tok, l.errorf("unterminated string")
			}
			ch := l.src[l.pos]
			if ch == '"' {
				break
			}
			if ch == '\\' && l.pos+1 < len(l.src) {
				l.pos++
				ch = l.src[l.pos]
			}
			sb.WriteByte(ch)
		}
		l.pos++
		tok.kind, tok.text = 's', sb.String()
	case c == '&':
		l.pos++
		if strings.HasPrefix(l.src[l.pos:], "{") {
			end := strings.IndexByte(l.src[l.pos:], '}')
			if end < 0 {
				return tok, l.errorf("unterminated &{path}")
			}
			tok.kind, tok.text = 'r', l.src[l.pos+1:l.pos+end]
			l.pos += end + 1
			break
		}
		for l.pos < len(l.src) && (isDTSWordChar(l.src[l.pos]) && l.src[l.pos] != '/') {
			l.pos++
		}
		if l.pos == start+1 {
			return tok, l.errorf("'&' without a label")
		}
		tok.kind, tok.text = 'r', l.src[start+1:l.pos]
	case isDTSWordChar(c) && c != ',': // a leading ',' separates values
		for l.pos < len(l.src) && isDTSWordChar(l.src[l.pos]) {
			l.pos++
		}
		tok.kind, tok.text = 'w', l.src[start:l.pos]
		if l.pos < len(l.src) && l.src[l.pos] == ':' {
			l.pos++
			tok.kind = 'l'
		}
	case strings.IndexByte("{};=<>[],()", c) >= 0:
		l.pos++
		tok.kind, tok.text = 'p', string(c)
	default:
		return tok, l.errorf("unexpected character %q", c)
	}
	return tok, nil
}

// dtsParser is a recursive-descent parser over dtsLexer with one token of
// lookahead.
type dtsParser struct {
	lex  dtsLexer
	tok  dtsToken
	tree *dtsTree
}

func (p *dtsParser) advance() error {
	t, err := p.lex.next()
	p.tok = t
	return err
}

func (p *dtsParser) errorf(format string, args ...any) error {
	return &DevicetreeError{Line: p.tok.line, Msg: fmt.Sprintf(format, args...)}
}

func (p *dtsParser) expect(punct string) error {
	if p.tok.kind != 'p' || p.tok.text != punct {
		return p.errorf("expected %q, found %q", punct, p.tok.text)
	}
	return p.advance()
}

func parseDTS(src string) (*dtsTree, error) {
	p := &dtsParser{lex: dtsLexer{src: src, line: 1}}
	p.tree = &dtsTree{root: &dtsNode{name: "/", props: map[string][]dtsValue{}}, labels: map[string]*dtsNode{}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	for p.tok.kind != 0 {
		switch {
		case p.tok.kind == 'w' && p.tok.text == "/dts-v1/":
			if err := p.advance(); err != nil {
				return nil, err
			}
			if err := p.expect(";"); err != nil {
				return nil, err
			}
		case p.tok.kind == 'w' && p.tok.text == "/memreserve/":
			for p.tok.kind != 'p' || p.tok.text != ";" {
				if p.tok.kind == 0 {
					return nil, p.errorf("unterminated /memreserve/")
				}
				if err := p.advance(); err != nil {
					return nil, err
				}
			}
			if err := p.advance(); err != nil {
				return nil, err
			}
		case p.tok.kind == 'w' && p.tok.text == "/":
			if err := p.advance(); err != nil {
				return nil, err
			}
			if err := p.nodeBody(p.tree.root); err != nil {
				return nil, err
			}
		case p.tok.kind == 'r': // &label { ... }; amends a labelled node
			n, err := p.tree.lookup(p.tok.text)
			if err != nil {
				return nil, p.errorf("%v", err)
			}
			if err := p.advance(); err != nil {
				return nil, err
			}
			if err := p.nodeBody(n); err != nil {
				return nil, err
			}
		default:
			return nil, p.errorf("unexpected %q at top level (only /dts-v1/, / { } and &label { } are supported)", p.tok.text)
		}
	}
	return p.tree, nil
}

// nodeBody parses "{ properties and children };" into n.
func (p *dtsParser) nodeBody(n *dtsNode) error {
	if err := p.expect("{"); err != nil {
		return err
	}
	for p.tok.kind != 'p' || p.tok.text != "}" {
		var labels []string
		for p.tok.kind == 'l' {
			labels = append(labels, p.tok.text)
			if err := p.advance(); err != nil {
				return err
			}
		}
		if p.tok.kind != 'w' {
			return p.errorf("expected a property or node name, found %q", p.tok.text)
		}
		if strings.HasPrefix(p.tok.text, "/") {
			return p.errorf("directive %s is not supported; use the generated zephyr/zephyr.dts", p.tok.text)
		}
		name := p.tok.text
		if err := p.advance(); err != nil {
			return err
		}
		if p.tok.kind == 'p' && p.tok.text == "{" {
			child := n.child(name)
			if child == nil {
				child = &dtsNode{name: name, props: map[string][]dtsValue{}, parent: n}
				n.children = append(n.children, child)
			}
			for _, l := range labels {
				child.labels = append(child.labels, l)
				p.tree.labels[l] = child
			}
			if err := p.nodeBody(child); err != nil {
				return err
			}
			continue
		}
		vals, err := p.propValue()
		if err != nil {
			return err
		}
		n.props[name] = vals
	}
	if err := p.advance(); err != nil {
		return err
	}
	return p.expect(";")
}

// propValue parses "[= value {, value}] ;".
func (p *dtsParser) propValue() ([]dtsValue, error) {
	vals := []dtsValue{}
	if p.tok.kind == 'p' && p.tok.text == ";" {
		return vals, p.advance()
	}
	if err := p.expect("="); err != nil {
		return nil, err
	}
	for {
		for p.tok.kind == 'l' { // labels inside values are legal and meaningless here
			if err := p.advance(); err != nil {
				return nil, err
			}
		}
		var v dtsValue
		switch {
		case p.tok.kind == 's':
			v = dtsValue{kind: 's', str: p.tok.text}
		case p.tok.kind == 'r':
			v = dtsValue{kind: 'r', ref: p.tok.text}
		case p.tok.kind == 'p' && p.tok.text == "<":
			cells, err := p.cells()
			if err != nil {
				return nil, err
			}
			v = dtsValue{kind: 'c', cells: cells}
		case p.tok.kind == 'p' && p.tok.text == "[":
			b, err := p.byteString()
			if err != nil {
				return nil, err
			}
			v = dtsValue{kind: 'b', bytes: b}
		case p.tok.kind == 'w' && p.tok.text == "/bits/":
			return nil, p.errorf("/bits/ is not supported")
		default:
			return nil, p.errorf("unexpected %q in a property value", p.tok.text)
		}
		vals = append(vals, v)
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind == 'p' && p.tok.text == "," {
			if err := p.advance(); err != nil {
				return nil, err
			}
			continue
		}
		return vals, p.expect(";")
	}
}

// cells parses the inside of <...>, leaving p.tok on the closing '>'.
func (p *dtsParser) cells() ([]dtsCell, error) {
	var cells []dtsCell
	for {
		if err := p.advance(); err != nil {
			return nil, err
		}
		switch {
		case p.tok.kind == 'p' && p.tok.text == ">":
			return cells, nil
		case p.tok.kind == 'r':
			cells = append(cells, dtsCell{ref: p.tok.text})
		case p.tok.kind == 'l':
			// a label on a cell
		case p.tok.kind == 'w':
			v, err := strconv.ParseUint(p.tok.text, 0, 32)
			if err != nil {
				return nil, p.errorf("bad cell %q (expressions are not supported; use the generated zephyr/zephyr.dts)", p.tok.text)
			}
			cells = append(cells, dtsCell{num: v})
		default:
			return nil, p.errorf("unexpected %q in <...>", p.tok.text)
		}
	}
}

// byteString parses the inside of [...], leaving p.tok on the ']'.
func (p *dtsParser) byteString() ([]byte, error) {
	var out []byte
	for {
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind == 'p' && p.tok.text == "]" {
			return out, nil
		}
		if p.tok.kind != 'w' || len(p.tok.text)%2 != 0 {
			return nil, p.errorf("bad byte string element %q", p.tok.text)
		}
		for i := 0; i < len(p.tok.text); i += 2 {
			v, err := strconv.ParseUint(p.tok.text[i:i+2], 16, 8)
			if err != nil {
				return nil, p.errorf("bad byte string element %q", p.tok.text)
			}
			out = append(out, byte(v))
		}
	}
}
