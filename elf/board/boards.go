// SPDX-License-Identifier: Apache-2.0

package board

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tcmprof/tcmprof/elf/symname"
)

// CacheGeometry describes an instruction cache.
type CacheGeometry struct {
	Size     uint32 // bytes
	Ways     uint32
	LineSize uint32 // bytes
}

// Sets is the number of sets: Size / (Ways * LineSize), 0 when the geometry
// is unknown.
func (c CacheGeometry) Sets() uint32 {
	if c.Ways == 0 || c.LineSize == 0 {
		return 0
	}
	return c.Size / (c.Ways * c.LineSize)
}

// FlashLineFillCycles is what one I-cache line fill from the i.MX RT1062's
// QSPI flash costs the core, in cycles (the Teensy report docs/sim.md
// cites): the cache model's default penalty and the planner's price of a
// miss in the code a plan leaves in flash.
const FlashLineFillCycles = 500

// Board is the data tcmprof needs about a target: where each memory is, the
// I-cache, and which functions run before the boot code copies ITCM contents
// from flash (those must stay in flash: moving them to ITCM would execute
// uninitialised memory).
type Board struct {
	Name    string
	Regions []Region
	ICache  CacheGeometry
	// BootCritical are the boot path's entry points and early helpers
	// (names of every tree the board supports; an image has some of them).
	BootCritical []string
	// BootCopy names the routines that copy the ITCM code from flash. A
	// boot-critical function that calls one is boot-critical only up to
	// that call: what it calls afterwards (the kernel, main) runs with ITCM
	// filled. See place.Input.BootCopies.
	BootCopy []string
}

// zephyrBootCritical lists the functions of Zephyr's Cortex-M reset path that
// run before arch_data_copy() has filled ITCM (arch/arm/core/cortex_m/reset.S,
// prep_c.c, soc/nxp/imxrt, code_relocation.c), including the string helpers
// they call. z_early_memcpy/z_early_memset are the names in older trees.
var zephyrBootCritical = []string{
	"z_arm_reset", "soc_reset_hook", "SystemInit", "z_prep_c",
	"arch_bss_zero", "arch_data_copy", "arch_early_memcpy", "arch_early_memset",
	"memcpy", "memset", "relocate_vector_table", "z_arm_floating_point_init",
	"data_copy_xip_relocation", "bss_zeroing_relocation",
	"z_early_memcpy", "z_early_memset",
}

// zephyrBootCopy is Zephyr's copy of the relocated code and data, which
// z_prep_c calls before z_cstart (arch_data_copy; z_data_copy in trees
// before the arch_ rename).
var zephyrBootCopy = []string{"arch_data_copy", "z_data_copy"}

// teensy41Regions is the i.MX RT1062 map with the default FlexRAM split
// (128 KB ITCM, 128 KB DTCM, 256 KB OCRAM) and Teensy 4.1's 8 MB QSPI flash.
func teensy41Regions() []Region {
	return []Region{
		{Name: "ITCM", Kind: KindITCM, Start: 0x00000000, Size: 128 << 10},
		{Name: "DTCM", Kind: KindDTCM, Start: 0x20000000, Size: 128 << 10},
		{Name: "OCRAM2", Kind: KindOCRAM, Start: 0x20200000, Size: 512 << 10},
		{Name: "OCRAM", Kind: KindOCRAM, Start: 0x20280000, Size: 256 << 10},
		{Name: "FLASH", Kind: KindFlash, Start: 0x60000000, Size: 8 << 20},
	}
}

// rt1062ICache is the Cortex-M7 L1 I-cache as configured on the i.MX RT1062.
var rt1062ICache = CacheGeometry{Size: 32 << 10, Ways: 2, LineSize: 32}

// builtinBoards returns fresh copies so that callers may modify what they get.
var builtinBoards = map[string]func() *Board{
	"teensy41": func() *Board {
		return &Board{
			Name:         "teensy41",
			Regions:      teensy41Regions(),
			ICache:       rt1062ICache,
			BootCritical: append([]string(nil), zephyrBootCritical...),
			BootCopy:     append([]string(nil), zephyrBootCopy...),
		}
	},
	// The QEMU demo (mps2-an500) mirrors the Teensy map; its firmware's
	// reset handler and copy loop must keep these names (docs/boards.md).
	// Past the 8 MB of flash it has its testbench (ld/teensy_qemu.ld).
	"qemu-demo": func() *Board {
		return &Board{
			Name:         "qemu-demo",
			Regions:      append(teensy41Regions(), Region{Name: "TESTBENCH", Kind: KindTestbench, Start: 0x60800000, Size: 8 << 20}),
			ICache:       rt1062ICache,
			BootCritical: []string{"Reset_Handler", "boot_copy"},
			BootCopy:     []string{"boot_copy"},
		}
	},
}

// Names lists the built-in boards, sorted.
func Names() []string {
	names := make([]string, 0, len(builtinBoards))
	for n := range builtinBoards {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ByName returns a copy of a built-in board.
func ByName(name string) (*Board, error) {
	mk, ok := builtinBoards[name]
	if !ok {
		return nil, fmt.Errorf("unknown board %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return mk(), nil
}

// RegionOf returns the region that contains addr.
func (b *Board) RegionOf(addr uint32) (Region, bool) {
	for _, r := range b.Regions {
		if r.Contains(addr) {
			return r, true
		}
	}
	return Region{}, false
}

// IsBootCritical reports whether the function called name runs before the
// boot copy. Compiler clones (name.constprop.0, name.isra.0, name.part.0)
// count as their origin.
func (b *Board) IsBootCritical(name string) bool { return hasOrigin(b.BootCritical, name) }

// IsBootCopy reports whether the function called name is one of the
// board's ITCM copy routines (clones count as their origin).
func (b *Board) IsBootCopy(name string) bool { return hasOrigin(b.BootCopy, name) }

// hasOrigin reports whether names holds name without its clone suffix.
func hasOrigin(names []string, name string) bool {
	base, _ := symname.SplitClone(name)
	return slices.Contains(names, base)
}

// Validate checks that every region is non-empty, fits in 32 bits, has a
// known kind, and that no two regions overlap.
func (b *Board) Validate() error {
	rs := append([]Region(nil), b.Regions...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Start < rs[j].Start })
	for i, r := range rs {
		switch r.Kind {
		case KindFlash, KindITCM, KindDTCM, KindOCRAM, KindRAM, KindTestbench:
		default:
			return &InvalidError{Board: b.Name, Msg: fmt.Sprintf("region %s has kind %q", r.Name, r.Kind)}
		}
		if r.Size == 0 {
			return &InvalidError{Board: b.Name, Msg: fmt.Sprintf("region %s is empty", r.Name)}
		}
		if r.End() > 1<<32 {
			return &InvalidError{Board: b.Name, Msg: fmt.Sprintf("region %v runs past 4 GB", r)}
		}
		if i > 0 && uint64(r.Start) < rs[i-1].End() {
			return &InvalidError{Board: b.Name, Msg: fmt.Sprintf("regions %v and %v overlap", rs[i-1], r)}
		}
	}
	return nil
}
