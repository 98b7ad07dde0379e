// SPDX-License-Identifier: Apache-2.0

package board

import (
	"fmt"
	"io"
	"sort"
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
