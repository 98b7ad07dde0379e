// SPDX-License-Identifier: Apache-2.0

// Package sim is a trace-driven model of the instruction side of a
// Cortex-M7 with an L1 instruction cache, TCM and slow flash: from the
// instructions a QEMU run executed (firmware-sampler/qemu/plugin), it
// counts line fills and first-order cycles (instructions + fills × penalty),
// per unit of work, per function, library and cache set, and can sample
// the PC every N modelled cycles as the firmware sampler would on the
// board (docs/sim.md).
//
// A Config says what to model; Run streams a trace through it in constant
// memory; a Recording holds a trace in memory and runs it again cheaply,
// optionally against another code layout (the planner's use). Nothing in
// the package is global: runs are independent and may run concurrently.
package sim

import (
	"fmt"
	"math/bits"
	"sort"
	"strings"

	"github.com/tcmprof/tcmprof/elf/board"
	"github.com/tcmprof/tcmprof/sample/device"
)

// Defaults: the i.MX RT1062 (Teensy 4.1) as docs/sim.md cites them.
const (
	DefaultPenalty   = board.FlashLineFillCycles // cycles per line fill from QSPI flash
	DefaultClockHz   = 600_000_000               // Teensy 4.1 core clock
	DefaultJitterPct = device.DefaultJitterPct
	// DefaultSamplerSeed is the firmware sampler's xorshift32 seed when
	// the port gives none (core/sampler.c DEFAULT_SEED).
	DefaultSamplerSeed = 0x2545F491
	// defaultRandomSeed seeds the Random policy when Config.Seed is 0.
	defaultRandomSeed = 0x9E3779B9
)

// Policy chooses which way of a full set a fill replaces. An empty way is
// always filled first (lowest way first).
type Policy uint8

const (
	// LRU replaces the least recently used way. With 2 ways it is exact
	// and cheap in hardware; the Cortex-M7 TRM does not document its
	// policy, so LRU is the default and the others bound its effect.
	LRU Policy = iota
	// FIFO (per-set round-robin) replaces the way filled longest ago.
	FIFO
	// RoundRobin replaces way c mod ways and increments c, one counter for
	// all sets (as ARM documents for its ARM11 caches).
	RoundRobin
	// Random replaces way ⌊r·ways/2³²⌋, r from xorshift32 (Config.Seed).
	Random
)

var policyNames = []string{LRU: "lru", FIFO: "fifo", RoundRobin: "round-robin", Random: "random"}

func (p Policy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return fmt.Sprintf("policy(%d)", uint8(p))
}

// ParsePolicy reads a policy name: lru, fifo, round-robin or random.
func ParsePolicy(s string) (Policy, error) {
	for i, n := range policyNames {
		if strings.EqualFold(s, n) {
			return Policy(i), nil
		}
	}
	return 0, fmt.Errorf("unknown replacement policy %q (want %s)", s, strings.Join(policyNames, ", "))
}

// Range is the addresses [Start, End).
type Range struct {
	Start uint32
	End   uint64 // may be 1<<32
}

func (r Range) contains(a uint32) bool { return a >= r.Start && uint64(a) < r.End }

func (r Range) String() string { return fmt.Sprintf("0x%08x-0x%08x", r.Start, r.End) }

// Unit bounds the modelled window by entries of a marker: executions of
// the instruction at Addr, normally a function's first instruction (one
// zsock_sendto per echo in the demo). The window starts at entry Warmup+1
// and ends at entry Warmup+Count+1, so it holds Count whole units.
type Unit struct {
	Name   string // the marker's function, for reports
	Addr   uint32
	Warmup uint64
	// Count of units to measure; 0 measures to the end of the trace, and
	// instructions after the last entry (Result.TailInstructions) then
	// count in the totals without completing a unit.
	Count uint64
}

// Sampling is the firmware sampler as the modelled board would run it:
// an interval of ClockHz/RateHz model cycles, jittered like core/sampler.c.
type Sampling struct {
	ClockHz   uint32 // model cycles per second
	RateHz    uint32
	JitterPct uint8
	Seed      uint32 // the sampler's xorshift32 state before START; 0: DefaultSamplerSeed
}

// Interval is the mean interval in cycles and the sampler's draw
// parameters (docs/core.md "Jitter"): base = mean − h, span = 2h + 1.
func (s *Sampling) Interval() (mean, base, span uint32) {
	mean = uint32((uint64(s.ClockHz) + uint64(s.RateHz)/2) / uint64(s.RateHz))
	h := uint32(uint64(mean) * uint64(s.JitterPct) / 100)
	return mean, mean - h, 2*h + 1
}

// Config is what to model.
type Config struct {
	Cache   board.CacheGeometry
	Policy  Policy
	Seed    uint32 // Random policy seed; 0 picks a fixed one
	Penalty uint32 // cycles of a line fill (an instruction fetch that misses)
	// TCM are zero-wait memories that the cache does not serve (ITCM).
	// Every other address is cached and filled at Penalty cycles.
	TCM []Range
	// Exclude is code that costs nothing and leaves the cache alone: the
	// testbench that plays the world outside the chip.
	Exclude  []Range
	Unit     *Unit     // nil: the whole trace is the window
	Sampling *Sampling // nil: no modelled capture
}

// BoardConfig is the default model of a board: its I-cache, LRU, the
// default fill penalty, its ITCM regions as TCM.
func BoardConfig(b *board.Board) Config {
	c := Config{Cache: b.ICache, Policy: LRU, Penalty: DefaultPenalty}
	for _, r := range b.Regions {
		if r.Kind == board.KindITCM {
			c.TCM = append(c.TCM, Range{r.Start, r.End()})
		}
	}
	return c
}

// Validate checks the configuration; every error is one line.
func (c *Config) Validate() error {
	g := c.Cache
	switch {
	case g.Ways == 0 || g.Ways > 64:
		return fmt.Errorf("cache ways %d (1 to 64)", g.Ways)
	case g.LineSize < 4 || g.LineSize > 4096 || bits.OnesCount32(g.LineSize) != 1:
		return fmt.Errorf("cache line size %d (a power of two, 4 to 4096)", g.LineSize)
	case g.Sets() == 0 || bits.OnesCount32(g.Sets()) != 1 || g.Sets()*g.Ways*g.LineSize != g.Size:
		return fmt.Errorf("cache of %d bytes, %d ways, %d-byte lines: the sets must be a power of two", g.Size, g.Ways, g.LineSize)
	}
	if int(c.Policy) >= len(policyNames) {
		return fmt.Errorf("unknown replacement policy %d", c.Policy)
	}
	for _, rs := range [][]Range{c.TCM, c.Exclude} {
		for _, r := range rs {
			if uint64(r.Start) >= r.End || r.End > 1<<32 {
				return fmt.Errorf("address range %v is empty or past 4 GB", r)
			}
		}
	}
	if s := c.Sampling; s != nil {
		return s.Validate()
	}
	return nil
}

// Validate checks the sampling parameters.
func (s *Sampling) Validate() error {
	if s.ClockHz == 0 || s.RateHz == 0 || s.RateHz > s.ClockHz {
		return fmt.Errorf("sampling at %d Hz of a %d Hz clock (want 1 Hz up to the clock)", s.RateHz, s.ClockHz)
	}
	// Below 100 %, every drawn interval is at least one cycle.
	if s.JitterPct >= 100 {
		return fmt.Errorf("jitter %d %% (below 100)", s.JitterPct)
	}
	return nil
}

// Move relocates the traced code at [From, From+Size) to To.
type Move struct{ From, Size, To uint32 }

// Layout says where traced code would run in another image: an address
// that no move covers stays where it is. Moves are sorted by From and
// disjoint (Validate). The trace's own layout is the empty Layout.
type Layout []Move

// Validate checks that the moves are sorted, disjoint and inside 4 GB.
func (l Layout) Validate() error {
	for i, m := range l {
		if m.Size == 0 || uint64(m.From)+uint64(m.Size) > 1<<32 || uint64(m.To)+uint64(m.Size) > 1<<32 {
			return fmt.Errorf("layout move %d (0x%08x+%d to 0x%08x) is empty or past 4 GB", i, m.From, m.Size, m.To)
		}
		if i > 0 && uint64(l[i-1].From)+uint64(l[i-1].Size) > uint64(m.From) {
			return fmt.Errorf("layout moves %d and %d overlap or are out of order", i-1, i)
		}
	}
	return nil
}

// Addr is where the traced address a runs under l.
func (l Layout) Addr(a uint32) uint32 {
	i := sort.Search(len(l), func(i int) bool { return l[i].From > a }) - 1
	if i >= 0 && a-l[i].From < l[i].Size {
		return a - l[i].From + l[i].To
	}
	return a
}
