// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"bytes"
	"errors"
	"testing"

	"github.com/tcmprof/tcmprof/elf/board"
	"github.com/tcmprof/tcmprof/sim/simtest"
)

// The RT1062 geometry: 32 KB, 2 ways, 32-byte lines, 512 sets. Addresses
// 16 KB apart share a set.
const (
	flash    = 0x60000000
	setApart = 16 << 10
	itcm     = 0x00000100
)

// threeLinesOneSet loops 100 times over three blocks on three lines of one
// set: 700 instructions.
func threeLinesOneSet(buildID []byte) []byte {
	w := simtest.NewWriter(buildID)
	a := w.Block(flash, 2, 2, 2, 2) // one line: 4 instructions
	b := w.Block(flash+setApart, 2, 2)
	c := w.Block(flash+2*setApart, 4)
	for range 100 {
		w.Exec(a, b, c)
	}
	return w.Bytes()
}

func testConfig(t *testing.T) Config {
	t.Helper()
	b, err := board.ByName("teensy41")
	if err != nil {
		t.Fatal(err)
	}
	return BoardConfig(b)
}

func runTrace(t *testing.T, trace []byte, cfg Config) *Result {
	t.Helper()
	r, err := NewReader(bytes.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(r, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Misses computable by hand, for every policy where the answer does not
// depend on the victim choice, and the first-order cycles.
func TestHandMadeTraces(t *testing.T) {
	for _, tc := range []struct {
		name         string
		trace        []byte
		policies     []Policy
		insns, fills uint64
	}{
		// A loop over three lines of one set in a 2-way cache: under LRU
		// (and FIFO, and round-robin with one set in use) each fetch
		// evicts the line needed next.
		{"three lines, one set", threeLinesOneSet(nil), []Policy{LRU, FIFO, RoundRobin}, 700, 300},
		// Two lines of one set fit its two ways: only the cold misses.
		{"two lines, one set", func() []byte {
			w := simtest.NewWriter(nil)
			a := w.Block(flash, 2, 2)
			b := w.Block(flash+setApart, 2, 2)
			for range 100 {
				w.Exec(a, b)
			}
			return w.Bytes()
		}(), []Policy{LRU, FIFO, RoundRobin, Random}, 400, 2},
		// A loop over 64 KB of straight code puts four lines in every
		// set of a 2-way cache: with LRU every line misses on every pass.
		// (With 40 KB, sets holding two lines would hit.)
		{"64 KB loop", func() []byte {
			w := simtest.NewWriter(nil)
			var ids []uint32
			for a := uint32(flash); a < flash+64<<10; a += 32 {
				ids = append(ids, w.Block(a, 4, 4, 4, 4, 4, 4, 4, 4))
			}
			for range 3 {
				w.Exec(ids...)
			}
			return w.Bytes()
		}(), []Policy{LRU, FIFO}, 3 * 2048 * 8, 3 * 2048},
		// An instruction that crosses a line boundary fetches both lines.
		{"straddling instruction", func() []byte {
			w := simtest.NewWriter(nil)
			w.Exec(w.Block(flash+30, 4, 2))
			return w.Bytes()
		}(), []Policy{LRU}, 2, 2},
		// ITCM is not cached and never stalls.
		{"ITCM", func() []byte {
			w := simtest.NewWriter(nil)
			a := w.Block(itcm, 2, 2, 4, 2)
			b := w.Block(itcm+setApart, 2, 2)
			c := w.Block(itcm+2*setApart, 2)
			for range 10 {
				w.Exec(a, b, c)
			}
			return w.Bytes()
		}(), []Policy{LRU, Random}, 70, 0},
		// A cut execution counts only what ran: 2 of the block's 4
		// instructions, then the single instruction that cut it.
		{"cut block", func() []byte {
			w := simtest.NewWriter(nil)
			a := w.Block(flash, 2, 2, 2, 2)
			io := w.Block(flash+4, 2)
			w.Exec(a)
			w.Cut(io)
			w.Exec(w.Block(flash+6, 2))
			return w.Bytes()
		}(), []Policy{LRU}, 4, 1},
	} {
		for _, p := range tc.policies {
			t.Run(tc.name+"/"+p.String(), func(t *testing.T) {
				cfg := testConfig(t)
				cfg.Policy = p
				res := runTrace(t, tc.trace, cfg)
				if res.Instructions != tc.insns || res.Misses != tc.fills {
					t.Errorf("%d instructions, %d fills; want %d, %d", res.Instructions, res.Misses, tc.insns, tc.fills)
				}
				if want := tc.insns + tc.fills*DefaultPenalty; res.Cycles() != want {
					t.Errorf("%d cycles, want %d", res.Cycles(), want)
				}
			})
		}
	}
}

// Code in an excluded range costs nothing and leaves the cache alone: a
// testbench block in the same set as two hot lines does not evict them.
func TestExcludedCodeCostsNothing(t *testing.T) {
	w := simtest.NewWriter(nil)
	a := w.Block(flash, 2, 2)
	b := w.Block(flash+setApart, 2, 2)
	bench := w.Block(0x60800000, 2, 2, 2) // same set as a and b
	for range 50 {
		w.Exec(a, bench, b)
	}
	trace := w.Bytes()
	cfg := testConfig(t)
	res := runTrace(t, trace, cfg)
	if res.Misses <= 2 {
		t.Fatalf("without the exclusion the testbench should thrash the set, got %d fills", res.Misses)
	}
	cfg.Exclude = []Range{{0x60800000, 0x61000000}}
	res = runTrace(t, trace, cfg)
	if res.Instructions != 200 || res.Misses != 2 {
		t.Errorf("%d instructions, %d fills; want 200, 2 (the testbench costs nothing)", res.Instructions, res.Misses)
	}
	for _, c := range res.Code {
		if c.Addr >= 0x60800000 {
			t.Errorf("excluded instruction at 0x%08x counted", c.Addr)
		}
	}
}

// Units: warm-up entries, then Count whole units from one marker entry to
// another, split inside the blocks that hold the marker.
func TestUnitWindow(t *testing.T) {
	w := simtest.NewWriter(nil)
	// The marker is the third instruction of its block: the two before it
	// belong to the unit that ends there.
	marked := w.Block(flash, 2, 2, 2, 2, 2)
	work := w.Block(flash+0x100, 2, 2, 2)
	cold := w.Block(flash+0x200, 2)
	for i := range 10 {
		w.Exec(marked, work)
		if i == 7 {
			w.Exec(cold) // a miss in unit 6 only (after 2 units of warm-up)
		}
	}
	trace := w.Bytes()
	cfg := testConfig(t)
	cfg.Unit = &Unit{Name: "marked", Addr: flash + 4, Warmup: 2, Count: 5}
	res := runTrace(t, trace, cfg)
	// Each unit: 3 of marked (from the marker), work (3), 2 of the next
	// marked; unit 6 also runs cold.
	if res.Units != 5 || res.Instructions != 5*8 {
		t.Errorf("%d units, %d instructions; want 5, 40", res.Units, res.Instructions)
	}
	if res.Misses != 0 {
		t.Errorf("%d fills in the window; the warm-up filled every line", res.Misses)
	}
	cfg.Unit.Count = 6
	res = runTrace(t, trace, cfg)
	if res.Units != 6 || res.Instructions != 6*8+1 || res.Misses != 1 {
		t.Errorf("%d units, %d instructions, %d fills; want 6, 49, 1", res.Units, res.Instructions, res.Misses)
	}
	// Per instruction: the marker's instruction ran once per unit.
	for _, c := range res.Code {
		if c.Addr == flash+4 && c.Count != 6 {
			t.Errorf("marker instruction counted %d times, want 6", c.Count)
		}
	}
	// To the end of the trace: 7 whole units (entries 3 to 10), and the
	// 3 instructions of the last block after its entry plus work (3).
	cfg.Unit.Count = 0
	res = runTrace(t, trace, cfg)
	if res.Units != 7 || res.TailInstructions != 6 || res.Instructions != 7*8+1+6 {
		t.Errorf("%d units, %d tail, %d instructions; want 7, 6, 63", res.Units, res.TailInstructions, res.Instructions)
	}
	// More units than the trace holds: the result so far and an error.
	cfg.Unit.Count = 9
	r, _ := NewReader(bytes.NewReader(trace))
	if res, err := Run(r, cfg); !errors.Is(err, ErrShortTrace) || res == nil || res.Units != 7 {
		t.Errorf("9 units of 7: err %v", err)
	}
}

// The same trace streamed and recorded gives the same result, and a
// layout that moves a thrashing line into ITCM removes its fills.
func TestRecordingAndLayout(t *testing.T) {
	trace := threeLinesOneSet([]byte{0xab, 0xcd, 0xef})
	cfg := testConfig(t)
	streamed := runTrace(t, trace, cfg)
	r, err := NewReader(bytes.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := Record(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rec.BuildID, []byte{0xab, 0xcd, 0xef}) {
		t.Errorf("build-id %x", rec.BuildID)
	}
	again, err := rec.Run(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Misses != streamed.Misses || again.Instructions != streamed.Instructions || len(again.Sites) != len(streamed.Sites) {
		t.Errorf("recorded run %+v differs from the streamed one %+v", again, streamed)
	}
	moved, err := rec.Run(cfg, Layout{{From: flash + 2*setApart, Size: 4, To: itcm}})
	if err != nil {
		t.Fatal(err)
	}
	if moved.Misses != 2 || moved.Instructions != 700 {
		t.Errorf("with c in ITCM: %d fills, %d instructions; want 2 (cold), 700", moved.Misses, moved.Instructions)
	}
	// Results keep the trace's addresses.
	if moved.Code[len(moved.Code)-1].Addr != flash+2*setApart {
		t.Errorf("moved code reported at 0x%08x", moved.Code[len(moved.Code)-1].Addr)
	}
	if _, err := rec.Run(cfg, Layout{{From: 8, Size: 8, To: 0}, {From: 4, Size: 8, To: 0}}); err == nil {
		t.Error("overlapping layout accepted")
	}
}

// A sample taken during a fill lands on the instruction whose fetch
// missed; an ITCM loop's samples spread evenly over its instructions.
func TestSampleLandsOnTheStalledInstruction(t *testing.T) {
	w := simtest.NewWriter(nil)
	// 8 instructions in ITCM, then one in flash that misses on every
	// pass (it thrashes with two others of its set).
	loop := w.Block(itcm, 2, 2, 2, 2, 2, 2, 2, 2)
	x := w.Block(flash, 2)
	y := w.Block(flash+setApart, 2)
	z := w.Block(flash+2*setApart, 2)
	for range 3000 {
		w.Exec(loop, x, loop, y, loop, z)
	}
	cfg := testConfig(t)
	cfg.Penalty = 100
	cfg.Sampling = &Sampling{ClockHz: 1000, RateHz: 10, JitterPct: 25} // every ~100 cycles
	res := runTrace(t, w.Bytes(), cfg)
	// Per pass: 24 ITCM instructions and 3 flash instructions of 101 cycles.
	counts := map[uint32]int{}
	for _, pc := range res.Samples {
		counts[pc]++
	}
	n := float64(len(res.Samples))
	flashShare := float64(counts[flash]+counts[flash+setApart]+counts[flash+2*setApart]) / n
	want := 303.0 / 327
	if flashShare < want-0.02 || flashShare > want+0.02 {
		t.Errorf("%.3f of %d samples on the stalled instructions, want %.3f", flashShare, len(res.Samples), want)
	}
	if res.Cycles() != 3000*327 {
		t.Errorf("%d cycles, want %d", res.Cycles(), 3000*327)
	}
	if got := uint64(len(res.Samples)); got < res.Cycles()/100-50 || got > res.Cycles()/100+50 {
		t.Errorf("%d samples over %d cycles at one per 100", got, res.Cycles())
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"no ways", func(c *Config) { c.Cache.Ways = 0 }},
		{"odd line", func(c *Config) { c.Cache.LineSize = 24 }},
		{"sets not a power of two", func(c *Config) { c.Cache.Size = 3 * 1024 }},
		{"empty range", func(c *Config) { c.Exclude = []Range{{10, 10}} }},
		{"rate above clock", func(c *Config) { c.Sampling = &Sampling{ClockHz: 100, RateHz: 200} }},
		{"jitter 100", func(c *Config) { c.Sampling = &Sampling{ClockHz: 100, RateHz: 1, JitterPct: 100} }},
	} {
		cfg := testConfig(t)
		tc.edit(&cfg)
		if err := cfg.Validate(); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if _, err := ParsePolicy("plru"); err == nil {
		t.Error("unknown policy accepted")
	}
	if p, err := ParsePolicy("Round-Robin"); err != nil || p != RoundRobin {
		t.Errorf("ParsePolicy(Round-Robin) = %v, %v", p, err)
	}
}

var testGeometry = board.CacheGeometry{Size: 32 << 10, Ways: 2, LineSize: 32}
