// SPDX-License-Identifier: Apache-2.0

package place

import (
	"path"
	"sort"
)

// Facts about GNU ld (binutils elf32-arm.c) that the cost model relies on;
// the link test in package linker checks them against a real link.
const (
	// StubSize is the size of elf32_arm_stub_long_branch_thumb2_only,
	// "ldr.w pc, [pc, #-0]" plus a literal, the veneer ld inserts for a
	// Thumb-2-only core when a BL or B.W target is out of range.
	StubSize = 8
	// stubSectionAlign is the alignment of ld's ".stub" input sections; the
	// linker pads to it before the first stub of a group.
	stubSectionAlign = 8
	// branchRange is the reach of a Thumb-2 BL/B.W: ±16 MiB. ITCM (0x0) and
	// QSPI flash (0x6000_0000) are 1.5 GiB apart, so every call between them
	// goes through a stub.
	branchRange = 1 << 24
)

// Layout is the order in which the linker will lay out the planned input
// sections. Padding depends on it, so the planner models the one the chosen
// output uses.
type Layout string

const (
	// LayoutLD is the order of the GNU ld fragment this tool writes: by
	// alignment, largest first (least padding), then object and section.
	LayoutLD Layout = "ld"
	// LayoutZephyr is the order gen_relocate_app.py writes: sorted by object
	// file base name, then section name.
	LayoutZephyr Layout = "zephyr"
)

// Cost is what moving a set of functions into ITCM costs.
type Cost struct {
	// Bytes is the ITCM the plan adds: its block (code, padding, the stubs
	// its calls into flash need) minus the stubs that existing ITCM code no
	// longer needs because their targets moved into ITCM too. May be
	// negative in corner cases (tiny functions called from ITCM).
	Bytes int64 `json:"bytes"`
	// Code is the sum of the moved input sections' sizes.
	Code int64 `json:"code"`
	// Padding is the alignment padding inside the block (before functions
	// and before the stub section).
	Padding int64 `json:"padding"`
	// ITCMStubs is the number of veneers the block needs for its calls out of
	// ITCM (one per distinct far target).
	ITCMStubs int `json:"itcm_stubs"`
	// RemovedStubs counts existing ITCM veneers whose targets move into ITCM.
	RemovedStubs int `json:"removed_stubs"`
}

// model holds the image facts the cost of a selection depends on.
type model struct {
	in      *Input
	itcm    []bool    // function is in ITCM in the current image
	callees [][]int32 // distinct callees of each function
	group   []string  // stub group of each function when it does not move
	// removable marks functions that existing ITCM code reaches through a
	// veneer; the veneer goes away when the function moves into ITCM.
	removable []bool
	base      uint32 // first free ITCM byte
	start     uint32 // where the block's first section begins if no ITCM veneer goes away
	align     uint32 // alignment of the block's start
	// ITCM veneers of the code already there: how many, and where that
	// code ends. ld puts a group's stubs after its last input section, so
	// when ITCMUsed ends exactly with them, each one that goes away pulls
	// the block 8 bytes down, and the last one takes the padding before the
	// stub section with it.
	itcmStubs      int
	itcmCodeEnd    uint32
	itcmStubsAtEnd bool
	stamp          []uint32 // scratch for counting distinct targets
	stampGen       uint32
}

func newModel(in *Input) *model {
	n := len(in.Funcs)
	m := &model{
		in:        in,
		itcm:      make([]bool, n),
		callees:   make([][]int32, n),
		group:     make([]string, n),
		base:      in.ITCMStart + in.ITCMUsed,
		stamp:     make([]uint32, n),
		removable: make([]bool, n),
	}
	m.setBlockAlign(1)
	byAddr := make(map[uint32]int32, n)
	for i := range in.Funcs {
		f := &in.Funcs[i]
		byAddr[f.Addr] = int32(i)
		m.itcm[i] = in.InITCM(f.Addr)
		switch {
		case m.itcm[i]:
			m.group[i] = "itcm"
		case f.Region != "":
			m.group[i] = f.Region
		default:
			m.group[i] = "other"
		}
	}
	seen := make(map[[2]int32]bool, len(in.Edges))
	for _, e := range in.Edges {
		c, ok1 := byAddr[e.Caller]
		t, ok2 := byAddr[e.Callee]
		if !ok1 || !ok2 || c == t || seen[[2]int32{c, t}] {
			continue
		}
		seen[[2]int32{c, t}] = true
		m.callees[c] = append(m.callees[c], t)
		if m.itcm[c] && !m.itcm[t] && far(in.Funcs[c].Addr, in.Funcs[t].Addr) {
			if !m.removable[t] {
				m.itcmStubs++
			}
			m.removable[t] = true
		}
	}
	m.itcmCodeEnd = in.ITCMStart
	for i := range in.Funcs {
		if m.itcm[i] {
			m.itcmCodeEnd = max(m.itcmCodeEnd, in.Funcs[i].Addr+in.Funcs[i].Size)
		}
	}
	m.itcmStubsAtEnd = m.itcmStubs > 0 &&
		alignUp(m.itcmCodeEnd, stubSectionAlign)+uint32(m.itcmStubs)*StubSize == m.base
	return m
}

// blockAlign is the alignment of the start of the moved block: the
// largest alignment among the candidates and the stub section. An output
// section starts aligned to its largest input section, so the block is
// started at this alignment whatever is chosen (the ld fragment begins with
// ". = ALIGN(n)"), which keeps the layout of a selection independent of
// which members it has.
func blockAlign(fs []Func, cands []int) uint32 {
	a := uint32(stubSectionAlign)
	for _, i := range cands {
		a = max(a, fs[i].Align)
	}
	return a
}

// setBlockAlign fixes the alignment of the block's start.
func (m *model) setBlockAlign(a uint32) {
	m.align = a
	m.start = alignUp(m.base, a)
}

// blockBase is the first free ITCM byte when removed of the existing ITCM
// veneers go away; the block starts there, aligned.
func (m *model) blockBase(removed int) uint32 {
	switch {
	case removed == 0:
		return m.base
	case m.itcmStubsAtEnd && removed == m.itcmStubs:
		return m.itcmCodeEnd
	}
	return m.base - uint32(removed)*StubSize
}

// stubPadding is the padding before the existing ITCM stub section, which
// goes away with the last of those stubs: the most by which a plan's
// Bytes can undercut its code size minus the removed stubs.
func (m *model) stubPadding() int64 {
	if !m.itcmStubsAtEnd {
		return 0
	}
	return int64(m.base-m.itcmCodeEnd) - int64(m.itcmStubs)*StubSize
}

func alignUp(x, a uint32) uint32 {
	if a <= 1 {
		return x
	}
	return (x + a - 1) &^ (a - 1)
}

func far(a, b uint32) bool {
	d := int64(a) - int64(b)
	return d >= branchRange || d <= -branchRange
}

// emissionOrder sorts candidate function indices into the order the
// chosen output makes the linker lay them out.
func (m *model) emissionOrder(cands []int, layout Layout) {
	fs := m.in.Funcs
	sort.SliceStable(cands, func(a, b int) bool {
		fa, fb := &fs[cands[a]], &fs[cands[b]]
		if layout == LayoutZephyr {
			if oa, ob := path.Base(fa.Object), path.Base(fb.Object); oa != ob {
				return oa < ob
			}
			return fa.Section < fb.Section
		}
		if fa.Align != fb.Align {
			return fa.Align > fb.Align
		}
		if fa.Archive != fb.Archive {
			return fa.Archive < fb.Archive
		}
		if fa.Object != fb.Object {
			return fa.Object < fb.Object
		}
		return fa.Section < fb.Section
	})
}

func (m *model) nextStamp() uint32 {
	m.stampGen++
	if m.stampGen == 0 { // wrapped: clear and restart
		clear(m.stamp)
		m.stampGen = 1
	}
	return m.stampGen
}

// cost evaluates moving the functions of order (already in emission order)
// for which inPlan is true.
func (m *model) cost(order []int, inPlan []bool) Cost {
	fs := m.in.Funcs
	var c Cost
	any := false
	for _, i := range order {
		if inPlan[i] {
			any = true
			if m.removable[i] {
				c.RemovedStubs++
			}
		}
	}
	if !any {
		return Cost{}
	}
	floor := m.blockBase(c.RemovedStubs)
	start := alignUp(floor, m.align)
	c.Padding = int64(start - floor)
	addr := start
	for _, i := range order {
		if !inPlan[i] {
			continue
		}
		f := &fs[i]
		next := alignUp(addr, f.Align)
		c.Padding += int64(next - addr)
		addr = next + f.Size
		c.Code += int64(f.Size)
	}
	gen := m.nextStamp()
	for _, i := range order {
		if !inPlan[i] {
			continue
		}
		for _, t := range m.callees[i] {
			if inPlan[t] || m.stamp[t] == gen || !far(start, fs[t].Addr) {
				continue
			}
			m.stamp[t] = gen
			c.ITCMStubs++
		}
	}
	if c.ITCMStubs > 0 {
		next := alignUp(addr, stubSectionAlign)
		c.Padding += int64(next - addr)
		addr = next + uint32(c.ITCMStubs)*StubSize
	}
	// Bytes is the change of the first free ITCM byte.
	c.Bytes = int64(addr) - int64(m.base)
	return c
}

// veneers counts the long-branch stubs the whole image needs when the
// functions marked inPlan move into ITCM: one per distinct out-of-range
// target per stub group (ld builds one stub group per output section, so
// per region here; the moved block is its own group).
func (m *model) veneers(inPlan []bool) int {
	fs := m.in.Funcs
	addrOf := func(i int) uint32 {
		if inPlan != nil && inPlan[i] {
			return m.start
		}
		return fs[i].Addr
	}
	groupOf := func(i int) string {
		if inPlan != nil && inPlan[i] {
			return "\x00plan"
		}
		return m.group[i]
	}
	type key struct {
		group  string
		target int32
	}
	stubs := make(map[key]bool)
	for c := range fs {
		for _, t := range m.callees[c] {
			if far(addrOf(c), addrOf(int(t))) {
				stubs[key{groupOf(c), t}] = true
			}
		}
	}
	return len(stubs)
}
