// SPDX-License-Identifier: Apache-2.0

// Package live aggregates a sample stream while it runs, for `tcmprof top`:
// counts per refresh interval, a rolling window of the last intervals and
// a cumulative total since the start (or the last reset), the rate at which
// records arrive, what the device dropped and what the link lost, and the
// table model (busy share per function, memory region and context) that
// the batch output and the interactive screen both show.
//
// Records arrive on the session's goroutine (Add, Header) while the view
// ticks and reads tables on its own (Tick, Table, Reset): an Aggregator is
// safe for that. Adding a record costs one map lookup; symbolization
// happens when a table is built, once per distinct PC (profile.Sites), and
// never holds up Add.
//
// The package sits between the commands and the reports: cmd → live →
// profile → sample → elf. It changes with the live view, not with report.
package live

import (
	"errors"
	"sync"
	"time"

	"github.com/tcmprof/tcmprof/profile"
	"github.com/tcmprof/tcmprof/sample"
)

// Options shape the aggregation.
type Options struct {
	// Interval is the length of one refresh interval.
	Interval time.Duration
	// Window is the rolling window, rounded up to whole intervals.
	Window time.Duration
	// Inline folds inlined code into the function it was inlined into (the
	// physical function, as report and placement count it); otherwise a
	// sample counts for the innermost function of its inline chain.
	Inline bool
}

// Loss is what did not arrive as records.
type Loss struct {
	// Device is the samples the device took but could not store: its ring
	// was full because the link or the host did not keep up.
	Device uint64 `json:"device"`
	// Link is the records the device sent that never arrived intact (gaps
	// in the record indices): line errors, or an overflow on the host.
	Link uint64 `json:"link"`
}

func (l *Loss) add(o Loss, sign int64) {
	l.Device = uint64(int64(l.Device) + sign*int64(o.Device))
	l.Link = uint64(int64(l.Link) + sign*int64(o.Link))
}

// stackKey is what a record is counted by.
type stackKey struct {
	pc     uint32
	exc    uint16
	thread uint32
}

// packedKey is a stackKey in one word, the cheapest map key: the PC, the
// exception number (9 bits) and the thread's slot (its order of first
// appearance; a run has few threads).
type packedKey uint64

func pack(pc uint32, exc uint16, threadSlot uint32) packedKey {
	return packedKey(pc) | packedKey(exc&0x1FF)<<32 | packedKey(threadSlot)<<41
}

// idCount is a count of one stack id.
type idCount struct {
	id    int32
	count uint32
}

// interval is one closed refresh interval.
type interval struct {
	start, end time.Time
	counts     []idCount
	samples    int
	loss       Loss
}

// Aggregator counts a stream's records.
type Aggregator struct {
	opts      Options
	windowLen int // intervals in the window
	fields    sample.Fields

	mu   sync.Mutex
	ids  map[packedKey]int32
	keys []stackKey
	// threadSlots numbers the thread ids seen; lastThread and lastSlot
	// spare most records the lookup (a thread runs many samples in a row).
	threadSlots          map[uint32]uint32
	lastThread, lastSlot uint32
	// The interval in progress: counts by id (touched lists the ids
	// counted, so closing it costs what it holds, not every id).
	cur        []uint32
	touched    []int32
	curSamples int
	curLoss    Loss
	curStart   time.Time
	// Closed intervals in the window (oldest first), and their sums.
	closed        []interval
	window        []int64
	windowSamples int
	windowLoss    Loss
	// Since start or the last reset.
	total        []int64
	totalSamples int
	totalLoss    Loss
	totalStart   time.Time
	runStart     time.Time
	lastTick     time.Time
	// Link and device accounting.
	next        uint32 // the index the next record should have
	haveNext    bool
	dropped     uint32 // the device's drop counter at the last HEADER
	threadNames map[uint32]string

	// symMu guards the symbolization state, which only table building uses.
	symMu sync.Mutex
	sites *profile.Sites
	idle  profile.IdleRules
}

// NewAggregator returns an aggregator of a run with the given fields,
// started at start, whose records are symbolized by sites and classified
// by idle. dropped is the device's drop counter when the view begins (0
// for a run it starts; the counter of the first HEADER when it attaches).
func NewAggregator(sites *profile.Sites, idle profile.IdleRules, fields sample.Fields, dropped uint32, start time.Time, opts Options) (*Aggregator, error) {
	if opts.Interval <= 0 {
		return nil, errors.New("the interval must be positive")
	}
	if opts.Window < opts.Interval {
		return nil, errors.New("the window must be at least one interval")
	}
	n := int((opts.Window + opts.Interval - 1) / opts.Interval)
	return &Aggregator{
		opts: opts, windowLen: n, fields: fields, sites: sites, idle: idle,
		ids: make(map[packedKey]int32), threadSlots: map[uint32]uint32{0: 0}, dropped: dropped,
		curStart: start, totalStart: start, runStart: start, lastTick: start,
	}, nil
}

// Add counts records as they arrive, in index order (a session's
// OnRecords). A jump in the indices is link loss.
func (a *Aggregator) Add(recs []sample.Record) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range recs {
		r := &recs[i]
		if a.haveNext {
			if r.Index < a.next {
				continue // sent twice: counted already
			}
			a.curLoss.Link += uint64(r.Index - a.next)
		}
		a.next, a.haveNext = r.Index+1, true
		if r.Thread != a.lastThread {
			slot, ok := a.threadSlots[r.Thread]
			if !ok {
				slot = uint32(len(a.threadSlots))
				a.threadSlots[r.Thread] = slot
			}
			a.lastThread, a.lastSlot = r.Thread, slot
		}
		k := pack(r.PC, r.Exc, a.lastSlot)
		id, ok := a.ids[k]
		if !ok {
			id = int32(len(a.keys))
			a.ids[k] = id
			a.keys = append(a.keys, stackKey{pc: r.PC, exc: r.Exc, thread: r.Thread})
			a.cur = append(a.cur, 0)
		}
		if a.cur[id] == 0 {
			a.touched = append(a.touched, id)
		}
		a.cur[id]++
		a.curSamples++
	}
}

// Header takes the device's counters (a session's OnHeader): the growth
// of its drop counter during the run is device loss. HEADERs of other
// states (the one before START reports the previous run) are ignored.
func (a *Aggregator) Header(h *sample.Header) {
	if h.State != sample.StateRunning {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if h.Dropped > a.dropped {
		a.curLoss.Device += uint64(h.Dropped - a.dropped)
	}
	a.dropped = h.Dropped
}

// SetThreads names the run's threads (a stream run sends its thread table
// only at its end; until then threads show as ids).
func (a *Aggregator) SetThreads(names map[uint32]string) {
	a.symMu.Lock()
	defer a.symMu.Unlock()
	a.threadNames = names
}

// Tick closes the interval in progress at now: it joins the window (the
// oldest interval leaves when the window is full) and the total.
func (a *Aggregator) Tick(now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	iv := interval{start: a.curStart, end: now, samples: a.curSamples, loss: a.curLoss, counts: make([]idCount, len(a.touched))}
	for i, id := range a.touched {
		iv.counts[i] = idCount{id, a.cur[id]}
		a.cur[id] = 0
	}
	a.touched, a.curSamples, a.curLoss, a.curStart, a.lastTick = a.touched[:0], 0, Loss{}, now, now
	a.window = grow(a.window, len(a.keys))
	a.total = grow(a.total, len(a.keys))
	a.addInterval(&iv, 1)
	a.closed = append(a.closed, iv)
	if len(a.closed) > a.windowLen {
		a.addInterval(&a.closed[0], -1)
		a.closed = a.closed[1:]
	}
}

// addInterval adds iv to the window sums (sign 1), or removes it (-1);
// an interval joins the total once, when it is added.
func (a *Aggregator) addInterval(iv *interval, sign int64) {
	for _, c := range iv.counts {
		a.window[c.id] += sign * int64(c.count)
		if sign > 0 {
			a.total[c.id] += int64(c.count)
		}
	}
	a.windowSamples += int(sign) * iv.samples
	a.windowLoss.add(iv.loss, sign)
	if sign > 0 {
		a.totalSamples += iv.samples
		a.totalLoss.add(iv.loss, 1)
	}
}

func grow(s []int64, n int) []int64 {
	if len(s) < n {
		s = append(s, make([]int64, n-len(s))...)
	}
	return s
}

// Reset forgets every count and loss so far, as of now: the window and the
// total start again empty.
func (a *Aggregator) Reset(now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range a.touched {
		a.cur[id] = 0
	}
	a.touched, a.curSamples, a.curLoss, a.curStart = a.touched[:0], 0, Loss{}, now
	a.closed = nil
	clear(a.window)
	clear(a.total)
	a.windowSamples, a.windowLoss = 0, Loss{}
	a.totalSamples, a.totalLoss, a.totalStart, a.lastTick = 0, Loss{}, now, now
}
