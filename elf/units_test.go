// SPDX-License-Identifier: Apache-2.0

package elf

import (
	"bytes"
	"debug/dwarf"
	goelf "debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tcmprof/tcmprof/internal/armtest"
)

// The DWARF is indexed by compile unit at Load and a unit decoded when an
// address first falls in it (dwarfindex.go). These tests prove the index
// against llvm-symbolizer and addr2line on firmware built from
// testdata/units, whose units are placed in every way the index handles: a
// unit .debug_aranges lists (alpha), one it does not (beta: found by its
// DW_AT_ranges), one that nothing places but its contents (gamma: scanned
// on the first address no placed unit holds), each unit's code spread over
// several places with other units' code in between (several line sequences
// per unit), and the same ELF without DWARF.

var unitsBuild = &armtest.Build{
	Prefix: "tcmprof-elf-units",
	Src:    "testdata/units",
	Recipe: []string{"units_test.go"},
	Make:   buildUnitsIn,
}

// unitsELF builds the fixtures once per test binary and returns the path
// of the named one: dwarf4.elf, dwarf5.elf, nodebug.elf (dwarf5.elf with
// its DWARF stripped) or lto.elf (alpha, beta and gamma built with -flto,
// untouched).
func unitsELF(t testing.TB, name string) string {
	t.Helper()
	for _, tool := range []string{"arm-none-eabi-gcc", "arm-none-eabi-objcopy"} {
		armtest.NeedTools(t, tool)
	}
	return filepath.Join(unitsBuild.Dir(t), name)
}

func buildUnitsIn(src, dir string) error {
	run := func(name string, args ...string) error { return armtest.Run(dir, name, args...) }
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
	f, err := goelf.NewFile(bytes.NewReader(data))
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

// unitFacts is what an independent reader (debug/dwarf and readelf) says
// about one compile unit of a fixture.
type unitFacts struct {
	offset    dwarf.Offset // of the unit header, as .debug_aranges names it
	ranges    [][2]uint64  // from the unit's DIE
	sequences int          // line sequences
	inAranges bool
}

var arangesUnit = regexp.MustCompile(`Offset into \.debug_info:\s+0x([0-9a-f]+)`)

// unitFactsOf reads the fixture's units by their source file's base name.
func unitFactsOf(t *testing.T, path string) map[string]*unitFacts {
	t.Helper()
	f, err := goelf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dw, err := f.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	listed := map[dwarf.Offset]bool{}
	for _, m := range arangesUnit.FindAllStringSubmatch(armtest.Output(t, "arm-none-eabi-readelf", "--debug-dump=aranges", path), -1) {
		off, _ := strconv.ParseUint(m[1], 16, 32)
		listed[dwarf.Offset(off)] = true
	}
	facts := map[string]*unitFacts{}
	r := dw.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			break
		}
		if e.Tag != dwarf.TagCompileUnit {
			continue
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		u := &unitFacts{}
		// The header is 11 (DWARF 4) or 12 (DWARF 5) bytes before the DIE.
		for _, h := range []dwarf.Offset{11, 12} {
			if listed[e.Offset-h] {
				u.offset, u.inAranges = e.Offset-h, true
			}
		}
		if u.ranges, err = dw.Ranges(e); err != nil {
			t.Fatal(err)
		}
		lr, err := dw.LineReader(e)
		if err != nil {
			t.Fatal(err)
		}
		var le dwarf.LineEntry
		for lr.Next(&le) == nil {
			if le.EndSequence {
				u.sequences++
			}
		}
		facts[strings.TrimSuffix(filepath.Base(name), ".c")] = u
		r.SkipChildren()
	}
	return facts
}

// TestUnitsFixture checks that the fixture has what the other tests rely
// on, by readers other than ours: otherwise they could pass without
// exercising the index at all.
func TestUnitsFixture(t *testing.T) {
	armtest.NeedTools(t, "arm-none-eabi-readelf")
	for _, v := range []string{"dwarf4", "dwarf5"} {
		t.Run(v, func(t *testing.T) {
			path := unitsELF(t, v+".elf")
			u := unitFactsOf(t, path)
			if len(u) != 4 {
				t.Fatalf("%d units, want main, alpha, beta, gamma", len(u))
			}
			if !u["alpha"].inAranges || u["beta"].inAranges || u["gamma"].inAranges {
				t.Errorf("in .debug_aranges: alpha %v beta %v gamma %v; want only alpha", u["alpha"].inAranges, u["beta"].inAranges, u["gamma"].inAranges)
			}
			if len(u["beta"].ranges) < 2 {
				t.Errorf("beta's DIE gives ranges %x, want DW_AT_ranges with several", u["beta"].ranges)
			}
			if len(u["gamma"].ranges) != 0 {
				t.Errorf("gamma's DIE still gives ranges %x", u["gamma"].ranges)
			}
			alpha := u["alpha"]
			if len(alpha.ranges) < 4 || alpha.sequences < 4 {
				t.Errorf("alpha has %d ranges and %d line sequences, want 4 places", len(alpha.ranges), alpha.sequences)
			}
			// Another unit's code lies between two of alpha's ranges.
			lo, hi := uint64(1<<32), uint64(0)
			for _, r := range alpha.ranges {
				if r[0] >= 0x60000000 {
					lo, hi = min(lo, r[0]), max(hi, r[1])
				}
			}
			between := false
			for _, name := range []string{"beta", "gamma"} {
				for _, r := range u[name].ranges {
					between = between || (r[0] > lo && r[1] < hi)
				}
			}
			if !between {
				t.Errorf("no other unit's code between alpha's flash ranges %x", alpha.ranges)
			}
		})
	}
}

// TestUnitsMatchOracles compares every instruction of the fixtures with
// llvm-symbolizer, as TestSymbolizeMatchesLLVM does for the big test
// images; the ELF without DWARF is answered from its symbol table. The
// code of gamma, which nothing but its contents places, is compared with
// addr2line: llvm-symbolizer (14) does not look inside such a unit and
// answers from the symbol table alone.
func TestUnitsMatchOracles(t *testing.T) {
	armtest.NeedTools(t, "llvm-symbolizer")
	armtest.NeedTools(t, "arm-none-eabi-addr2line")
	armtest.NeedTools(t, "arm-none-eabi-objdump")
	for _, name := range []string{"dwarf4.elf", "dwarf5.elf", "nodebug.elf", "lto.elf"} {
		t.Run(name, func(t *testing.T) {
			path := unitsELF(t, name)
			unplacedGamma := name == "dwarf4.elf" || name == "dwarf5.elf"
			im, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			addrs := symInstructionAddrs(t, path)
			llvm := symLLVM(t, path, addrs, "--no-demangle")
			gnu := symAddr2line(t, path, addrs)
			withLines, inGamma := 0, 0
			for i, a := range addrs {
				ours := im.Symbolize(a)
				if len(ours) > 0 && ours[0].Line > 0 {
					withLines++
				}
				if fn := im.FunctionAt(a); fn != nil && strings.HasPrefix(fn.Name, "gamma_") && unplacedGamma {
					inGamma++
					if msg := symCompareAddr2line(ours, gnu[i]); msg != "" {
						t.Errorf("0x%x: %s\n  ours:      %+v\n  addr2line: %+v", a, msg, ours, gnu[i])
					}
					continue
				}
				if msg := symCompareLLVM(im, a, ours, llvm[i]); msg != "" {
					t.Errorf("0x%x: %s\n  ours: %+v\n  llvm: %+v", a, msg, ours, llvm[i])
				}
			}
			if unplacedGamma && inGamma < 10 {
				t.Errorf("only %d instructions in gamma", inGamma)
			}
			if name != "nodebug.elf" && withLines < len(addrs)*9/10 {
				t.Errorf("only %d of %d instructions have a line", withLines, len(addrs))
			}
			if w := im.Warnings(); (name == "nodebug.elf") != (len(w) == 1) {
				t.Errorf("warnings %q", w)
			}
		})
	}
}

// symA2LFrame is one frame as arm-none-eabi-addr2line -f -i prints it.
type symA2LFrame struct {
	Function, File string
	Line           int
}

var symA2LLine = regexp.MustCompile(`^(.*):(\d+|\?)(?: \(discriminator \d+\))?$`)

// symAddr2line runs one addr2line process over all addrs.
func symAddr2line(t testing.TB, path string, addrs []uint32) [][]symA2LFrame {
	t.Helper()
	var in bytes.Buffer
	for _, a := range addrs {
		fmt.Fprintf(&in, "0x%x\n", a)
	}
	cmd := exec.Command("arm-none-eabi-addr2line", "-a", "-f", "-i", "-e", path)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("addr2line: %v", err)
	}
	var res [][]symA2LFrame
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	for k := 0; k < len(lines); {
		if !strings.HasPrefix(lines[k], "0x") {
			t.Fatalf("addr2line: unexpected line %q", lines[k])
		}
		var frames []symA2LFrame
		for k++; k+1 < len(lines) && !strings.HasPrefix(lines[k], "0x"); k += 2 {
			m := symA2LLine.FindStringSubmatch(lines[k+1])
			if m == nil {
				t.Fatalf("addr2line: bad location %q", lines[k+1])
			}
			line, _ := strconv.Atoi(m[2])
			frames = append(frames, symA2LFrame{Function: lines[k], File: m[1], Line: line})
		}
		res = append(res, frames)
	}
	if len(res) != len(addrs) {
		t.Fatalf("addr2line answered %d of %d addresses", len(res), len(addrs))
	}
	return res
}

// symCompareAddr2line compares frames with addr2line's: the same chain of
// functions, files and lines (addr2line prints no column).
func symCompareAddr2line(ours []Frame, want []symA2LFrame) string {
	if len(ours) != len(want) {
		return fmt.Sprintf("%d frames, addr2line %d", len(ours), len(want))
	}
	for k, w := range want {
		o := ours[k]
		if symFrameID(o) != w.Function || o.File != cleanPath(w.File) || o.Line != w.Line {
			return fmt.Sprintf("frame %d is %s at %s:%d, addr2line %s at %s:%d", k, symFrameID(o), o.File, o.Line, w.Function, w.File, w.Line)
		}
	}
	return ""
}

// unitCount returns how many units the image has, enumerating them.
func unitCount(im *Image) int {
	im.dwarf.enumerate()
	return len(im.dwarf.listed) + len(im.dwarf.others)
}

// decodedUnits lists the units decoded so far, without enumerating.
func decodedUnits(im *Image) []int {
	var ds []int
	for i := range len(im.dwarf.listed) + len(im.dwarf.others) {
		if im.dwarf.unit(i).tables.Load() != nil {
			ds = append(ds, i)
		}
	}
	return ds
}

// unitsHolding lists the units the index places addr in.
func unitsHolding(im *Image, addr uint32) []int {
	var us []int
	im.dwarf.unitsAt(addr, func(i int) bool { us = append(us, i); return true })
	return us
}

// TestOneAddressDecodesOneUnit counts decodes: Load decodes no unit (but
// one nothing else places), answering an address decodes the one unit
// holding it, asking again or about its function decodes nothing more,
// and only Functions decodes every unit holding a function.
func TestOneAddressDecodesOneUnit(t *testing.T) {
	armtest.NeedTools(t, "arm-none-eabi-objdump")
	t.Run("O2-dwarf5", func(t *testing.T) {
		_, path := symOpenVariant(t, "O2-dwarf5")
		ref, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		// Addresses in three different units: the first, the middle and
		// the last instruction that DWARF describes.
		var picked []uint32
		for _, a := range symInstructionAddrs(t, path) {
			if fs := ref.Symbolize(a); len(fs) > 0 && fs[0].File != "" {
				picked = append(picked, a)
			}
		}
		for _, a := range []uint32{picked[0], picked[len(picked)/2], picked[len(picked)-1]} {
			im, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(im.dwarf.listed) < 20 {
				t.Fatalf("only %d units: the count proves nothing", len(im.dwarf.listed))
			}
			if ds := decodedUnits(im); len(ds) != 0 {
				t.Fatalf("Load decoded units %v", ds)
			}
			frames := im.Symbolize(a)
			holding := unitsHolding(im, a)
			if len(frames) == 0 || len(holding) != 1 {
				t.Fatalf("0x%x: frames %+v, in units %v", a, frames, holding)
			}
			im.Symbolize(a)
			im.FunctionAt(a)
			if ds := decodedUnits(im); !slices.Equal(ds, holding) {
				t.Errorf("0x%x: units %v decoded; want unit %v alone", a, ds, holding)
			}
		}
	})
	t.Run("units", func(t *testing.T) {
		path := unitsELF(t, "dwarf5.elf")
		ref, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		im, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		dw, err := im.File().DWARF()
		if err != nil {
			t.Fatal(err)
		}
		decoded := func() (names []string) {
			r := dw.Reader()
			for _, i := range decodedUnits(im) {
				r.Seek(im.dwarf.unit(i).die)
				cu, err := r.Next()
				if err != nil {
					t.Fatal(err)
				}
				name, _ := cu.Val(dwarf.AttrName).(string)
				names = append(names, strings.TrimSuffix(filepath.Base(name), ".c"))
			}
			return names
		}
		for _, step := range []struct {
			fn   string
			want []string
		}{
			{"", nil},
			{"beta_plain", []string{"beta"}},
			{"alpha_fast", []string{"alpha", "beta"}},
			{"alpha_plain", []string{"alpha", "beta"}},
			{"gamma_hot", []string{"alpha", "beta", "gamma"}}, // in no placed unit: scans the unplaced one
		} {
			if step.fn != "" {
				im.Symbolize(oneFunction(t, ref, step.fn).Addr + 2)
			}
			if got := decoded(); !slices.Equal(got, step.want) {
				t.Errorf("after %q: decoded %v, want %v", step.fn, got, step.want)
			}
		}
		im.Functions()
		if n, all := len(decodedUnits(im)), unitCount(im); n != all {
			t.Errorf("Functions decoded %d of %d units", n, all)
		}
	})
}

// TestConcurrentLookups symbolizes every instruction from several
// goroutines at once on one Image (units decoding under each other's
// feet) and compares with answers asked one at a time of another Image.
// `go test -race` checks the decoding for data races.
func TestConcurrentLookups(t *testing.T) {
	armtest.NeedTools(t, "arm-none-eabi-objdump")
	_, path := symOpenVariant(t, "O2-dwarf5")
	addrs := symInstructionAddrs(t, path)
	ref, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	want := make([][]Frame, len(addrs))
	wantFn := make([]*Function, len(addrs))
	for i, a := range addrs {
		want[i], wantFn[i] = ref.Symbolize(a), ref.FunctionAt(a)
	}
	im, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for k := range addrs {
				i := (k*7 + g*len(addrs)/4) % len(addrs)
				if got := im.Symbolize(addrs[i]); !slices.Equal(got, want[i]) {
					t.Errorf("0x%x: concurrently %+v, alone %+v", addrs[i], got, want[i])
					return
				}
				if fn := im.FunctionAt(addrs[i]); (fn == nil) != (wantFn[i] == nil) || fn != nil && fn.Name != wantFn[i].Name {
					t.Errorf("0x%x: function %v, alone %v", addrs[i], fn, wantFn[i])
					return
				}
			}
		})
	}
	wg.Go(func() { im.Preload(addrs) })
	wg.Go(func() { im.Functions() })
	wg.Wait()
}

// TestScanReadsAsWholeWalk decodes every unit of every test image twice,
// reading only the DIEs scanUnit finds and reading every DIE, and wants the
// same tables: what the scan steps over holds nothing the decoder uses.
func TestScanReadsAsWholeWalk(t *testing.T) {
	var paths []string
	for _, v := range armtest.SymbolizeVariants {
		_, path := symOpenVariant(t, v)
		paths = append(paths, path)
	}
	paths = append(paths, unitsELF(t, "dwarf4.elf"), unitsELF(t, "dwarf5.elf"), unitsELF(t, "lto.elf"))
	for _, path := range paths {
		im, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		x, read := im.dwarf, 0
		n := unitCount(im)
		for i := range n {
			u := x.unit(i)
			found, err := x.scanUnit(i)
			if err != nil {
				t.Fatalf("%s: unit at 0x%x: %v", filepath.Base(path), u.die, err)
			}
			read += len(found)
			if scanned, whole := x.decodeUnit(i, true), x.decodeUnit(i, false); !reflect.DeepEqual(scanned, whole) {
				t.Errorf("%s: unit at 0x%x decodes differently when scanned", filepath.Base(path), u.die)
			}
		}
		if read < n {
			t.Errorf("%s: the scan found only %d DIEs to read in %d units", filepath.Base(path), read, n)
		}
		if w := im.Warnings(); len(w) > 0 {
			t.Errorf("%s: %q", filepath.Base(path), w)
		}
	}
}
