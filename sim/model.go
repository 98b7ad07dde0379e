// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"errors"
	"fmt"
	"io"
	"sort"
)

// phase is where a run is in its window.
type phase uint8

const (
	warming   phase = iota // before the window: the cache fills, nothing counts
	measuring              // in the window
	finished               // past the window: the run stops reading
)

// model is the state of one run.
type model struct {
	cfg      Config
	layout   Layout
	penalty  uint64
	shift    uint // log2 line size
	setMask  uint32
	ways     int
	tags     []uint32 // per set, ways tags (line number + 1, 0 = empty); LRU keeps them most recent first
	fifoNext []uint8  // FIFO: per set, the way filled longest ago
	rrNext   uint32   // RoundRobin: the one counter
	rng      uint32   // Random

	blocks []*cblock // compiled blocks by Block.Index
	hit    []bool    // hit flag of each access of the execution being modelled

	phase     phase
	entries   uint64 // marker entries so far
	units     uint64 // complete units in the window
	sinceUnit uint64 // instructions in the window since the latest entry

	insns, fetches, misses uint64
	now                    uint64 // cycles into the window
	partials               []partial

	// sampling
	nextSample uint64
	sampleRNG  uint32
	base, span uint32
	samples    []uint32
}

// cblock is a block compiled for one run: its cache line fetches in
// order, the instructions that count, its marker.
type cblock struct {
	n      uint64   // instructions that count (not excluded)
	skip   []bool   // per instruction, excluded; nil when none is
	acc    []access // line fetches, in order
	marker int      // index of the marker instruction; -1 without one
	execs  uint64   // whole executions in the window
}

// access is one cached line fetch of a block: the line, and the first
// instruction of the block that touches it (the one whose fetch misses).
type access struct {
	line            uint32
	insn            int32
	fetches, misses uint64 // in the window
}

// partial is an execution that the window cuts: instructions [from, to).
type partial struct {
	b        *Block
	from, to int
}

func newModel(cfg Config, layout Layout) (*model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := layout.Validate(); err != nil {
		return nil, err
	}
	g := cfg.Cache
	m := &model{
		cfg:     cfg,
		layout:  layout,
		penalty: uint64(cfg.Penalty),
		shift:   uint(log2(g.LineSize)),
		setMask: g.Sets() - 1,
		ways:    int(g.Ways),
		tags:    make([]uint32, g.Sets()*g.Ways),
		rng:     cfg.Seed,
		phase:   measuring,
	}
	if m.rng == 0 {
		m.rng = defaultRandomSeed
	}
	if cfg.Policy == FIFO {
		m.fifoNext = make([]uint8, g.Sets())
	}
	if cfg.Unit != nil {
		m.phase = warming
	}
	if s := cfg.Sampling; s != nil {
		m.sampleRNG = s.Seed
		if m.sampleRNG == 0 {
			m.sampleRNG = DefaultSamplerSeed
		}
		_, m.base, m.span = s.Interval()
	}
	if m.phase == measuring {
		m.startWindow()
	}
	return m, nil
}

func log2(v uint32) int {
	n := 0
	for v > 1 {
		v >>= 1
		n++
	}
	return n
}

// xorshift32 is the sampler's generator (core/sampler.c next_random).
func xorshift32(r uint32) uint32 {
	r ^= r << 13
	r ^= r >> 17
	r ^= r << 5
	return r
}

// draw is the sampler's next interval: base + mulhi(r, span).
func (m *model) draw() uint64 {
	m.sampleRNG = xorshift32(m.sampleRNG)
	return uint64(m.base) + uint64(m.sampleRNG)*uint64(m.span)>>32
}

// startWindow is START: the first interval is drawn as the firmware does.
func (m *model) startWindow() {
	m.phase = measuring
	if m.cfg.Sampling != nil {
		m.nextSample = m.draw()
	}
}

// lookup fetches line through the cache and reports a hit.
func (m *model) lookup(line uint32) bool {
	w := m.ways
	base := int(line&m.setMask) * w
	set := m.tags[base : base+w : base+w]
	tag := line + 1
	if m.cfg.Policy == LRU {
		// Most recent first. Moving by hand: with 2 to 8 ways a loop is
		// cheaper than copy's call.
		if set[0] == tag {
			return true
		}
		i := 1
		for i < w && set[i] != tag {
			i++
		}
		hit := i < w
		if !hit {
			i = w - 1 // the least recent (or an empty way, which sorts last) goes
		}
		for ; i > 0; i-- {
			set[i] = set[i-1]
		}
		set[0] = tag
		return hit
	}
	for _, t := range set {
		if t == tag {
			return true
		}
	}
	for i, t := range set {
		if t == 0 {
			set[i] = tag
			return false
		}
	}
	var victim int
	switch m.cfg.Policy {
	case FIFO:
		s := base / w
		victim = int(m.fifoNext[s])
		m.fifoNext[s] = uint8((victim + 1) % w)
	case RoundRobin:
		victim = int(m.rrNext % uint32(w))
		m.rrNext++
	case Random:
		m.rng = xorshift32(m.rng)
		victim = int(uint64(m.rng) * uint64(w) >> 32)
	}
	set[victim] = tag
	return false
}

// compile makes the run's form of b.
func (m *model) compile(b *Block) *cblock {
	cb := &cblock{marker: -1}
	addr := b.Start
	lastLine, haveLine := uint32(0), false
	for i, size := range b.Sizes {
		a := addr
		addr += uint32(size)
		if u := m.cfg.Unit; u != nil && a == u.Addr && cb.marker < 0 {
			cb.marker = i
		}
		if inRanges(m.cfg.Exclude, a) {
			if cb.skip == nil {
				cb.skip = make([]bool, len(b.Sizes))
			}
			cb.skip[i] = true
			continue
		}
		cb.n++
		ra := m.layout.Addr(a)
		if inRanges(m.cfg.TCM, ra) {
			haveLine = false
			continue
		}
		// An instruction that crosses a line boundary fetches both lines.
		for l := ra >> m.shift; l <= (ra+uint32(size)-1)>>m.shift; l++ {
			if !haveLine || l != lastLine {
				cb.acc = append(cb.acc, access{line: l, insn: int32(i)})
				lastLine, haveLine = l, true
			}
		}
	}
	if len(cb.acc) > len(m.hit) {
		m.hit = make([]bool, len(cb.acc))
	}
	return cb
}

func inRanges(rs []Range, a uint32) bool {
	for _, r := range rs {
		if r.contains(a) {
			return true
		}
	}
	return false
}

// exec models one execution of b.
func (m *model) exec(b *Block) {
	if b.Index >= len(m.blocks) {
		m.blocks = append(m.blocks, make([]*cblock, b.Index+1-len(m.blocks))...)
	}
	cb := m.blocks[b.Index]
	if cb == nil {
		cb = m.compile(b)
		m.blocks[b.Index] = cb
	}
	if cb.marker < 0 {
		m.runWhole(b, cb)
		return
	}
	k := cb.marker
	if m.entryEndsPhase() {
		m.runPart(b, cb, 0, k)
		m.enter()
		m.runPart(b, cb, k, b.Len())
		return
	}
	m.runWhole(b, cb)
	m.enter()
	if m.phase == measuring {
		m.sinceUnit = countRange(cb, k, b.Len())
	}
}

// entryEndsPhase reports whether the next marker entry opens or closes
// the window.
func (m *model) entryEndsPhase() bool {
	u := m.cfg.Unit
	switch m.phase {
	case warming:
		return m.entries+1 == u.Warmup+1
	case measuring:
		return u.Count > 0 && m.units+1 == u.Count
	}
	return false
}

// enter counts a marker entry.
func (m *model) enter() {
	m.entries++
	switch m.phase {
	case warming:
		if m.entries == m.cfg.Unit.Warmup+1 {
			m.startWindow()
		}
	case measuring:
		m.units++
		m.sinceUnit = 0
		if c := m.cfg.Unit.Count; c > 0 && m.units == c {
			m.phase = finished
		}
	}
}

// runWhole models all of b in the current phase.
func (m *model) runWhole(b *Block, cb *cblock) {
	switch m.phase {
	case warming:
		for i := range cb.acc {
			m.lookup(cb.acc[i].line)
		}
		return
	case finished:
		return
	}
	var misses uint64
	for i := range cb.acc {
		a := &cb.acc[i]
		a.fetches++
		hit := m.lookup(a.line)
		m.hit[i] = hit
		if !hit {
			a.misses++
			misses++
		}
	}
	cb.execs++
	m.insns += cb.n
	m.sinceUnit += cb.n
	m.fetches += uint64(len(cb.acc))
	m.misses += misses
	cycles := cb.n + misses*m.penalty
	if m.cfg.Sampling != nil && m.now+cycles > m.nextSample {
		m.sample(b, cb, 0, b.Len())
	}
	m.now += cycles
}

// runPart models instructions [from, to) of b in the current phase.
func (m *model) runPart(b *Block, cb *cblock, from, to int) {
	if m.phase == finished || from == to {
		return
	}
	var misses, fetches uint64
	for i := range cb.acc {
		a := &cb.acc[i]
		if int(a.insn) < from || int(a.insn) >= to {
			continue
		}
		hit := m.lookup(a.line)
		if m.phase != measuring {
			continue
		}
		m.hit[i] = hit
		fetches++
		a.fetches++
		if !hit {
			a.misses++
			misses++
		}
	}
	if m.phase != measuring {
		return
	}
	n := countRange(cb, from, to)
	m.partials = append(m.partials, partial{b, from, to})
	m.insns += n
	m.sinceUnit += n
	m.fetches += fetches
	m.misses += misses
	cycles := n + misses*m.penalty
	if m.cfg.Sampling != nil && m.now+cycles > m.nextSample {
		m.sample(b, cb, from, to)
	}
	m.now += cycles
}

// countRange is the instructions of [from, to) that count.
func countRange(cb *cblock, from, to int) uint64 {
	n := uint64(to - from)
	if cb.skip != nil {
		for _, s := range cb.skip[from:to] {
			if s {
				n--
			}
		}
	}
	return n
}

// sample takes the samples due while instructions [from, to) of b run,
// m.now being the cycle they start at and m.hit the fate of their
// fetches. A fill stalls the instruction whose fetch missed, so a sample
// during the fill lands on that instruction, as on the board.
func (m *model) sample(b *Block, cb *cblock, from, to int) {
	t := m.now
	ai := 0
	for ai < len(cb.acc) && int(cb.acc[ai].insn) < from {
		ai++
	}
	addr := b.Addr(from)
	for i := from; i < to; i++ {
		pc := addr
		addr += uint32(b.Sizes[i])
		if cb.skip != nil && cb.skip[i] {
			continue
		}
		for ; ai < len(cb.acc) && int(cb.acc[ai].insn) == i; ai++ {
			if !m.hit[ai] {
				t += m.penalty
			}
		}
		t++
		for m.nextSample < t {
			m.samples = append(m.samples, pc)
			m.nextSample += m.draw()
		}
	}
}

// Run models the trace that r reads, streaming: memory stays constant
// whatever its length. It stops reading once the window is complete.
func Run(r *Reader, cfg Config) (*Result, error) {
	m, err := newModel(cfg, nil)
	if err != nil {
		return nil, err
	}
	for m.phase != finished {
		b, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		m.exec(b)
	}
	return m.result(r.Blocks())
}

// Recording is a trace in memory: its blocks and the sequence of their
// executions (4 bytes per executed block). Record it once per image and
// Run it as often as needed; it is not modified by runs, which may run
// concurrently.
type Recording struct {
	BuildID []byte
	Blocks  []*Block // by Index
	Execs   []uint32 // block indices in execution order
}

// Record reads the whole trace into memory.
func Record(r *Reader) (*Recording, error) {
	rec := &Recording{BuildID: r.BuildID}
	for {
		b, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		rec.Execs = append(rec.Execs, uint32(b.Index))
	}
	rec.Blocks = r.Blocks()
	return rec, nil
}

// Run models the recording under cfg with the code laid out as layout
// says (nil: as traced). Marker, exclusions and the results' instruction
// addresses stay in the trace's addresses; cache lines and TCM are looked
// up where the code runs under layout.
func (rec *Recording) Run(cfg Config, layout Layout) (*Result, error) {
	m, err := newModel(cfg, layout)
	if err != nil {
		return nil, err
	}
	for _, i := range rec.Execs {
		if m.phase == finished {
			break
		}
		if int(i) >= len(rec.Blocks) {
			return nil, fmt.Errorf("recording executes block %d of %d", i, len(rec.Blocks))
		}
		m.exec(rec.Blocks[i])
	}
	return m.result(rec.Blocks)
}

// ErrShortTrace is returned (with the result so far) when the trace ends
// before the window: fewer units than Unit.Count, or no window at all.
var ErrShortTrace = errors.New("the trace ends before the window does")

// result collects what the run counted.
func (m *model) result(blocks []*Block) (*Result, error) {
	r := &Result{
		Config:           m.cfg,
		Layout:           m.layout,
		Instructions:     m.insns,
		Fetches:          m.fetches,
		Misses:           m.misses,
		Units:            m.units,
		TailInstructions: m.sinceUnit,
		Samples:          m.samples,
	}
	if m.cfg.Unit == nil {
		r.TailInstructions = 0
	}
	code := make(map[uint32]uint64)
	sites := make(map[siteKey]*Site)
	for i, cb := range m.blocks {
		if cb == nil {
			continue
		}
		b := blocks[i]
		if cb.execs > 0 {
			addCode(code, b, cb, 0, b.Len(), cb.execs)
		}
		for _, a := range cb.acc {
			if a.fetches == 0 {
				continue
			}
			k := siteKey{b.Addr(int(a.insn)), a.line}
			s := sites[k]
			if s == nil {
				s = &Site{Addr: k.addr, Line: k.line}
				sites[k] = s
			}
			s.Fetches += a.fetches
			s.Misses += a.misses
		}
	}
	for _, p := range m.partials {
		addCode(code, p.b, m.blocks[p.b.Index], p.from, p.to, 1)
	}
	r.Code = make([]Code, 0, len(code))
	for a, n := range code {
		r.Code = append(r.Code, Code{Addr: a, Count: n})
	}
	sort.Slice(r.Code, func(i, j int) bool { return r.Code[i].Addr < r.Code[j].Addr })
	r.Sites = make([]Site, 0, len(sites))
	for _, s := range sites {
		r.Sites = append(r.Sites, *s)
	}
	sort.Slice(r.Sites, func(i, j int) bool {
		a, b := &r.Sites[i], &r.Sites[j]
		if a.Addr != b.Addr {
			return a.Addr < b.Addr
		}
		return a.Line < b.Line
	})
	if u := m.cfg.Unit; u != nil && (m.phase == warming || u.Count > 0 && m.units < u.Count) {
		if m.phase == warming {
			return r, fmt.Errorf("%w: %d marker entries, the window starts at entry %d", ErrShortTrace, m.entries, u.Warmup+1)
		}
		return r, fmt.Errorf("%w: %d of %d units after %d of warm-up", ErrShortTrace, m.units, u.Count, u.Warmup)
	}
	return r, nil
}

type siteKey struct{ addr, line uint32 }

// addCode adds n executions of instructions [from, to) of b.
func addCode(code map[uint32]uint64, b *Block, cb *cblock, from, to int, n uint64) {
	a := b.Addr(from)
	for i := from; i < to; i++ {
		if cb.skip == nil || !cb.skip[i] {
			code[a] += n
		}
		a += uint32(b.Sizes[i])
	}
}
