// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/tcmprof/tcmprof/elf/board"
	"github.com/tcmprof/tcmprof/sim/simtest"
)

// demoLikeTrace is shaped like the QEMU demo's: 1,500 blocks of about 7
// instructions over 48 KB of flash, a few in ITCM, executed in a fixed
// pseudo-random order that revisits them unit after unit; about 10 M
// instructions.
func demoLikeTrace() ([]byte, uint32) {
	rng := rand.New(rand.NewPCG(3, 4))
	w := simtest.NewWriter(nil)
	var ids []uint32
	var lens []int
	for i := range 1500 {
		start := uint32(flash + rng.IntN(24<<10)*2)
		if i%50 == 0 {
			start = uint32(itcm + rng.IntN(4<<10)*2)
		}
		sizes := make([]uint8, 1+rng.IntN(12))
		for j := range sizes {
			sizes[j] = uint8(2 + 2*rng.IntN(2))
		}
		ids = append(ids, w.Block(start, sizes...))
		lens = append(lens, len(sizes))
	}
	unit := make([]uint32, 5000) // one unit's path through the blocks
	for i := range unit {
		unit[i] = ids[rng.IntN(len(ids))]
	}
	insns := 0
	for insns < 10_000_000 {
		for _, id := range unit {
			w.Exec(id)
			insns += lens[id]
		}
	}
	return w.Bytes(), uint32(insns)
}

// End to end: reading the trace and modelling it, instructions per second
// as "insns/s" (the target is 100 M/s on one core).
func BenchmarkRun(b *testing.B) {
	trace, insns := demoLikeTrace()
	board, _ := board.ByName("qemu-demo")
	cfg := BoardConfig(board)
	cfg.Sampling = &Sampling{ClockHz: DefaultClockHz, RateHz: 10000, JitterPct: DefaultJitterPct}
	b.SetBytes(int64(len(trace)))
	b.ResetTimer()
	for range b.N {
		r, err := NewReader(bytes.NewReader(trace))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Run(r, cfg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(insns)*float64(b.N)/b.Elapsed().Seconds(), "insns/s")
}

// A recorded trace run again: the planner's repeated evaluation.
func BenchmarkRecordingRun(b *testing.B) {
	trace, insns := demoLikeTrace()
	r, err := NewReader(bytes.NewReader(trace))
	if err != nil {
		b.Fatal(err)
	}
	rec, err := Record(r)
	if err != nil {
		b.Fatal(err)
	}
	board, _ := board.ByName("qemu-demo")
	cfg := BoardConfig(board)
	b.ResetTimer()
	for range b.N {
		if _, err := rec.Run(cfg, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(insns)*float64(b.N)/b.Elapsed().Seconds(), "insns/s")
}
