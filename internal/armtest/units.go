// SPDX-License-Identifier: Apache-2.0

package armtest

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var unitsBuild = &Build{
	Prefix: "tcmprof-elf-units",
	Src:    filepath.Join(dir, "testdata/units"),
	Recipe: []string{filepath.Join(dir, "units.go")},
	Make:   makeUnits,
	Tools:  []string{"arm-none-eabi-objcopy"},
}

// UnitsELF builds the DWARF index's fixtures once per test binary and
// returns the path of the named one: dwarf4.elf, dwarf5.elf, nodebug.elf
// (dwarf5.elf with its DWARF stripped) or lto.elf (alpha, beta and gamma
// built with -flto, untouched). Their units are placed in every way the
// index handles: a unit .debug_aranges lists (alpha), one it does not
// (beta: found by its DW_AT_ranges), one that nothing places but its
// contents (gamma), each unit's code spread over several places with
// other units' code in between.
func UnitsELF(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(unitsBuild.Dir(t), name)
}

func makeUnits(src, dir string) error {
	run := func(name string, args ...string) error { return Run(dir, name, args...) }
	for _, v := range []string{"4", "5"} {
		var objs []string
		for _, c := range []string{"main", "alpha", "beta", "gamma"} {
			o := c + v + ".o"
			if err := run("arm-none-eabi-gcc", "-mcpu=cortex-m7", "-mthumb", "-O2", "-gdwarf-"+v,
				"-ffunction-sections", "-fdata-sections", "-c", filepath.Join(src, c+".c"), "-o", o); err != nil {
				return err
			}
			objs = append(objs, o)
		}
		for _, o := range []string{"beta" + v + ".o", "gamma" + v + ".o"} {
			if err := run("arm-none-eabi-objcopy", "--remove-section=.debug_aranges", o); err != nil {
				return err
			}
		}
		if err := renameUnitRanges(filepath.Join(dir, "gamma"+v+".o")); err != nil {
			return err
		}
		args := append([]string{"-mcpu=cortex-m7", "-mthumb", "-nostdlib", "-T", filepath.Join(src, "units.ld"),
			"-Wl,--gc-sections", "-o", "dwarf" + v + ".elf"}, objs...)
		if err := run("arm-none-eabi-gcc", args...); err != nil {
			return err
		}
	}
	// Link-time optimisation: the unit of the optimised code names DIEs
	// of the sources' units (DW_FORM_ref_addr), which the index must
	// follow across units. main.c is built without, so that this unit does
	// not start at offset 0, where such offsets would equal unit-relative
	// ones.
	lto := []string{"main5.o"}
	for _, c := range []string{"alpha", "beta", "gamma"} {
		o := "lto_" + c + ".o"
		if err := run("arm-none-eabi-gcc", "-mcpu=cortex-m7", "-mthumb", "-O2", "-g", "-flto",
			"-ffunction-sections", "-fdata-sections", "-c", filepath.Join(src, c+".c"), "-o", o); err != nil {
			return err
		}
		lto = append(lto, o)
	}
	args := append([]string{"-mcpu=cortex-m7", "-mthumb", "-O2", "-g", "-flto", "-nostdlib",
		"-T", filepath.Join(src, "units.ld"), "-Wl,--gc-sections", "-o", "lto.elf"}, lto...)
	if err := run("arm-none-eabi-gcc", args...); err != nil {
		return err
	}
	return run("arm-none-eabi-objcopy", "--strip-debug", "dwarf5.elf", "nodebug.elf")
}

// renameUnitRanges rewrites, in the object file at path, the DW_AT_ranges
// of its compile unit's abbreviation to an attribute no reader knows
// (0x04, reserved), so that the unit's DIE no longer says where its code
// is. (Its DW_AT_low_pc stays: it is 0, the base of the ranges below.)
func renameUnitRanges(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return err
	}
	info, abbrev := f.Section(".debug_info"), f.Section(".debug_abbrev")
	if info == nil || abbrev == nil {
		return fmt.Errorf("%s: no DWARF", path)
	}
	// The unit header: length, version, then (DWARF 5) unit type and
	// address size before the abbreviation offset; the first DIE follows.
	hdr := data[info.Offset:]
	off, die := 6, 11
	if binary.LittleEndian.Uint16(hdr[4:]) >= 5 {
		off, die = 8, 12
	}
	table := data[abbrev.Offset+uint64(binary.LittleEndian.Uint32(hdr[off:])):]
	code, _ := uleb(hdr[die:])
	// Declarations: code, tag, children flag, (attribute, form[, implicit
	// constant]) pairs ending in 0, 0.
	for p := 0; ; {
		c, n := uleb(table[p:])
		if c == 0 {
			return fmt.Errorf("%s: abbreviation %d of the unit's DIE not found", path, code)
		}
		p += n
		_, n = uleb(table[p:]) // tag
		p += n + 1
		for {
			attr, n := uleb(table[p:])
			form, m := uleb(table[p+n:])
			if c == code && attr == uint64(dwarf.AttrRanges) {
				table[p] = 0x04
				return os.WriteFile(path, data, 0o644)
			}
			p += n + m
			if form == 0x21 { // DW_FORM_implicit_const
				_, k := uleb(table[p:])
				p += k
			}
			if attr == 0 && form == 0 {
				break
			}
		}
		if c == code {
			return fmt.Errorf("%s: the unit's DIE has no DW_AT_ranges", path)
		}
	}
}

func uleb(b []byte) (v uint64, n int) {
	for shift := 0; n < len(b); shift += 7 {
		c := b[n]
		n++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			break
		}
	}
	return v, n
}
