// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"fmt"
	"math"
	"path"

	"github.com/tcmprof/tcmprof/elf/board"
	"github.com/tcmprof/tcmprof/internal/wording"
)

// This file holds the statistics every figure tcmprof prints is built from:
// shares with their intervals, samples per byte, busy/idle classification
// and the instruction-cache footprint. Report, rank, plan and diff take them
// from here; none of them computes its own.

// z95 is the standard normal quantile for a two-sided 95 % interval.
const z95 = 1.959963984540054

// Share is Count samples out of Total with the 95 % Wilson score interval of
// the underlying proportion. Wilson rather than the normal approximation
// because shares of small functions sit near 0, where the normal interval
// goes negative; Wilson stays inside [0, 1] and is close to exact there.
type Share struct {
	Count int     `json:"count"`
	Total int     `json:"total"`
	Lo    float64 `json:"lo"` // 95 % interval of the proportion, 0..1
	Hi    float64 `json:"hi"`
}

// NewShare returns count out of total with its Wilson interval. A zero total
// gives the uninformative interval [0, 1].
func NewShare(count, total int) Share {
	s := Share{Count: count, Total: total, Lo: 0, Hi: 1}
	if total <= 0 {
		return s
	}
	n := float64(total)
	p := float64(count) / n
	z2 := z95 * z95
	denom := 1 + z2/n
	center := (p + z2/(2*n)) / denom
	half := z95 * math.Sqrt(p*(1-p)/n+z2/(4*n*n)) / denom
	s.Lo, s.Hi = math.Max(0, center-half), math.Min(1, center+half)
	if count == 0 {
		s.Lo = 0
	}
	if count == total {
		s.Hi = 1
	}
	return s
}

// Fraction is Count/Total (0 for an empty total).
func (s Share) Fraction() float64 {
	if s.Total <= 0 {
		return 0
	}
	return float64(s.Count) / float64(s.Total)
}

// String formats the share with its interval: "12.3 % (11.8–12.9 %)".
func (s Share) String() string {
	return fmt.Sprintf("%s (%s)", wording.Percent(s.Fraction()), wording.Interval(s.Lo, s.Hi))
}

// Density is samples per byte of code: the figure placement ranks by, since
// ITCM is paid for in bytes.
func Density(samples int, size uint32) float64 {
	if size == 0 {
		return 0
	}
	return float64(samples) / float64(size)
}

// IdleRules says which samples are idle time rather than work. A sample is
// idle when its thread's name matches Threads, or when any function of its
// inline chain matches Functions, or (WFI) when it was interrupted right
// after a WFI/WFE instruction. Patterns are path.Match globs.
type IdleRules struct {
	Threads   []string
	Functions []string
	// WFI counts samples whose PC directly follows a WFI or WFE as idle.
	WFI bool
}

// DefaultIdleRules covers Zephyr and the tcmprof QEMU demo.
//
// Zephyr names its idle thread "idle" ("idle 00", "idle 01", ... with
// several CPUs; kernel/init.c init_idle_thread). Its idle loop is idle()
// (kernel/idle.c), which sleeps through k_cpu_idle()/k_cpu_atomic_idle(),
// inline wrappers of arch_cpu_idle()/arch_cpu_atomic_idle()
// (arch/arm/core/cortex_m/cpu_idle.c). There, WFI runs with PRIMASK set, so
// the sample lands after the following CPSIE, not after the WFI: the
// function names catch it, the WFI rule catches bare-metal loops like the
// demo's.
func DefaultIdleRules() IdleRules {
	return IdleRules{
		Threads: []string{"idle", "idle [0-9][0-9]"},
		Functions: []string{
			"idle", "arch_cpu_idle", "arch_cpu_atomic_idle", "k_cpu_idle", "k_cpu_atomic_idle",
		},
		WFI: true,
	}
}

// Validate reports a malformed pattern.
func (r IdleRules) Validate() error {
	for _, p := range append(append([]string(nil), r.Threads...), r.Functions...) {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("idle pattern %q: %w", p, err)
		}
	}
	return nil
}

// IdleSample reports whether a sample at pc is idle: in thread mode (an
// exception handler is work even when it interrupted the idle thread), and
// either idle by where it is (Site.Idle) or in an idle thread.
func (r IdleRules) IdleSample(pc *Site, exc uint16, thread string) bool {
	return exc == 0 && (pc.Idle || r.IdleThread(thread))
}

// IdleThread reports whether a thread of this name is idle.
func (r IdleRules) IdleThread(name string) bool { return matchAny(r.Threads, name) }

// IdleFunction reports whether samples in this function are idle.
func (r IdleRules) IdleFunction(name string) bool { return matchAny(r.Functions, name) }

func matchAny(patterns []string, name string) bool {
	if name == "" {
		return false
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// AfterWaitForInterrupt reports whether code, the bytes just before a
// sampled PC (at least the 4 bytes at PC-4..PC-1), ends with a WFI or WFE:
// a Thumb-1 16-bit one (BF30 / BF20) or a 32-bit WFI.W / WFE.W
// (F3AF 8003 / F3AF 8002).
func AfterWaitForInterrupt(code []byte) bool {
	if len(code) < 2 {
		return false
	}
	hw := func(i int) uint16 { return uint16(code[i]) | uint16(code[i+1])<<8 }
	last := hw(len(code) - 2)
	if last == 0xBF30 || last == 0xBF20 {
		return true
	}
	if len(code) >= 4 && hw(len(code)-4) == 0xF3AF && (last == 0x8003 || last == 0x8002) {
		return true
	}
	return false
}

// ValidateCache reports a geometry that cannot be a cache.
func ValidateCache(g board.CacheGeometry) error {
	if g.LineSize == 0 || g.Ways == 0 || g.Size == 0 || g.Size%(g.LineSize*g.Ways) != 0 {
		return fmt.Errorf("cache geometry %d B, %d-way, %d B lines: size must be a non-zero multiple of ways × line", g.Size, g.Ways, g.LineSize)
	}
	return nil
}

// Footprint is the instruction-cache footprint of a set of code addresses:
// the distinct cache lines they fall in and how those lines crowd the sets.
// A set holding more lines than it has ways must evict on every pass through
// the code that uses them.
type Footprint struct {
	Geometry board.CacheGeometry
	Lines    int // distinct lines touched
	Bytes    int // Lines × LineSize
	// SetsOver is the number of sets holding more lines than ways, and
	// LinesOver the lines beyond the ways summed over those sets.
	SetsOver, LinesOver int
	MaxPerSet           int // most lines falling in one set
}

// NewFootprint computes the footprint of addrs (each counted once per
// line however often it occurs).
func NewFootprint(g board.CacheGeometry, addrs []uint32) Footprint {
	f := Footprint{Geometry: g}
	if ValidateCache(g) != nil {
		return f
	}
	lines := make(map[uint32]bool)
	for _, a := range addrs {
		lines[a/g.LineSize] = true
	}
	perSet := make(map[uint32]int)
	for l := range lines {
		perSet[l%g.Sets()]++
	}
	f.Lines = len(lines)
	f.Bytes = f.Lines * int(g.LineSize)
	for _, n := range perSet {
		f.MaxPerSet = max(f.MaxPerSet, n)
		if over := n - int(g.Ways); over > 0 {
			f.SetsOver++
			f.LinesOver += over
		}
	}
	return f
}

// String formats the footprint for reports.
func (f Footprint) String() string {
	return fmt.Sprintf("%d distinct %d-byte lines = %s of a %s %d-way cache; %d sets hold more lines than ways (%d lines beyond)",
		f.Lines, f.Geometry.LineSize, kb(f.Bytes), kb(int(f.Geometry.Size)), f.Geometry.Ways, f.SetsOver, f.LinesOver)
}

func kb(n int) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	if n%1024 == 0 {
		return fmt.Sprintf("%d KB", n/1024)
	}
	return fmt.Sprintf("%.1f KB", float64(n)/1024)
}
