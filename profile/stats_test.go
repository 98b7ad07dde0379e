// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/tcmprof/tcmprof/elf/board"
	"github.com/tcmprof/tcmprof/internal/armtest"
)

// The expected intervals are Newcombe (1998), "Two-sided confidence
// intervals for the single proportion", Stat. Med. 17:857, worked examples,
// method 3 (Wilson score without continuity correction).
func TestNewShareMatchesNewcombeTable(t *testing.T) {
	for _, c := range []struct {
		k, n   int
		lo, hi float64
	}{
		{81, 263, 0.2553, 0.3662},
		{15, 148, 0.0624, 0.1605},
		{0, 20, 0, 0.1611},
		{1, 29, 0.0061, 0.1718},
	} {
		s := NewShare(c.k, c.n)
		if math.Abs(s.Lo-c.lo) > 5e-5 || math.Abs(s.Hi-c.hi) > 5e-5 {
			t.Errorf("%d/%d: [%.4f, %.4f], want [%.4f, %.4f]", c.k, c.n, s.Lo, s.Hi, c.lo, c.hi)
		}
	}
	if s := NewShare(0, 0); s.Lo != 0 || s.Hi != 1 || s.Fraction() != 0 {
		t.Errorf("empty share: %+v", s)
	}
	if s := NewShare(7, 7); s.Hi != 1 {
		t.Errorf("7/7: Hi %v, want 1", s.Hi)
	}
}

func TestFootprintCountsLinesAndSetConflicts(t *testing.T) {
	g := board.CacheGeometry{Size: 1024, Ways: 2, LineSize: 32} // 16 sets; set stride 512 B
	addrs := []uint32{
		0x60000000, 0x60000002, 0x6000001e, // one line, set 0
		0x60000200, 0x60000400, // set 0 again, two more lines: 3 lines in a 2-way set
		0x60000020,                         // set 1
		0x60000620, 0x60000820, 0x60000a20, // set 1: 4 lines in all
	}
	f := NewFootprint(g, addrs)
	want := Footprint{Geometry: g, Lines: 7, Bytes: 224, SetsOver: 2, LinesOver: 3, MaxPerSet: 4}
	if f != want {
		t.Errorf("footprint %+v, want %+v", f, want)
	}
	if err := ValidateCache(board.CacheGeometry{Size: 1000, Ways: 2, LineSize: 32}); err == nil {
		t.Error("a 1000-byte 2-way 32-byte-line cache was accepted")
	}
}

func TestIdleRulesMatchZephyrNames(t *testing.T) {
	r := DefaultIdleRules()
	for name, want := range map[string]bool{"idle": true, "idle 01": true, "main": false, "sysworkq": false, "": false} {
		if r.IdleThread(name) != want {
			t.Errorf("IdleThread(%q) = %v", name, !want)
		}
	}
	for name, want := range map[string]bool{"arch_cpu_idle": true, "idle": true, "k_cpu_idle": true, "net_checksum_hot": false} {
		if r.IdleFunction(name) != want {
			t.Errorf("IdleFunction(%q) = %v", name, !want)
		}
	}
	if err := (IdleRules{Functions: []string{"["}}).Validate(); err == nil {
		t.Error("malformed glob accepted")
	}
}

// wfiBuild assembles testdata/wfi/wfi.S to raw code, once, cached in
// $TMPDIR (armtest.Build).
var wfiBuild = &armtest.Build{
	Prefix: "tcmprof-profile-wfi",
	Src:    "testdata/wfi",
	Tools:  []string{"arm-none-eabi-as", "arm-none-eabi-objcopy"},
	Make: func(src, out string) error {
		if err := armtest.Run(out, "arm-none-eabi-as", "-mcpu=cortex-m7", "-o", "wfi.o", filepath.Join(src, "wfi.S")); err != nil {
			return err
		}
		return armtest.Run(out, "arm-none-eabi-objcopy", "-O", "binary", "wfi.o", "wfi.bin")
	},
}

// TestAfterWaitForInterruptOnAssembledCode assembles the instructions with
// the ARM assembler rather than trusting hand-written encodings.
func TestAfterWaitForInterruptOnAssembledCode(t *testing.T) {
	bin := filepath.Join(wfiBuild.Dir(t), "wfi.bin")
	code, err := os.ReadFile(bin)
	if err != nil || len(code) != 24 {
		t.Fatalf("assembled %d bytes (%v), want 24", len(code), err)
	}
	for i, want := range []bool{true, true, true, true, false, false} {
		if got := AfterWaitForInterrupt(code[4*i : 4*i+4]); got != want {
			t.Errorf("case %d (% x): %v, want %v", i, code[4*i:4*i+4], got, want)
		}
	}
}
