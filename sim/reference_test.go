// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/tcmprof/tcmprof/elf/board"
	"github.com/tcmprof/tcmprof/sim/simtest"
)

// The reference model: slow and written to be obviously right. It turns
// the trace's events into the flat list of executed instructions and
// fetches every line of every instruction through a cache that keeps,
// per way, its line, when it was filled and when it was last used.

type refInsn struct {
	addr uint32
	size uint8
}

type refBlock struct {
	start uint32
	sizes []uint8
}

// refEvent is an execution of a block, or (cut) the cut of the latest
// execution at the single instruction of a block.
type refEvent struct {
	cut bool
	id  uint32
}

// flatten is the executed instructions, cuts applied.
func flatten(blocks []refBlock, events []refEvent) []refInsn {
	var flat []refInsn
	last := 0 // start of the latest execution in flat
	for _, e := range events {
		b := blocks[e.id]
		if e.cut {
			// Keep the latest execution's instructions before the cut
			// address; the cut's instruction follows.
			i := last
			for i < len(flat) && flat[i].addr != b.start {
				i++
			}
			flat = flat[:i]
		}
		last = len(flat)
		a := b.start
		for _, s := range b.sizes {
			flat = append(flat, refInsn{a, s})
			a += uint32(s)
		}
	}
	return flat
}

type refWay struct {
	valid           bool
	line            uint32
	filled, lastUse uint64
}

type refCache struct {
	sets    [][]refWay
	policy  Policy
	clock   uint64
	counter uint32
	rng     uint32
}

func newRefCache(g board.CacheGeometry, p Policy, seed uint32) *refCache {
	c := &refCache{policy: p, rng: seed}
	if c.rng == 0 {
		c.rng = defaultRandomSeed
	}
	for range g.Size / g.LineSize / g.Ways {
		c.sets = append(c.sets, make([]refWay, g.Ways))
	}
	return c
}

func (c *refCache) access(line uint32) bool {
	c.clock++
	set := c.sets[int(line)%len(c.sets)]
	for i := range set {
		if set[i].valid && set[i].line == line {
			set[i].lastUse = c.clock
			return true
		}
	}
	victim := -1
	for i := range set {
		if !set[i].valid {
			victim = i
			break
		}
	}
	if victim < 0 {
		switch c.policy {
		case LRU:
			victim = 0
			for i := range set {
				if set[i].lastUse < set[victim].lastUse {
					victim = i
				}
			}
		case FIFO:
			victim = 0
			for i := range set {
				if set[i].filled < set[victim].filled {
					victim = i
				}
			}
		case RoundRobin:
			victim = int(c.counter % uint32(len(set)))
			c.counter++
		case Random:
			c.rng ^= c.rng << 13
			c.rng ^= c.rng >> 17
			c.rng ^= c.rng << 5
			victim = int(uint64(c.rng) * uint64(len(set)) >> 32)
		}
	}
	set[victim] = refWay{valid: true, line: line, filled: c.clock, lastUse: c.clock}
	return false
}

// refResult is what the reference counts, in the shapes Result has.
type refResult struct {
	insns, misses, units uint64
	code                 map[uint32]uint64
	siteMisses           map[[2]uint32]uint64 // (instruction, line) → fills
	samples              []uint32
}

func reference(cfg Config, layout Layout, flat []refInsn) refResult {
	r := refResult{code: map[uint32]uint64{}, siteMisses: map[[2]uint32]uint64{}}
	cache := newRefCache(cfg.Cache, cfg.Policy, cfg.Seed)
	lineSize := cfg.Cache.LineSize
	measuring := cfg.Unit == nil
	var entries, t, next uint64
	var rng uint32
	var base, span uint32
	draw := func() uint64 {
		rng ^= rng << 13
		rng ^= rng >> 17
		rng ^= rng << 5
		return uint64(base) + uint64(rng)*uint64(span)>>32
	}
	start := func() {
		measuring = true
		if s := cfg.Sampling; s != nil {
			rng = s.Seed
			if rng == 0 {
				rng = DefaultSamplerSeed
			}
			_, base, span = s.Interval()
			next = draw()
		}
	}
	if measuring {
		start()
	}
	in := func(rs []Range, a uint32) bool {
		for _, x := range rs {
			if uint64(a) >= uint64(x.Start) && uint64(a) < x.End {
				return true
			}
		}
		return false
	}
	for _, insn := range flat {
		if u := cfg.Unit; u != nil && insn.addr == u.Addr {
			entries++
			if !measuring && entries == u.Warmup+1 {
				start()
			} else if measuring {
				r.units++
				if u.Count > 0 && r.units == u.Count {
					break
				}
			}
		}
		if in(cfg.Exclude, insn.addr) {
			continue
		}
		ra := layout.Addr(insn.addr)
		var stall uint64
		if !in(cfg.TCM, ra) {
			for l := ra / lineSize; l <= (ra+uint32(insn.size)-1)/lineSize; l++ {
				if !cache.access(l) && measuring {
					r.siteMisses[[2]uint32{insn.addr, l}]++
					r.misses++
					stall += uint64(cfg.Penalty)
				}
			}
		}
		if !measuring {
			continue
		}
		r.insns++
		r.code[insn.addr]++
		t += stall + 1
		for cfg.Sampling != nil && next < t {
			r.samples = append(r.samples, insn.addr)
			next += draw()
		}
	}
	return r
}

// randomTrace makes blocks over a small address space so that a small
// cache thrashes: flash, some ITCM, some excluded code; random runs of
// blocks, and cuts of random executions.
func randomTrace(rng *rand.Rand) ([]refBlock, []refEvent, []byte) {
	var blocks []refBlock
	w := simtest.NewWriter(nil)
	define := func(start uint32, sizes []uint8) uint32 {
		blocks = append(blocks, refBlock{start, sizes})
		return w.Block(start, sizes...)
	}
	var hot []uint32
	for range 8 + rng.IntN(40) {
		var start uint32
		switch rng.IntN(10) {
		case 0:
			start = 0x100 + uint32(rng.IntN(128))*2 // ITCM
		case 1:
			start = 0x60800000 + uint32(rng.IntN(64))*2 // excluded
		default:
			start = flash + uint32(rng.IntN(2048))*2
		}
		sizes := make([]uint8, 1+rng.IntN(8))
		for i := range sizes {
			sizes[i] = uint8(2 + 2*rng.IntN(2))
		}
		hot = append(hot, define(start, sizes))
	}
	var events []refEvent
	for range 200 + rng.IntN(2000) {
		id := hot[rng.IntN(len(hot))]
		if rng.IntN(4) != 0 {
			id = hot[rng.IntN(min(len(hot), 6))] // a few blocks run most
		}
		w.Exec(id)
		events = append(events, refEvent{id: id})
		if b := blocks[id]; len(b.sizes) > 1 && rng.IntN(30) == 0 {
			k := rng.IntN(len(b.sizes))
			a := b.start
			for _, s := range b.sizes[:k] {
				a += uint32(s)
			}
			single := define(a, []uint8{b.sizes[k]})
			w.Cut(single)
			events = append(events, refEvent{cut: true, id: single})
		}
	}
	return blocks, events, w.Bytes()
}

// The fast model and the reference agree on random traces, for every
// policy, geometry, window and layout: instructions, units, every site's
// fills, every instruction's count, and every modelled sample.
func TestModelMatchesReference(t *testing.T) {
	geometries := []board.CacheGeometry{
		{Size: 1024, Ways: 2, LineSize: 32},
		{Size: 2048, Ways: 4, LineSize: 16},
		{Size: 256, Ways: 1, LineSize: 32},
		{Size: 32 << 10, Ways: 2, LineSize: 32},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		blocks, events, trace := randomTrace(rng)
		flat := flatten(blocks, events)
		cfg := Config{
			Cache:   geometries[i%len(geometries)],
			Policy:  Policy(i % 4),
			Seed:    uint32(i),
			Penalty: uint32(1 + rng.IntN(60)),
			TCM:     []Range{{0, 0x20000}},
			Exclude: []Range{{0x60800000, 0x60900000}},
		}
		if rng.IntN(3) != 0 {
			b := blocks[rng.IntN(len(blocks))]
			cfg.Unit = &Unit{Addr: b.start + uint32(b.sizes[0])*uint32(rng.IntN(2)), Warmup: uint64(rng.IntN(5)), Count: uint64(rng.IntN(20))}
		}
		if rng.IntN(2) == 0 {
			cfg.Sampling = &Sampling{ClockHz: 1000, RateHz: uint32(5 + rng.IntN(50)), JitterPct: uint8(rng.IntN(50)), Seed: uint32(rng.IntN(3))}
		}
		var layout Layout
		if rng.IntN(2) == 0 {
			from := flash + uint32(rng.IntN(1024))*2
			to := []uint32{0x200, flash + 0x10000 + uint32(rng.IntN(64))*2}[rng.IntN(2)]
			layout = Layout{{From: from, Size: uint32(2 + rng.IntN(1024)*2), To: to}}
		}
		t.Run(fmt.Sprintf("%d/%v", i, cfg.Policy), func(t *testing.T) {
			want := reference(cfg, layout, flat)
			r, err := NewReader(bytes.NewReader(trace))
			if err != nil {
				t.Fatal(err)
			}
			var got *Result
			if layout == nil {
				got, err = Run(r, cfg)
			} else {
				var rec *Recording
				if rec, err = Record(r); err == nil {
					got, err = rec.Run(cfg, layout)
				}
			}
			if err != nil && (cfg.Unit == nil || cfg.Unit.Count == 0) {
				// The window may not open at all: the reference then counts nothing.
				if want.insns != 0 {
					t.Fatal(err)
				}
				return
			}
			if got.Instructions != want.insns || got.Misses != want.misses || got.Units != want.units {
				t.Fatalf("model: %d instructions, %d fills, %d units; reference: %d, %d, %d",
					got.Instructions, got.Misses, got.Units, want.insns, want.misses, want.units)
			}
			sites := map[[2]uint32]uint64{}
			for _, s := range got.Sites {
				if s.Misses > 0 {
					sites[[2]uint32{s.Addr, s.Line}] += s.Misses
				}
			}
			if !reflect.DeepEqual(sites, want.siteMisses) {
				t.Errorf("fills per site differ:\nmodel     %v\nreference %v", sites, want.siteMisses)
			}
			code := map[uint32]uint64{}
			for _, c := range got.Code {
				code[c.Addr] = c.Count
			}
			if !reflect.DeepEqual(code, want.code) {
				t.Errorf("instruction counts differ:\nmodel     %v\nreference %v", code, want.code)
			}
			if !reflect.DeepEqual(got.Samples, want.samples) {
				t.Errorf("samples differ: model %d, reference %d", len(got.Samples), len(want.samples))
			}
		})
	}
}
