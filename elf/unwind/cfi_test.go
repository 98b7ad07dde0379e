// SPDX-License-Identifier: Apache-2.0

package unwind

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/elf/thumb"
	"github.com/tcmprof/tcmprof/internal/armtest"
)

// readelfFDE is one FDE of `readelf -wF`: its range and, per row, whether
// the return-address column still says "LR holds it" (u = no rule yet,
// s = same value) rather than c-N (saved at CFA-N) or rN (moved).
type readelfFDE struct {
	begin, end uint32
	rows       []readelfRow
}

type readelfRow struct {
	loc    uint32
	raLive bool
}

var (
	readelfFDEHeader = regexp.MustCompile(`FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+)`)
	readelfRowLine   = regexp.MustCompile(`^([0-9a-f]{8}) `)
)

func readelfFrames(t testing.TB, path string) []readelfFDE {
	t.Helper()
	var fdes []readelfFDE
	raCol, inFDE := -1, false
	for _, line := range strings.Split(armtest.Output(t, "arm-none-eabi-readelf", "-wF", path), "\n") {
		if m := readelfFDEHeader.FindStringSubmatch(line); m != nil {
			b, _ := strconv.ParseUint(m[1], 16, 32)
			e, _ := strconv.ParseUint(m[2], 16, 32)
			fdes = append(fdes, readelfFDE{begin: uint32(b), end: uint32(e)})
			raCol, inFDE = -1, true
			continue
		}
		if strings.Contains(line, " CIE ") {
			inFDE = false // the CIE's own table follows; it belongs to no FDE
			continue
		}
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == "LOC" {
			raCol = -1
			for i, c := range f {
				if c == "ra" {
					raCol = i
				}
			}
			continue
		}
		if !inFDE || !readelfRowLine.MatchString(line) {
			continue
		}
		loc, _ := strconv.ParseUint(f[0], 16, 32)
		live := true
		if raCol >= 0 {
			live = f[raCol] == "u" || f[raCol] == "s"
		}
		last := &fdes[len(fdes)-1]
		last.rows = append(last.rows, readelfRow{loc: uint32(loc), raLive: live})
	}
	return fdes
}

// TestCFIAgainstReadelf compares LRIsReturnAddress with readelf -wF at every
// halfword of every FDE that describes a linked function, in an image where
// --gc-sections left a dead FDE at address 0 on top of ITCM code.
func TestCFIAgainstReadelf(t *testing.T) {
	e := armtest.BuildExtras(t)
	cfi, addrOf, covered := checkCFIAgainstReadelf(t, e.ELF, 0)

	// The cases the sampler depends on, by name.
	for _, tc := range []struct {
		fn     string
		off    uint32
		live   bool
		reason string
	}{
		{"itcm_hot", 0, true, "first instruction, before push {r4, lr}"},
		{"itcm_hot", 2, false, "after push {r4, lr}"},
		{"itcm_leaf", 4, true, "leaf"},
		{"alpha_sum", 0xa, true, "pushes r4 only"},
		{"main", 4, false, "after push {r4, r5, r6, lr}"},
	} {
		if live, known := cfi.LRIsReturnAddress(addrOf[tc.fn] + tc.off); !known || live != tc.live {
			t.Errorf("%s+%#x (%s): live=%v known=%v", tc.fn, tc.off, tc.reason, live, known)
		}
	}
	// newlib's assembly memcpy has no CFI: unknown, not a guess.
	if _, known := cfi.LRIsReturnAddress(addrOf["memcpy"]); known || covered[addrOf["memcpy"]] {
		t.Error("memcpy: known CFI, but readelf shows no FDE for it")
	}
}

// TestCFIAtTheITCMOrigin does the same where ITCM code starts at the
// origin, as in a Zephyr ITCM build: several functions there, with the
// frame descriptions of every removed function (several units' worth)
// resolved to 0 on top of them. Each ITCM function keeps its own.
func TestCFIAtTheITCMOrigin(t *testing.T) {
	for _, v := range armtest.SymbolizeVariants {
		if !strings.Contains(v, "origin") {
			continue
		}
		t.Run(v, func(t *testing.T) {
			checkCFIAgainstReadelf(t, filepath.Join(armtest.SymbolizeDir(t), v+".elf"), 2)
		})
	}
}

// checkCFIAgainstReadelf compares LRIsReturnAddress with readelf -wF at
// every halfword of every FDE of path that describes a linked function,
// and asks for at least minOrigin such functions in code starting at 0.
// It returns the CFI, the functions' addresses and the PCs checked.
func checkCFIAgainstReadelf(t *testing.T, path string, minOrigin int) (*CFI, map[string]uint32, map[uint32]bool) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfi, err := LoadCFI(f)
	if err != nil || cfi == nil {
		t.Fatalf("LoadCFI = %v, %v", cfi, err)
	}
	lowEnd := uint32(0) // end of code starting at 0
	for _, s := range f.Sections {
		if s.Addr == 0 && s.Flags&elf.SHF_EXECINSTR != 0 {
			lowEnd = uint32(s.Size)
		}
	}
	funcs, addrOf := armtest.FuncSymbols(t, f)
	isFunc := map[[2]uint32]string{}
	for _, fn := range funcs {
		isFunc[[2]uint32{fn.Addr, fn.Addr + fn.Size}] = fn.Name
	}
	var checked, saved, dead, atOrigin int
	covered := map[uint32]bool{}
	for _, fde := range readelfFrames(t, path) {
		if _, ok := isFunc[[2]uint32{fde.begin, fde.end}]; !ok {
			dead++ // e.g. alpha_unused, discarded but still described, at 0
			continue
		}
		if fde.begin < lowEnd {
			atOrigin++
		}
		for pc := fde.begin; pc < fde.end; pc += 2 {
			want := true
			for _, r := range fde.rows {
				if r.loc <= pc {
					want = r.raLive
				}
			}
			live, known := cfi.LRIsReturnAddress(pc)
			if !known || live != want {
				t.Errorf("pc %#x: LRIsReturnAddress = %v, known %v; readelf says live=%v", pc, live, known, want)
			}
			if live, known := cfi.LRIsReturnAddress(pc | 1); !known || live != want {
				t.Errorf("pc %#x with Thumb bit: %v, %v", pc|1, live, known)
			}
			covered[pc] = true
			checked++
			if !want {
				saved++
			}
		}
	}
	t.Logf("%d PCs checked, %d with LR saved, %d dead FDEs skipped, %d functions in code at 0", checked, saved, dead, atOrigin)
	if saved == 0 || dead == 0 || atOrigin < minOrigin {
		t.Errorf("fixture lost its non-leaf functions, its dead FDE or its code at 0 (saved %d, dead %d, at 0 %d)", saved, dead, atOrigin)
	}
	return cfi, addrOf, covered
}

func TestLoadCFIAbsentAndNil(t *testing.T) {
	e := armtest.BuildExtras(t)
	f, err := elf.Open(e.BLX) // assembled without -g
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfi, err := LoadCFI(f)
	if cfi != nil || err != nil {
		t.Fatalf("LoadCFI without .debug_frame = %v, %v; want nil, nil", cfi, err)
	}
	if live, known := cfi.LRIsReturnAddress(0x60800000); live || known {
		t.Error("nil CFI answered")
	}
}

// debugFrame returns the real .debug_frame bytes and function extents.
func debugFrame(t testing.TB) ([]byte, []thumb.FuncRange) {
	e := armtest.BuildExtras(t)
	f, err := elf.Open(e.ELF)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := f.Section(".debug_frame").Data()
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := armtest.FuncSymbols(t, f)
	funcs := make([]thumb.FuncRange, len(syms))
	for i, s := range syms {
		funcs[i] = thumb.FuncRange(s)
	}
	return data, funcs
}

func TestParseCFIMalformed(t *testing.T) {
	data, funcs := debugFrame(t)
	// Every truncation of a real section: an error or a usable CFI, never a panic.
	var errs int
	for n := 0; n < len(data); n++ {
		c, err := parseCFI(data[:n], binary.LittleEndian, funcs)
		if err != nil {
			if _, ok := err.(*DecodeError); !ok {
				t.Fatalf("truncated to %d bytes: %v is not a DecodeError", n, err)
			}
			errs++
			continue
		}
		c.LRIsReturnAddress(0x60000060)
	}
	if errs == 0 {
		t.Error("no truncation was reported as malformed")
	}
}

func FuzzParseCFI(f *testing.F) {
	data, funcs := debugFrame(f)
	f.Add(data, uint32(0x60000060))
	f.Add(data[:0x40], uint32(2))
	f.Fuzz(func(t *testing.T, data []byte, pc uint32) {
		if c, err := parseCFI(data, binary.LittleEndian, funcs); err == nil {
			c.LRIsReturnAddress(pc)
		}
	})
}

// Without function extents the dead FDE at 0 and itcm_hot's FDE cannot be
// told apart: the overlap must become "unknown", not whichever sorts first.
func TestCFIOverlapWithoutSymbolsIsUnknown(t *testing.T) {
	data, funcs := debugFrame(t)
	c, err := parseCFI(data, binary.LittleEndian, nil)
	if err != nil {
		t.Fatal(err)
	}
	if live, known := c.LRIsReturnAddress(2); known {
		t.Errorf("pc 2 with overlapping FDEs: live=%v known=true, want unknown", live)
	}
	c, err = parseCFI(data, binary.LittleEndian, funcs)
	if err != nil {
		t.Fatal(err)
	}
	if live, known := c.LRIsReturnAddress(2); !known || live {
		t.Errorf("pc 2 (itcm_hot after push): live=%v known=%v", live, known)
	}
}

// restoreAsCIE turns a restore of a register the CIE gives no rule into
// same_value, and leaves everything else as it was.
func TestRestoreAsCIE(t *testing.T) {
	noRules := map[uint64]bool{}
	for _, tc := range []struct {
		name string
		in   []byte
		cie  map[uint64]bool
		want []byte
	}{
		{"restore lr", []byte{0x4a, 0x0e, 0x14, 0xce}, noRules, []byte{0x4a, 0x0e, 0x14, 0x08, 0x0e}},
		{"restore_extended lr", []byte{0x06, 0x0e, 0x41}, noRules, []byte{0x08, 0x0e, 0x41}},
		{"restore with a CIE rule", []byte{0xce}, map[uint64]bool{14: true}, []byte{0xce}},
		{"explicit undefined stays", []byte{0x07, 0x0e}, noRules, []byte{0x07, 0x0e}},
		{"operands are not opcodes", []byte{0x02, 0xce, 0x8e, 0x01}, noRules, []byte{0x02, 0xce, 0x8e, 0x01}},
		{"unknown opcode", []byte{0x3a, 0xce}, noRules, []byte{0x3a, 0xce}},
		{"truncated", []byte{0xce, 0x05, 0x0e}, noRules, []byte{0xce, 0x05, 0x0e}},
	} {
		if got := restoreAsCIE(tc.in, tc.cie); !bytes.Equal(got, tc.want) {
			t.Errorf("%s: % x, want % x", tc.name, got, tc.want)
		}
	}
	if got := cieRuleRegisters([]byte{0x0c, 0x0d, 0x00, 0x8e, 0x01, 0x07, 0x03}); !got[14] || !got[3] || got[13] {
		t.Errorf("cieRuleRegisters = %v, want r14 and r3, not the CFA's r13", got)
	}
}
