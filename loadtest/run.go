// SPDX-License-Identifier: Apache-2.0

package loadtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"

	"github.com/tcmprof/tcmprof/internal/rxtime"
)

// Progress is told about each step as it ends (index counts from 0 over
// all passes; total = passes × rates).
type Progress func(index, total int, st Step)

// Measure offers opts.Rates to the UDP echo at target ("host:port") and
// returns what came back. It first checks that the target answers at all
// (opts.ProbeTimeout), so that a wrong address or a silent port is one
// error, not a table of zeros. ctx ends the run early with ctx's error; the
// steps completed so far are returned with it.
func Measure(ctx context.Context, target string, opts Options, progress Progress) (*Run, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	raddr, err := net.ResolveUDPAddr("udp", target)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", target, unwrapDNS(err))
	}
	var laddr *net.UDPAddr
	if opts.Local != "" {
		if laddr, err = net.ResolveUDPAddr("udp", opts.Local); err != nil {
			return nil, fmt.Errorf("local address %s: %w", opts.Local, unwrapDNS(err))
		}
	}
	conn, err := net.DialUDP("udp", laddr, raddr)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", target, err)
	}
	t := newTester(conn, opts)
	recvDone := make(chan struct{})
	go func() { t.receive(); close(recvDone) }()
	defer func() { conn.Close(); <-recvDone }()

	run := &Run{Format: FormatVersion, Target: raddr.String(), Started: t.epoch.UTC(), Settings: settingsOf(opts)}
	if err := t.probe(ctx, target); err != nil {
		return nil, err
	}
	total := opts.Passes * len(opts.Rates)
	for pass := 1; pass <= opts.Passes; pass++ {
		for i, rate := range opts.Rates {
			if err := ctx.Err(); err != nil {
				return t.finish(run), err
			}
			st := t.step(pass, i, rate)
			if err := t.receiverError(); err != nil {
				return t.finish(run), err
			}
			if progress != nil {
				snapshot := t.snapshot(st)
				snapshot.derive(&opts)
				progress((pass-1)*len(opts.Rates)+i, total, snapshot)
			}
		}
		// Late echoes of this pass's last step may still arrive.
		if !sleepCtx(ctx, opts.Drain) {
			return t.finish(run), ctx.Err()
		}
	}
	return t.finish(run), nil
}

// unwrapDNS keeps the resolver's own message ("no such host") without the
// repeated address.
func unwrapDNS(err error) error {
	var de *net.DNSError
	if errors.As(err, &de) {
		return errors.New(de.Err)
	}
	return err
}

// maxBatch bounds one sendmmsg/recvmmsg. The pacer sends what is due, which
// is one datagram unless the host fell behind.
const maxBatch = 64

// catchUpTime bounds how late at the end of a step the sender may still
// send datagrams that were due before it ended.
const catchUpTime = 20 * time.Millisecond

// tester holds one run's socket, its clock and what every step received.
type tester struct {
	conn  *net.UDPConn
	pc    batchConn
	opts  Options
	run   uint32
	epoch time.Time // send times are nanoseconds since this instant

	mu        sync.Mutex
	steps     map[stepKey]*stepState
	unmatched int
	probes    int   // echoes of the probe (step index 0xFFFF)
	refused   error // the last ICMP error the socket reported
	failed    error // the receiver stopped
}

// batchConn reads and writes several datagrams per system call
// (recvmmsg/sendmmsg on Linux, one at a time elsewhere).
type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

type stepKey struct{ pass, step uint16 }

// probeStep marks the probe's datagrams.
const probeStep = 0xFFFF

// stepState is one step's bookkeeping; the sender writes start and
// reserved, the receiver the rest, both under tester.mu.
type stepState struct {
	pass     int
	offered  float64
	start    time.Duration // since epoch
	reserved uint32        // sequence numbers handed out so far
	sent     int
	errors   int

	seen      []uint64 // bitmap over sequence numbers
	maxSeq    int64
	echoes    int
	inWindow  int
	late      int
	dups      int
	reordered int
	rtts      []time.Duration
}

func newTester(conn *net.UDPConn, opts Options) *tester {
	t := &tester{conn: conn, opts: opts, run: rand.Uint32(), epoch: time.Now(), steps: map[stepKey]*stepState{}}
	if a, ok := conn.RemoteAddr().(*net.UDPAddr); ok && a.IP.To4() == nil {
		t.pc = ipv6.NewPacketConn(conn)
	} else {
		t.pc = ipv4.NewPacketConn(conn)
	}
	return t
}

func (t *tester) now() time.Duration { return time.Since(t.epoch) }

// probe sends a datagram every 100 ms until one comes back. An ICMP error
// does not end it early (a device may still be booting); when nothing
// answered, the error says what came back instead.
func (t *tester) probe(ctx context.Context, target string) error {
	buf := make([]byte, t.opts.Payload)
	deadline := time.Now().Add(t.opts.ProbeTimeout)
	var refused error
	for seq := uint32(0); time.Now().Before(deadline); seq++ {
		stamp{run: t.run, seq: seq, step: probeStep, sentNano: int64(t.now())}.encode(buf)
		if _, err := t.conn.Write(buf); err != nil {
			if !isTransient(err) {
				return fmt.Errorf("target %s: %v", target, describeSendError(err))
			}
			refused = err
		}
		if !sleepCtx(ctx, min(100*time.Millisecond, time.Until(deadline))) {
			return ctx.Err()
		}
		t.mu.Lock()
		got := t.probes
		if t.refused != nil {
			refused = t.refused
		}
		t.mu.Unlock()
		if got > 0 {
			return nil
		}
	}
	if refused != nil {
		return fmt.Errorf("target %s: %v", target, describeSendError(refused))
	}
	return fmt.Errorf("target %s: no echo within %v (is a UDP echo server listening there?)", target, t.opts.ProbeTimeout)
}

// describeSendError says what an ICMP error on the connected socket means.
func describeSendError(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "port unreachable (ICMP): nothing listens on that port"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "host unreachable"
	}
	return err.Error()
}

// isTransient: errors that lose datagrams but do not end the run: the
// host's queues are full, or an ICMP error arrived for an earlier datagram.
func isTransient(err error) bool {
	return errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

// step offers rate for one step time and returns its state once the step
// time is over (its echoes may still arrive).
func (t *tester) step(pass, index int, rate float64) *stepState {
	st := &stepState{pass: pass, offered: rate, maxSeq: -1}
	key := stepKey{uint16(pass), uint16(index)}
	interval := time.Duration(float64(time.Second) / rate)
	count := int(rate*t.opts.StepTime.Seconds() + 0.5)
	// A sender descheduled just before the end of the step (a busy host
	// stalls threads for milliseconds) still sends what was due, up to
	// catchUpTime's worth; a host that fell further behind is the limit.
	catchUp := int(rate * catchUpTime.Seconds())
	msgs := make([]ipv4.Message, maxBatch)
	bufs := make([][]byte, maxBatch)
	for i := range msgs {
		bufs[i] = make([]byte, t.opts.Payload)
		msgs[i].Buffers = [][]byte{bufs[i]}
	}

	t.mu.Lock()
	st.start = t.now()
	t.steps[key] = st
	t.mu.Unlock()
	start := t.epoch.Add(st.start)
	end := start.Add(t.opts.StepTime)
	// The write deadline keeps a blocked send from running past the step.
	t.conn.SetWriteDeadline(end)
	defer t.conn.SetWriteDeadline(time.Time{})

	for seq := 0; seq < count; {
		now := time.Now()
		if !now.Before(end) && count-seq > catchUp {
			break // the host fell behind: the step is over anyway
		}
		due := min(count, int(now.Sub(start)/interval)+1)
		if due <= seq {
			waitUntil(start.Add(time.Duration(seq)*interval), rate > spinAbove)
			continue
		}
		n := min(due-seq, maxBatch)
		sendAt := int64(t.now())
		for i := 0; i < n; i++ {
			stamp{run: t.run, seq: uint32(seq + i), step: uint16(index), pass: uint16(pass), sentNano: sendAt}.encode(bufs[i])
		}
		t.mu.Lock()
		st.reserved = uint32(seq + n)
		t.mu.Unlock()
		sent, err := t.pc.WriteBatch(msgs[:n], 0)
		if sent < 0 {
			sent = 0
		}
		t.mu.Lock()
		st.sent += sent
		if err != nil {
			if !isTransient(err) {
				// A deadline or a closed socket: nothing more goes out.
				st.errors += count - seq - sent
				t.mu.Unlock()
				break
			}
			st.errors += n - sent
		}
		t.mu.Unlock()
		seq += n
	}
	waitUntil(end, false)
	return st
}

// Pacing: the runtime's timers wake up to a millisecond late (measured on
// the 2-core development VM), which would send a burst of datagrams per
// tick; a device with a few receive buffers drops such bursts at rates it
// could otherwise sustain. nanosleep(2) wakes 50–150 µs late, so the pacer
// sleeps with it, and above spinAbove datagrams per second sleeps until
// spinLead before a send and spins from there.
const (
	spinAbove = 2000.0
	spinLead  = 100 * time.Microsecond
)

// waitUntil returns at (or just after) at.
func waitUntil(at time.Time, spin bool) {
	d := time.Until(at)
	if spin {
		d -= spinLead
	}
	if d > 0 {
		ts := unix.NsecToTimespec(int64(d))
		for unix.Nanosleep(&ts, &ts) == unix.EINTR {
		}
	}
	for spin && time.Now().Before(at) {
		runtime.Gosched()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// receive reads echoes in batches until the socket is closed. Arrival
// times are the kernel's (SO_TIMESTAMPNS) where it gives them, so that a
// receiving thread that the host's scheduler holds back for a few
// milliseconds moves neither round-trip times nor echoes across the edges
// of the goodput window.
func (t *tester) receive() {
	kernelTime := rxtime.Enable(t.conn) == nil
	msgs := make([]ipv4.Message, maxBatch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, MaxPayload+1)}
		if kernelTime {
			msgs[i].OOB = make([]byte, rxtime.OOBSize)
		}
	}
	for {
		n, err := t.pc.ReadBatch(msgs, 0)
		now := t.now()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) {
				t.mu.Lock()
				t.refused = err
				t.mu.Unlock()
				continue
			}
			if isTransient(err) {
				continue
			}
			t.mu.Lock()
			t.failed = fmt.Errorf("receiving echoes: %w", err)
			t.mu.Unlock()
			return
		}
		t.mu.Lock()
		for _, m := range msgs[:n] {
			at := now
			if ts, ok := rxtime.Parse(m.OOB[:m.NN]); ok {
				at = ts.Sub(t.epoch) // wall clock: the kernel's stamp has no monotonic reading
			}
			t.match(m.Buffers[0][:m.N], at)
		}
		t.mu.Unlock()
	}
}

// match books one received datagram (t.mu held).
func (t *tester) match(b []byte, at time.Duration) {
	s, ok := decodeEcho(b, t.run, t.opts.Payload)
	if ok && s.step == probeStep {
		t.probes++
		return
	}
	var st *stepState
	if ok {
		st = t.steps[stepKey{s.pass, s.step}]
	}
	if st == nil || s.seq >= st.reserved {
		t.unmatched++
		return
	}
	word, bit := s.seq/64, uint64(1)<<(s.seq%64)
	for uint32(len(st.seen)) <= word {
		st.seen = append(st.seen, 0)
	}
	if st.seen[word]&bit != 0 {
		st.dups++
		return
	}
	st.seen[word] |= bit
	st.echoes++
	if int64(s.seq) < st.maxSeq {
		st.reordered++
	} else {
		st.maxSeq = int64(s.seq)
	}
	st.rtts = append(st.rtts, at-time.Duration(s.sentNano))
	since := at - st.start
	if since >= t.opts.StepTime {
		st.late++
	}
	if since >= t.opts.WindowStart && since < t.opts.WindowEnd {
		st.inWindow++
	}
}

func (t *tester) receiverError() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

// snapshot turns a step's state into a Step (counts so far).
func (t *tester) snapshot(st *stepState) Step {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := Step{Pass: st.pass, Offered: st.offered, Start: st.start.Seconds(), Sent: st.sent, SendErrors: st.errors, Echoes: st.echoes,
		InWindow: st.inWindow, Late: st.late, Duplicates: st.dups, Reordered: st.reordered}
	if len(st.rtts) > 0 {
		r := slices.Clone(st.rtts)
		slices.Sort(r)
		s.RTTP50 = percentile(r, 0.50).Seconds() * 1e3
		s.RTTP99 = percentile(r, 0.99).Seconds() * 1e3
	}
	return s
}

// percentile of sorted durations, nearest rank.
func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// finish fills run with every step started so far, in run order.
func (t *tester) finish(run *Run) *Run {
	t.mu.Lock()
	keys := make([]stepKey, 0, len(t.steps))
	for k := range t.steps {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b stepKey) int {
		if a.pass != b.pass {
			return int(a.pass) - int(b.pass)
		}
		return int(a.step) - int(b.step)
	})
	states := make([]*stepState, len(keys))
	for i, k := range keys {
		states[i] = t.steps[k]
	}
	run.Unmatched = t.unmatched
	t.mu.Unlock()
	run.Steps = run.Steps[:0]
	for _, st := range states {
		run.Steps = append(run.Steps, t.snapshot(st))
	}
	run.derive()
	return run
}
