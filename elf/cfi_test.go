// SPDX-License-Identifier: Apache-2.0

package elf

import (
	goelf "debug/elf"
	"encoding/binary"
	"regexp"
	"strconv"
	"strings"
	"testing"
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
	for _, line := range strings.Split(runTool(t, "arm-none-eabi-readelf", "-wF", path), "\n") {
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
	e := buildExtras(t)
	f, err := goelf.Open(e.ELF)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfi, err := LoadCFI(f)
	if err != nil || cfi == nil {
		t.Fatalf("LoadCFI = %v, %v", cfi, err)
	}
	funcs, addrOf := funcRanges(t, f)
	isFunc := map[[2]uint32]string{}
	for _, fn := range funcs {
		isFunc[[2]uint32{fn.Addr, fn.Addr + fn.Size}] = fn.Name
	}
	var checked, saved, dead int
	covered := map[uint32]bool{}
	for _, fde := range readelfFrames(t, e.ELF) {
		if _, ok := isFunc[[2]uint32{fde.begin, fde.end}]; !ok {
			dead++ // e.g. alpha_unused, discarded but still described, at 0
			continue
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
	t.Logf("%d PCs checked, %d with LR saved, %d dead FDEs skipped", checked, saved, dead)
	if saved == 0 || dead == 0 {
		t.Errorf("fixture lost its non-leaf functions or its dead FDE (saved %d, dead %d)", saved, dead)
	}

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

func TestLoadCFIAbsentAndNil(t *testing.T) {
	e := buildExtras(t)
	f, err := goelf.Open(e.BLX) // assembled without -g
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
func debugFrame(t testing.TB) ([]byte, []FuncRange) {
	e := buildExtras(t)
	f, err := goelf.Open(e.ELF)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := f.Section(".debug_frame").Data()
	if err != nil {
		t.Fatal(err)
	}
	funcs, _ := funcRanges(t, f)
	return data, funcs
}

func TestParseCFIMalformed(t *testing.T) {
	data, funcs := debugFrame(t)
	// Every truncation of a real section: an error or a usable CFI, never a panic.
	var errs int
	for n := 0; n < len(data); n++ {
		c, err := parseCFI(data[:n], binary.LittleEndian, funcs)
		if err != nil {
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
