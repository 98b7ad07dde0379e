// SPDX-License-Identifier: Apache-2.0

package dwarfline

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/internal/armtest"
)

// The index is proven against llvm-symbolizer and addr2line through
// package image's Image (elf/image/units_test.go, elf/image/symbolize_test.go); these
// tests look inside it: which units it decodes, and that its scan of a
// unit's DIEs reads what a walk of all of them would.

// indexed is a test ELF indexed as an Image indexes it.
type indexed struct {
	x        *Index
	dw       *dwarf.Data    // debug/dwarf's reading of the whole file, for names
	funcs    []armtest.Func // every STT_FUNC symbol
	addrOf   map[string]uint32
	warnings []string
}

// openIndex indexes the ELF at path with all its FUNC symbols (the
// fixtures have no veneer at address 0, the only place the index would
// look at one, so none needs leaving out).
func openIndex(t testing.TB, path string) *indexed {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	ix := &indexed{}
	ix.funcs, ix.addrOf = armtest.FuncSymbols(t, f)
	syms := make([]Symbol, len(ix.funcs))
	for i, fn := range ix.funcs {
		syms[i] = Symbol(fn)
	}
	if ix.dw, err = f.DWARF(); err != nil {
		t.Fatal(err)
	}
	ix.x = New(f, data, syms, func(w string) { ix.warnings = append(ix.warnings, w) })
	if ix.x == nil {
		t.Fatalf("%s: no index", path)
	}
	return ix
}

// functionStart is the start of the function symbol holding addr.
func (ix *indexed) functionStart(t testing.TB, addr uint32) uint32 {
	t.Helper()
	for _, fn := range ix.funcs {
		if addr-fn.Addr < fn.Size {
			return fn.Addr
		}
	}
	t.Fatalf("0x%x: in no function", addr)
	return 0
}

// unitCount returns how many units the index has, enumerating them.
func unitCount(x *Index) int {
	x.enumerate()
	return len(x.listed) + len(x.others)
}

// decodedUnits lists the units decoded so far, without enumerating.
func decodedUnits(x *Index) []int {
	var ds []int
	for i := range len(x.listed) + len(x.others) {
		if x.unit(i).tables.Load() != nil {
			ds = append(ds, i)
		}
	}
	return ds
}

// unitsHolding lists the units the index places addr in.
func unitsHolding(x *Index, addr uint32) []int {
	var us []int
	x.unitsAt(addr, func(i int) bool { us = append(us, i); return true })
	return us
}

// TestOneAddressDecodesOneUnit counts decodes: New decodes no unit (but
// one nothing else places), answering an address decodes the one unit
// holding it, asking again or about its function decodes nothing more,
// and only preloading every function decodes every unit holding one.
func TestOneAddressDecodesOneUnit(t *testing.T) {
	armtest.NeedTools(t, "arm-none-eabi-objdump")
	t.Run("O2-dwarf5", func(t *testing.T) {
		path := filepath.Join(armtest.SymbolizeDir(t), "O2-dwarf5.elf")
		ref := openIndex(t, path)
		// Addresses in three different units: the first, the middle and
		// the last instruction that DWARF describes.
		var picked []uint32
		for _, a := range armtest.InstructionAddrs(t, path) {
			if fs, _ := ref.x.AppendFrames(nil, a); len(fs) > 0 && fs[0].File != "" {
				picked = append(picked, a)
			}
		}
		for _, a := range []uint32{picked[0], picked[len(picked)/2], picked[len(picked)-1]} {
			ix := openIndex(t, path)
			x := ix.x
			if len(x.listed) < 20 {
				t.Fatalf("only %d units: the count proves nothing", len(x.listed))
			}
			if ds := decodedUnits(x); len(ds) != 0 {
				t.Fatalf("New decoded units %v", ds)
			}
			frames, _ := x.AppendFrames(nil, a)
			holding := unitsHolding(x, a)
			if len(frames) == 0 || len(holding) != 1 {
				t.Fatalf("0x%x: frames %+v, in units %v", a, frames, holding)
			}
			x.AppendFrames(nil, a)
			// What an Image asks to name the function holding a.
			start := ix.functionStart(t, a)
			x.SubprogramAt(start)
			x.LineSource(start)
			if ds := decodedUnits(x); !slices.Equal(ds, holding) {
				t.Errorf("0x%x: units %v decoded; want unit %v alone", a, ds, holding)
			}
		}
	})
	t.Run("units", func(t *testing.T) {
		ix := openIndex(t, armtest.UnitsELF(t, "dwarf5.elf"))
		x := ix.x
		decoded := func() (names []string) {
			r := ix.dw.Reader()
			for _, i := range decodedUnits(x) {
				r.Seek(x.unit(i).die)
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
				addr, ok := ix.addrOf[step.fn]
				if !ok {
					t.Fatalf("fixture lost %s", step.fn)
				}
				x.AppendFrames(nil, addr+2)
			}
			if got := decoded(); !slices.Equal(got, step.want) {
				t.Errorf("after %q: decoded %v, want %v", step.fn, got, step.want)
			}
		}
		var starts []uint32
		for _, fn := range ix.funcs {
			starts = append(starts, fn.Addr)
		}
		x.Preload(starts)
		if n, all := len(decodedUnits(x)), unitCount(x); n != all {
			t.Errorf("preloading every function decoded %d of %d units", n, all)
		}
	})
}

// TestScanReadsAsWholeWalk decodes every unit of every test image twice,
// reading only the DIEs scanUnit finds and reading every DIE, and wants the
// same tables: what the scan steps over holds nothing the decoder uses.
func TestScanReadsAsWholeWalk(t *testing.T) {
	var paths []string
	for _, v := range armtest.SymbolizeVariants {
		paths = append(paths, filepath.Join(armtest.SymbolizeDir(t), v+".elf"))
	}
	paths = append(paths, armtest.UnitsELF(t, "dwarf4.elf"), armtest.UnitsELF(t, "dwarf5.elf"), armtest.UnitsELF(t, "lto.elf"))
	for _, path := range paths {
		ix := openIndex(t, path)
		x, read := ix.x, 0
		n := unitCount(x)
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
		if len(ix.warnings) > 0 {
			t.Errorf("%s: %q", filepath.Base(path), ix.warnings)
		}
	}
}

// TestDecodeErrors: abbreviations or DIEs that do not read are
// DecodeErrors naming the section and the offset at fault.
func TestDecodeErrors(t *testing.T) {
	u := &unitHeader{version: 4, offSize: 4, addrSize: 4}
	abbrevs := []byte{
		1, 0x11, 1, // code 1: DW_TAG_compile_unit with children
		0x03, 0x08, // DW_AT_name, DW_FORM_string
		0, 0,
		0,
	}
	for _, tc := range []struct {
		name    string
		b       []byte
		off     uint64
		section string
		at      uint64
	}{
		{"past the end", abbrevs, 9, ".debug_abbrev", 9},
		{"cut in a declaration", abbrevs[:4], 0, ".debug_abbrev", 4},
	} {
		_, err := readAbbrevs(tc.b, tc.off, u)
		de, ok := err.(*DecodeError)
		if !ok || de.Section != tc.section || de.Offset != tc.at {
			t.Errorf("%s: %#v, want a DecodeError in %s at 0x%x", tc.name, err, tc.section, tc.at)
		}
	}
	table, err := readAbbrevs(abbrevs, 0, u)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		info []byte
		at   uint64
	}{
		{"unknown abbreviation", []byte{2}, 0},
		{"string without its end", []byte{1, 'a', 'b'}, 3},
	} {
		s := &dieScanner{scanBuf: scanBuf{section: ".debug_info", b: tc.info}, abbrevs: table}
		_, err := s.next()
		de, ok := err.(*DecodeError)
		if !ok || de.Section != ".debug_info" || de.Offset != tc.at {
			t.Errorf("%s: %#v, want a DecodeError in .debug_info at 0x%x", tc.name, err, tc.at)
		}
	}
}
