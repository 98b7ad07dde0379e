// SPDX-License-Identifier: Apache-2.0

package image

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tcmprof/tcmprof/elf/dwarfline"
	"github.com/tcmprof/tcmprof/internal/armtest"
)

// The DWARF is indexed by compile unit at Load and a unit decoded when an
// address first falls in it (package dwarfline, whose own tests count the
// decodes). These tests prove the index, through the Image, against
// llvm-symbolizer and addr2line on firmware built from
// internal/armtest/testdata/units, whose units are placed in every way the
// index handles: a unit .debug_aranges lists (alpha), one it does not
// (beta: found by its DW_AT_ranges), one that nothing places but its
// contents (gamma: scanned on the first address no placed unit holds),
// each unit's code spread over several places with other units' code in
// between (several line sequences per unit), and the same ELF without
// DWARF.

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
	f, err := elf.Open(path)
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
			path := armtest.UnitsELF(t, v+".elf")
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
			path := armtest.UnitsELF(t, name)
			unplacedGamma := name == "dwarf4.elf" || name == "dwarf5.elf"
			im, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			addrs := armtest.InstructionAddrs(t, path)
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
func symCompareAddr2line(ours []dwarfline.Frame, want []symA2LFrame) string {
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

// TestConcurrentLookups symbolizes every instruction from several
// goroutines at once on one Image (units decoding under each other's
// feet) and compares with answers asked one at a time of another Image.
// `go test -race` checks the decoding for data races.
func TestConcurrentLookups(t *testing.T) {
	armtest.NeedTools(t, "arm-none-eabi-objdump")
	_, path := symOpenVariant(t, "O2-dwarf5")
	addrs := armtest.InstructionAddrs(t, path)
	ref, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	want := make([][]dwarfline.Frame, len(addrs))
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
