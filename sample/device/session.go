// SPDX-License-Identifier: Apache-2.0

// The drain session, one Session type over the line: reading it, commands
// and their retries, snapshot, drain, resume and stream runs. It stays one
// file of some 1,000 lines because its methods share the session's state
// (the current run, the pending events, the time-outs); the record store,
// which shares none of it, is recordset.go.

package device

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/tcmprof/tcmprof/sample"
	"io"
	"maps"
	"sync"
	"sync/atomic"
	"time"
)

// Timeouts bound every wait of a Session. Tests shorten them; the defaults
// suit USB CDC-ACM and UARTs from 115200 baud.
type Timeouts struct {
	// Reply is how long to wait for a command's answer, and for the next
	// frame of a drain, before asking again. It doubles on each retry of
	// the same command (at most 8×).
	Reply time.Duration
	// Retries is how often a command is sent again after a time-out, and
	// how many re-request rounds in a row may bring nothing new.
	Retries int
	// Poll is the STATUS interval while a snapshot run samples.
	Poll time.Duration
	// LogFlush is the quiet time after which log text still waiting for a
	// 0x00 is shown.
	LogFlush time.Duration
}

// DefaultTimeouts are the Timeouts of `tcmprof capture`.
func DefaultTimeouts() Timeouts {
	return Timeouts{Reply: time.Second, Retries: 5, Poll: 100 * time.Millisecond, LogFlush: 200 * time.Millisecond}
}

// DisconnectError is returned when the byte stream ends: the device was
// unplugged or reset, or the port failed.
type DisconnectError struct{ Err error }

func (e *DisconnectError) Error() string { return fmt.Sprintf("device disconnected: %v", e.Err) }
func (e *DisconnectError) Unwrap() error { return e.Err }

// IncompleteError comes with a capture whose Missing ranges are not empty.
type IncompleteError struct {
	Missing   []sample.Range
	Total     uint64 // records the capture should hold
	Resumable bool   // the device still holds them (snapshot): a resume may fetch them
	Cause     error  // what stopped the drain, or nil when re-requests ran out
}

func (e *IncompleteError) Error() string {
	var n uint64
	for _, m := range e.Missing {
		n += uint64(m.Len())
	}
	msg := fmt.Sprintf("%d of %d records missing (indices %s)", n, e.Total, sample.FormatRanges(e.Missing, 10))
	if n == 0 { // a stream that broke off between frames
		msg = fmt.Sprintf("the run broke off after %d records", e.Total)
	}
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg
}

func (e *IncompleteError) Unwrap() error { return e.Cause }

var errTimeout = errors.New("time-out")

// Session speaks the protocol over one connection. It is not safe for
// concurrent use; one goroutine reads the connection in the background.
type Session struct {
	conn       io.ReadWriteCloser
	timeouts   Timeouts
	dec        *Decoder
	in         *inbox
	readerDone chan struct{} // closed when the reader has stopped
	spare      []byte        // the buffer the inbox fills next
	pending    []Event
	lastData   time.Time // when bytes last came
	flushed    bool      // the decoder was told the line is idle since then

	// OnLog receives each line of log text from the device.
	OnLog func(line string)
	// OnProgress is told how many records of the current run have arrived,
	// and how many are expected (0 while unknown, in stream mode).
	OnProgress func(received, total uint64)
	// OnDrain is told when a drain of held records (Drain, Resume) begins,
	// with true, and when it ends, with false: a stop then means finishing
	// the drain, not ending a run.
	OnDrain func(draining bool)
	// OnRecords receives the records of each DATA frame of the current
	// run as the frame arrives (a live view aggregates them). It runs on
	// the session's goroutine and must not keep or modify the slice.
	OnRecords func(recs []sample.Record)
	// OnHeader receives every HEADER: the device's counters (taken,
	// dropped, stored) at the time it answered.
	OnHeader func(h *sample.Header)
	// StatusEvery, when positive, makes a stream run ask for the device's
	// counters (STATUS) this often, so that OnHeader sees its drops while
	// the run goes on; otherwise STATUS is sent only when the line is quiet.
	StatusEvery time.Duration

	// received carries Received's requests to the session's goroutine.
	received chan chan *sample.Capture
	// awaitingRunHeader is true from a stream run's START until its first
	// HEADER: records may arrive first, and the HEADER before START
	// describes no run, so Received requests wait in receivedWaiting.
	awaitingRunHeader bool
	receivedWaiting   []chan *sample.Capture
	// streaming tells the reader that a stream run goes (readCoalesce).
	streaming atomic.Bool

	header  *sample.Header // the last HEADER
	lastEnd *End           // the END of a stream run, once it came
	// streamTotal is the records a stream run will send, 0 when unknown.
	streamTotal uint64
	set         *recordSet
	threads     map[uint32]string
	stackTops   map[uint32]sample.StackTop
	// tableDone: an END came after the THREADS table, so the STACK_TOP
	// frames that follow the table (protocol 1.3) came too, or never will.
	tableDone bool
	retries   uint64
	rereqs    uint64
	rerecs    uint64
}

// NewSession starts reading conn. Every byte read is first written to raw
// when it is not nil, so a capture survives a decoder bug.
func NewSession(conn io.ReadWriteCloser, raw io.Writer, t Timeouts) *Session {
	s := &Session{conn: conn, timeouts: t, dec: NewDecoder(sample.FieldPC), in: newInbox(), readerDone: make(chan struct{}), received: make(chan chan *sample.Capture)}
	go s.read(raw)
	return s
}

// inbox holds the bytes the reader has read and the session has not
// taken yet, as many as there are, so that the reader never waits for the
// session. While the session writes a command, the device may be writing
// too (the answers to earlier ones); a device that cannot write does not
// read, and a session that waited for it to read while its reader waited
// for the session would wait for ever. A session that is busy takes all
// that came meanwhile at once, and nobody wakes it for each read.
type inbox struct {
	mu     sync.Mutex
	held   []byte
	err    error // why reading ended; set once, with ended
	ended  bool
	arrive chan struct{} // holds a token while there is news to take
}

func newInbox() *inbox { return &inbox{arrive: make(chan struct{}, 1)} }

func (b *inbox) put(p []byte) {
	b.mu.Lock()
	b.held = append(b.held, p...)
	b.mu.Unlock()
	b.notify()
}

func (b *inbox) end(err error) {
	b.mu.Lock()
	b.err, b.ended = err, true
	b.mu.Unlock()
	b.notify()
}

func (b *inbox) notify() {
	select {
	case b.arrive <- struct{}{}:
	default: // a token is already there
	}
}

// take returns the bytes held, handing spare over to hold the next ones
// (the caller is done with it), and whether reading has ended and why.
func (b *inbox) take(spare []byte) (held []byte, ended bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	held, b.held = b.held, spare[:0]
	return held, b.ended, b.err
}

func (s *Session) read(raw io.Writer) {
	defer close(s.readerDone)
	buf := make([]byte, readSize)
	for {
		n, err := s.conn.Read(buf)
		if n > 0 {
			if raw != nil {
				if _, werr := raw.Write(buf[:n]); werr != nil {
					s.in.end(fmt.Errorf("writing the raw byte log: %w", werr))
					return
				}
			}
			s.in.put(buf[:n])
		}
		if err != nil {
			s.in.end(err)
			return
		}
		if n < readFull && s.streaming.Load() {
			time.Sleep(readCoalesce)
		}
	}
}

// readSize is what the reader asks for. A tty hands over at most what its
// line discipline buffers, 4 KB less a byte; a read of readFull or more
// emptied a buffer that may have filled, so the next read comes at once.
const (
	readSize = 4096
	readFull = readSize * 7 / 8
)

// readCoalesce is how long the reader waits after a read that did not fill
// its buffer, while a stream run goes, before it reads again. A stream
// trickles in small frames (at 100 kHz, PC+LR, about a thousand a second,
// each its own read): waiting lets the kernel gather them, so the host
// wakes about a hundred times a second instead of a thousand, and each
// wake-up, not the decoding, is what a fast stream costs it. The bytes
// wait at most this long; a reply is handed on at once (the wait is after
// it). That stream brings about 5 KB in the wait: the tty hands over its
// 4 KB and the next read, at once, the rest; meanwhile a CDC-ACM driver
// holds back (throttles) and the device's ring (82 ms of that stream on
// the demo) keeps the samples. Drains, which burst, are not slowed.
const readCoalesce = 10 * time.Millisecond

// Close closes the connection and waits for the reader to stop.
func (s *Session) Close() error {
	err := s.conn.Close()
	<-s.readerDone
	return err
}

// Stats returns the decoder's counts plus the session's retries.
func (s *Session) Stats() sample.DecodeStats {
	st := s.dec.Stats()
	st.Retries, st.Rerequests, st.Rerequested = s.retries, s.rereqs, s.rerecs
	return st
}

// queue hands log lines to OnLog at once and keeps the other events for
// next. Lines go out as they are decoded, not when a frame after them is
// read: the last lines of a run (counted in the decoder's stats) would
// otherwise never be shown once the run has its last frame.
func (s *Session) queue(evs []Event) {
	for _, ev := range evs {
		if ev.Log != "" {
			if s.OnLog != nil {
				s.OnLog(ev.Log)
			}
			continue
		}
		s.pending = append(s.pending, ev)
	}
}

// timeout is how long next waits: until at, and, when extend is positive,
// until extend after the last frame delimiter (0x00) that arrived. A device
// that is still sending frames, even damaged ones, is still answering: on a
// busy host, or from an emulator, answers take longer than on an idle one,
// and a host that asked again meanwhile would only queue more answers
// behind the late ones. Log text, which has no 0x00, does not count: a
// chatty firmware must not keep a lost command from being sent again.
type timeout struct {
	at     time.Time
	extend time.Duration
}

// after is a timeout d from now that frames arriving extend.
func after(d time.Duration) *timeout {
	return &timeout{at: time.Now().Add(d), extend: d}
}

// next returns the next frame, waiting as long as to says. DATA and
// THREADS frames are also collected into the current run, whoever waits.
func (s *Session) next(ctx context.Context, to *timeout) (Frame, error) {
	for {
		for len(s.pending) > 0 {
			ev := s.pending[0]
			s.pending = s.pending[1:]
			switch {
			case ev.Err != nil:
				if errors.Is(ev.Err, ErrNewerProtocol) {
					return nil, ev.Err
				}
			case ev.Frame != nil:
				s.collect(ev.Frame)
				return ev.Frame, nil
			}
		}
		now := time.Now()
		if !now.Before(to.at) {
			return nil, errTimeout
		}
		wait := to.at.Sub(now)
		if !s.flushed && s.timeouts.LogFlush > 0 {
			flushAt := s.lastData.Add(s.timeouts.LogFlush)
			if !now.Before(flushAt) {
				s.queue(s.dec.Idle())
				s.flushed = true
				continue
			}
			wait = min(wait, flushAt.Sub(now))
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, context.Cause(ctx)
		case reply := <-s.received:
			timer.Stop()
			if s.awaitingRunHeader {
				s.receivedWaiting = append(s.receivedWaiting, reply)
				continue
			}
			reply <- s.receivedSoFar()
		case <-s.in.arrive:
			timer.Stop()
			c, ended, err := s.in.take(s.spare)
			s.spare = c
			if len(c) > 0 {
				s.lastData, s.flushed = time.Now(), false
				if to.extend > 0 && bytes.IndexByte(c, 0) >= 0 {
					to.at = s.lastData.Add(to.extend)
				}
				s.queue(s.dec.Feed(c))
			}
			if ended {
				s.in.notify() // the end stays news: for the frames still pending, and for every later wait
				if len(s.pending) > 0 {
					continue
				}
				return nil, &DisconnectError{err}
			}
		case <-timer.C:
		}
	}
}

func (s *Session) collect(f Frame) {
	switch f := f.(type) {
	case *HeaderFrame:
		s.header = &f.Header
		if f.State != sample.StateIdle {
			s.answerReceived()
		}
		if s.OnHeader != nil {
			s.OnHeader(&f.Header)
		}
	case *Data:
		if s.set != nil {
			if s.OnRecords != nil {
				s.OnRecords(f.Records)
			}
			for _, r := range f.Records {
				s.set.add(r)
			}
			if s.OnProgress != nil {
				total := uint64(s.set.want.Len())
				if s.set.grow {
					total = s.streamTotal
				}
				s.OnProgress(s.set.received, total)
			}
		}
	case *End:
		if f.Reason == EndStreamStopped {
			s.lastEnd = f
		}
	case *Threads:
		if s.threads == nil {
			s.threads = map[uint32]string{}
		}
		for _, t := range f.Entries {
			s.threads[t.ID] = t.Name
		}
	case *StackTopFrame:
		if s.stackTops == nil {
			s.stackTops = map[uint32]sample.StackTop{}
		}
		s.stackTops[f.Thread] = f.StackTop
	}
	if _, ok := f.(*End); ok && s.threads != nil {
		s.tableDone = true
	}
}

func (s *Session) send(f Frame) error {
	b, err := EncodeFrame(f)
	if err != nil {
		return err
	}
	if _, err := s.conn.Write(b); err != nil {
		return &DisconnectError{err}
	}
	return nil
}

// replyWait is the answer time-out of a command's attempt-th try.
func (s *Session) replyWait(attempt int) time.Duration {
	return s.timeouts.Reply << min(attempt, 3)
}

// command sends cmd until match accepts a frame, at most 1+Retries times.
func (s *Session) command(ctx context.Context, cmd Frame, match func(f Frame, attempt int) (bool, error)) (Frame, error) {
	for attempt := 0; ; attempt++ {
		if err := s.send(cmd); err != nil {
			return nil, err
		}
		to := after(s.replyWait(attempt))
		if s.streaming.Load() {
			// A stream's frames keep coming whether or not the device
			// heard the command.
			to.extend = 0
		}
		for {
			f, err := s.next(ctx, to)
			if err == errTimeout {
				break
			}
			if err != nil {
				return nil, err
			}
			if ok, err := match(f, attempt); ok || err != nil {
				return f, err
			}
		}
		if attempt == s.timeouts.Retries {
			err := fmt.Errorf("no answer to %v after %d tries", cmd.Type(), attempt+1)
			// Not one frame yet: most likely not the sampler's port (the
			// console next to it, another device) or no sampler built in.
			if st := s.dec.Stats(); st.Frames == 0 {
				return nil, fmt.Errorf("%w, and no sampler frame at all (%d bytes received, %d log lines): is this the sampler's port, not the console, and the sampler in the firmware?",
					err, st.Bytes, st.LogLines)
			}
			return nil, err
		}
		s.retries++
	}
}

// replyTo matches the REPLY to a command type.
func replyTo(t FrameType, f Frame) (*Reply, bool) {
	r, ok := f.(*Reply)
	if !ok || r.Command != t {
		return nil, false
	}
	return r, true
}

// Status asks for the device's HEADER.
func (s *Session) Status(ctx context.Context) (*sample.Header, error) {
	f, err := s.command(ctx, &Status{}, func(f Frame, _ int) (bool, error) {
		_, ok := f.(*HeaderFrame)
		return ok, nil
	})
	if err != nil {
		return nil, err
	}
	return &f.(*HeaderFrame).Header, nil
}

// Start starts a run. A device that already runs or holds records is left
// alone: its records may be a capture nobody drained yet.
func (s *Session) Start(ctx context.Context, st Start) error {
	h, err := s.Status(ctx)
	if err != nil {
		return err
	}
	if h.State != sample.StateIdle {
		return fmt.Errorf("the sampler is %v with %d records of an earlier %v run; drain them with --attach first", h.State, h.Stored-h.HeldFrom, h.Mode)
	}
	// A 1.2 device codes records the 1.2 way when asked, a 1.4 device
	// the 1.4 way; an older one ignores the byte. A stream's first DATA
	// may come before any HEADER, so the decoder is told which to expect
	// now.
	st.Coding = sample.CodingV10
	switch {
	case h.ProtoMinor >= 4:
		st.Coding = sample.CodingV14
	case h.ProtoMinor >= 2:
		st.Coding = sample.CodingV12
	}
	s.dec.SetFields(st.Fields)
	s.dec.SetCoding(st.Coding)
	_, err = s.command(ctx, &st, func(f Frame, attempt int) (bool, error) {
		r, ok := replyTo(TypeStart, f)
		switch {
		case !ok:
			return false, nil
		case r.Status == StatusOK, r.Status == StatusBusy && attempt > 0: // BUSY: an earlier try got through
			return true, nil
		case r.Status == StatusBadArg:
			return true, badStart(&st)
		}
		return true, fmt.Errorf("the sampler answered START with %v", r.Status)
	})
	return err
}

// badStart says why a device refused a START the host found valid: the
// host checks everything but the limits the device was built with, its
// sampling rate (with the jitter, the intervals it may time) and whether
// it copies stacks.
func badStart(st *Start) error {
	rate := fmt.Sprintf("rate %d Hz", st.RateHz)
	if st.RateHz == 0 {
		rate = "its default rate"
	}
	msg := fmt.Sprintf("the sampler refused START (BAD_ARG): %s with jitter %d %% is outside the intervals it was built for (a Zephyr build takes at most CONFIG_TCMPROF_SAMPLER_MAX_RATE_HZ, %d Hz unless configured)",
		rate, st.JitterPct, DefaultMaxRateHz)
	if st.Fields&sample.FieldStack != 0 {
		msg += ", or it was built without stack copies"
	}
	return errors.New(msg)
}

// Stop ends a run.
func (s *Session) Stop(ctx context.Context) error {
	_, err := s.command(ctx, &Stop{}, func(f Frame, _ int) (bool, error) {
		_, ok := replyTo(TypeStop, f)
		return ok, nil
	})
	return err
}

// Done releases the records the device holds; call it once the capture
// is saved.
func (s *Session) Done(ctx context.Context) error {
	_, err := s.command(ctx, &Done{}, func(f Frame, _ int) (bool, error) {
		r, ok := replyTo(TypeDone, f)
		if ok && r.Status != StatusOK {
			return true, fmt.Errorf("the sampler answered DONE with %v", r.Status)
		}
		return ok, nil
	})
	return err
}

// SnapshotWait is how long a snapshot run with these settings should take
// on a device that reports h, plus a margin: the count (or the capacity),
// at the mean rate, or the duration when that is shorter. A run that has
// taken no sample for that long is stuck (Snapshot stops it).
func SnapshotWait(h *sample.Header, st Start) time.Duration {
	samples := h.Capacity
	if st.Count > 0 {
		samples = min(samples, st.Count)
	}
	var d time.Duration
	if h.TimerHz > 0 && h.IntervalTicks > 0 {
		d = time.Duration(float64(samples) * float64(h.IntervalTicks) / float64(h.TimerHz) * float64(time.Second))
	}
	if st.DurationMS > 0 {
		if byDuration := time.Duration(st.DurationMS) * time.Millisecond; d == 0 || byDuration < d {
			d = byDuration
		}
	}
	return d + d/4 + 2*time.Second
}

// Snapshot starts a snapshot run, waits until the device holds it, and
// drains it (see Drain; the caller sends DONE). The host sends STOP when
// stop is closed, or when the run has taken no sample for maxWait (0 means
// SnapshotWait): a run that still takes samples ends by itself (its count,
// duration or full buffer), however slowly the device goes — an emulator
// on a busy host samples at its instructions' pace, not the wall clock's.
func (s *Session) Snapshot(ctx context.Context, st Start, maxWait time.Duration, stop <-chan struct{}) (*sample.Capture, error) {
	st.Mode = sample.ModeSnapshot
	if err := s.Start(ctx, st); err != nil {
		return nil, err
	}
	h, err := s.waitHolding(ctx, st, maxWait, stop)
	if err != nil {
		return nil, err
	}
	return s.Drain(ctx, h)
}

// Attach drains whatever the device holds without starting a run: a held
// snapshot, a snapshot still running (after it ends), or a stream run in
// progress (until it ends or stop is closed).
func (s *Session) Attach(ctx context.Context, stop <-chan struct{}) (*sample.Capture, error) {
	h, err := s.Status(ctx)
	if err != nil {
		return nil, err
	}
	switch {
	case h.State == sample.StateIdle:
		return nil, errors.New("the sampler holds no records (state idle); start a run without --attach")
	case h.State == sample.StateRunning && h.Mode == sample.ModeStream:
		s.set, s.lastEnd, s.streamTotal = nil, nil, 0
		s.resetTable(nil, nil)
		return s.stream(ctx, h, stop, 0)
	case h.State == sample.StateRunning:
		if h, err = s.waitHolding(ctx, Start{Fields: h.Fields}, 0, stop); err != nil {
			return nil, err
		}
	}
	return s.Drain(ctx, h)
}

func (s *Session) waitHolding(ctx context.Context, st Start, maxWait time.Duration, stop <-chan struct{}) (*sample.Header, error) {
	h, err := s.Status(ctx)
	if err != nil {
		return nil, err
	}
	if maxWait == 0 {
		maxWait = SnapshotWait(h, st)
	}
	// deadline moves on with every sample the device takes.
	deadline, taken := time.Now().Add(maxWait), h.Taken
	stopped := false
	for h.State == sample.StateRunning {
		if !stopped && h.Taken != taken {
			deadline, taken = time.Now().Add(maxWait), h.Taken
		}
		if !stopped && (time.Now().After(deadline) || isClosed(stop)) {
			if err := s.Stop(ctx); err != nil {
				return nil, err
			}
			stopped = true
			deadline = time.Now().Add(s.replyWait(s.timeouts.Retries))
		} else if stopped && time.Now().After(deadline) {
			return nil, errors.New("the sampler still runs after STOP")
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-stop:
		case <-time.After(s.timeouts.Poll):
		}
		if h, err = s.Status(ctx); err != nil {
			return nil, err
		}
	}
	if h.State != sample.StateHolding {
		return nil, fmt.Errorf("the snapshot run ended in state %v without holding records", h.State)
	}
	return h, nil
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Drain fetches the records the device holds (as h reports them) and
// re-requests what did not arrive. When records are still missing it
// returns the capture together with an *IncompleteError. It does not send
// DONE: save the capture first, then call Done, so that a failed write
// loses nothing the device still holds.
func (s *Session) Drain(ctx context.Context, h *sample.Header) (*sample.Capture, error) {
	want := sample.Range{Start: h.HeldFrom, End: h.Stored}
	s.set = newRecordSet(want)
	s.resetTable(nil, nil)
	s.header = h
	s.dec.Follow(h)
	return s.fetch(ctx, want, false)
}

// Resume fetches the missing records of c from a device that still holds
// its run, and returns c completed (or still with Missing, and an
// *IncompleteError). It refuses a device that holds a different run.
func (s *Session) Resume(ctx context.Context, c *sample.Capture) (*sample.Capture, error) {
	h, err := s.Status(ctx)
	if err != nil {
		return nil, err
	}
	ch := &c.Header
	switch {
	case len(c.Missing) == 0:
		return nil, errors.New("the capture misses no records")
	case h.State != sample.StateHolding:
		return nil, fmt.Errorf("the sampler no longer holds the run (state %v)", h.State)
	case string(h.BuildID) != string(ch.BuildID) || h.Taken != ch.Taken || h.Stored != ch.Stored || h.Fields != ch.Fields:
		return nil, fmt.Errorf("the sampler holds a different run (stored %d, taken %d, fields %v; the capture has %d, %d, %v)",
			h.Stored, h.Taken, h.Fields, ch.Stored, ch.Taken, ch.Fields)
	case h.HeldFrom > c.Missing[0].Start:
		return nil, fmt.Errorf("the sampler no longer holds records before %d", h.HeldFrom)
	}
	want := c.Span()
	s.set = newRecordSet(want)
	for _, r := range c.Records {
		s.set.add(r)
	}
	s.resetTable(c.Threads, c.StackTops)
	s.header = h
	s.dec.Follow(h)
	s.retries, s.rereqs, s.rerecs = c.Stats.Retries, c.Stats.Rerequests, c.Stats.Rerequested
	out, err := s.fetch(ctx, want, true)
	if out != nil {
		prev := c.Stats
		st := out.Stats
		st.Bytes += prev.Bytes
		st.Frames += prev.Frames
		st.CRCErrors += prev.CRCErrors
		st.BadFrames += prev.BadFrames
		st.GarbageBytes += prev.GarbageBytes
		st.LogLines += prev.LogLines
		out.Stats = st
		out.Host = c.Host
	}
	return out, err
}

// Re-request sizing: a round asks again for each missing range in requests
// of at most chunk records. On a noisy line a big DATA frame rarely
// arrives intact, so the chunk shrinks when a round recovers less than
// half of what it asked for, and grows back when almost everything came.
// It may shrink to one record: a record with a stack snapshot can take
// a hundred bytes, as much as a dozen PC records.
const (
	maxChunk = 4096
	minChunk = 1
	// rangeMergeGap: missing ranges closer than this are asked for in one
	// request; a few records sent twice cost less than a round trip.
	rangeMergeGap = 16
)

// fetch drains want in rounds: the first asks for everything, each later
// one for what is still missing, until nothing is missing or Retries
// rounds in a row bring nothing new.
func (s *Session) fetch(ctx context.Context, want sample.Range, resuming bool) (*sample.Capture, error) {
	if s.OnDrain != nil {
		s.OnDrain(true)
		defer s.OnDrain(false)
	}
	var cause error
	chunk := uint32(maxChunk)
	idle := 0
	first := !resuming
	for idle <= s.timeouts.Retries {
		missing := mergeRanges(s.set.missing(), min(rangeMergeGap, chunk))
		if len(missing) == 0 {
			if !s.needThreads() || want.Len() == 0 {
				break
			}
			// Every record came but the thread table never did: a
			// one-record DRAIN brings it again.
			missing = []sample.Range{{Start: want.Start, End: want.Start + 1}}
		}
		var reqs []sample.Range
		for _, m := range missing {
			for from := m.Start; from < m.End; {
				n := min(m.End-from, chunk)
				if first {
					n = m.Len() // the first request is the whole range in one DRAIN
				} else {
					s.rereqs++
					s.rerecs += uint64(n)
				}
				reqs = append(reqs, sample.Range{Start: from, End: from + n})
				from += n
			}
		}
		first = false
		before, threadsBefore := s.set.received, s.needThreads()
		if cause = s.drainRanges(ctx, reqs, idle); cause != nil {
			break
		}
		var asked uint64
		for _, r := range reqs {
			asked += uint64(r.Len())
		}
		got := s.set.received - before
		if got == 0 && threadsBefore == s.needThreads() {
			idle++
		} else {
			idle = 0
		}
		switch {
		case got*2 < asked:
			// Shrink at least 4×, and to the size that arrived whole.
			chunk = max(min(chunk/4, uint32(uint64(chunk)*got/asked)), minChunk)
		case got*10 >= asked*9:
			chunk = min(chunk*2, maxChunk)
		}
	}
	c := s.capture()
	if len(c.Missing) > 0 {
		resumable := c.Header.Mode == sample.ModeSnapshot && !errors.Is(cause, errUnavailable)
		return c, &IncompleteError{Missing: c.Missing, Total: uint64(want.Len()), Resumable: resumable, Cause: cause}
	}
	return c, nil
}

var errUnavailable = errors.New("the sampler no longer holds those records (UNAVAILABLE)")

// pipelineDepth is how many DRAINs may be outstanding. The device answers
// them in order, so a lost END costs no time-out while later answers come;
// a device whose input overflows just loses a command, which times out.
const pipelineDepth = 4

// drainRanges sends a DRAIN for each range, keeping up to pipelineDepth
// outstanding, and reads the answers. A request is finished by its END,
// by all its records, or by an answer to a later request; the round ends
// when every request is finished or the line stays quiet too long. It
// returns only errors that end the drain (not time-outs).
func (s *Session) drainRanges(ctx context.Context, reqs []sample.Range, attempt int) error {
	wait := s.replyWait(attempt)
	var inflight []sample.Range
	// retire finishes the outstanding requests up to and including i.
	retire := func(i int) { inflight = inflight[i+1:] }
	threadsNeeded := s.needThreads()
	for len(reqs) > 0 || len(inflight) > 0 {
		for len(reqs) > 0 && len(inflight) < pipelineDepth {
			if err := s.send(&Drain{From: reqs[0].Start, Count: reqs[0].Len()}); err != nil {
				return err
			}
			inflight = append(inflight, reqs[0])
			reqs = reqs[1:]
		}
		f, err := s.next(ctx, after(wait))
		if err == errTimeout {
			inflight = nil // lost: what is still missing goes into the next round
			continue
		}
		if err != nil {
			return err
		}
		threadsNeeded = threadsNeeded && s.needThreads()
		switch f := f.(type) {
		case *End:
			for i, r := range inflight {
				if f.First == r.Start {
					retire(i)
					break
				}
			}
		case *Data:
			for i, r := range inflight {
				if f.First >= r.Start && f.First < r.End {
					if i > 0 {
						retire(i - 1) // answers come in order: the earlier ones are over
					}
					break
				}
			}
		case *Reply:
			if f.Command == TypeDrain && len(inflight) > 0 {
				switch f.Status {
				case StatusUnavailable:
					return errUnavailable
				case StatusBusy:
					return errors.New("the sampler is still sampling (BUSY)")
				}
				retire(0)
			}
		}
		for len(inflight) > 0 && !threadsNeeded && s.set.hasAll(inflight[0]) {
			retire(0)
		}
	}
	return nil
}

// needThreads says the run records threads and no THREADS frame came
// yet, or, in a run with stacks too, the END after it did not, so the
// STACK_TOP frames between them may still be on their way.
func (s *Session) needThreads() bool {
	f := s.header.Fields
	return f&sample.FieldThread != 0 && (s.threads == nil || f&sample.FieldStack != 0 && !s.tableDone)
}

// resetTable starts a run's thread table and stack tops: empty, or those of
// a capture being resumed (which has them all when it has a table).
func (s *Session) resetTable(threads map[uint32]string, tops map[uint32]sample.StackTop) {
	s.threads, s.stackTops, s.tableDone = threads, tops, threads != nil
}

// Received returns the current run as it has arrived so far: its records,
// the gaps between them, and the counters of the last HEADER (for a live
// view that saves what it has shown). Unlike the other methods it may be
// called from any goroutine while Stream, Attach or a drain runs; the
// session answers while it waits for the connection, which it does at
// least every Timeouts.Reply. ctx bounds the wait; without a run in
// progress nothing answers until it ends.
func (s *Session) Received(ctx context.Context) (*sample.Capture, error) {
	reply := make(chan *sample.Capture, 1)
	select {
	case s.received <- reply:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	select {
	case c := <-reply:
		if c == nil {
			return nil, errors.New("no run in progress")
		}
		return c, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// answerReceived ends the wait for a run's first HEADER and answers the
// Received requests made meanwhile.
func (s *Session) answerReceived() {
	s.awaitingRunHeader = false
	for _, reply := range s.receivedWaiting {
		reply <- s.receivedSoFar()
	}
	s.receivedWaiting = nil
}

// receivedSoFar is Received's answer, made on the session's goroutine: a
// copy that the session's later frames do not touch.
func (s *Session) receivedSoFar() *sample.Capture {
	if s.set == nil || s.header == nil {
		return nil
	}
	c := s.capture()
	c.Threads = maps.Clone(c.Threads)
	c.StackTops = maps.Clone(c.StackTops)
	return c
}

// capture assembles what arrived.
func (s *Session) capture() *sample.Capture {
	h := *s.header
	c := &sample.Capture{Header: h, Records: s.set.records(), Missing: s.set.missing(), Stats: s.Stats()}
	if len(s.threads) > 0 {
		c.Threads = s.threads
	}
	if len(s.stackTops) > 0 {
		c.StackTops = s.stackTops
	}
	return c
}

// Stream starts a stream run and receives its records until it ends: by
// the device (count or duration), or by STOP when stop is closed or
// maxDuration passes (0 = no limit).
func (s *Session) Stream(ctx context.Context, st Start, maxDuration time.Duration, stop <-chan struct{}) (*sample.Capture, error) {
	st.Mode = sample.ModeStream
	s.set = newRecordSet(sample.Range{Start: 0, End: 0})
	s.set.grow = true
	s.resetTable(nil, nil)
	s.lastEnd = nil
	s.streamTotal = uint64(st.Count)
	if err := s.Start(ctx, st); err != nil {
		return nil, err
	}
	s.awaitingRunHeader = true
	defer s.answerReceived() // a run that ended before any HEADER
	h, err := s.Status(ctx)
	if err != nil {
		return nil, err
	}
	return s.stream(ctx, h, stop, maxDuration)
}

func (s *Session) stream(ctx context.Context, h *sample.Header, stop <-chan struct{}, maxDuration time.Duration) (*sample.Capture, error) {
	if s.set == nil || !s.set.grow {
		// Attaching to a run: its HEADER says what its records hold and
		// how they are coded. A run Stream started keeps START's: under
		// load the STATUS after START may be answered by a late copy of
		// the HEADER before it, which describes the idle device.
		s.set = newRecordSet(sample.Range{Start: h.HeldFrom, End: h.HeldFrom})
		s.set.grow = true
		s.dec.Follow(h)
	}
	s.streaming.Store(true)
	defer s.streaming.Store(false)
	final := *h
	var stopAt time.Time
	if maxDuration > 0 {
		stopAt = time.Now().Add(maxDuration)
	}
	stopped := false
	var cause error
	nextStatus := time.Now().Add(s.StatusEvery)
	for s.lastEnd == nil {
		if !stopped && (isClosed(stop) || !stopAt.IsZero() && time.Now().After(stopAt)) {
			stopped = true
			if cause = s.Stop(ctx); cause != nil {
				break
			}
			continue
		}
		wait := s.timeouts.Reply
		if !stopAt.IsZero() && !stopped {
			wait = min(wait, time.Until(stopAt)+time.Millisecond)
		}
		statusDue := s.StatusEvery > 0 && !stopped
		if statusDue {
			wait = min(wait, time.Until(nextStatus))
		}
		_, err := s.next(ctx, &timeout{at: time.Now().Add(wait)})
		if err != nil && err != errTimeout {
			cause = err
			break
		}
		if statusDue && !time.Now().Before(nextStatus) || err == errTimeout && (stopAt.IsZero() || stopped || !time.Now().After(stopAt)) {
			// Counters are due, or the line is quiet: at a low rate DATA
			// comes seldom. Either way ask whether the run still goes; if
			// it ended and its END was lost, the HEADER has the final
			// counters.
			h, err := s.Status(ctx)
			if err != nil {
				cause = err
				break
			}
			nextStatus = time.Now().Add(s.StatusEvery)
			final.Taken, final.Dropped, final.Stored = h.Taken, h.Dropped, h.Stored
			if h.State != sample.StateRunning {
				break
			}
		}
	}
	final.State = sample.StateIdle
	switch e := s.lastEnd; {
	case e != nil:
		final.Taken, final.Dropped, final.Stored = e.Taken, e.Dropped, e.Stored
		s.set.extendTo(e.Next)
	case cause == nil:
		s.set.extendTo(final.Stored)
	default:
		// The run broke off: the last HEADER may be older than the last
		// records, and the device stored at least what arrived.
		final.Stored = max(final.Stored, s.set.want.End)
		final.Taken = max(final.Taken, final.Stored+final.Dropped)
	}
	s.header = &final
	c := s.capture()
	if len(c.Missing) > 0 || cause != nil {
		return c, &IncompleteError{Missing: c.Missing, Total: uint64(s.set.want.Len()), Cause: cause}
	}
	return c, nil
}

// mergeRanges joins ranges whose gap is below gap.
func mergeRanges(rs []sample.Range, gap uint32) []sample.Range {
	var out []sample.Range
	for _, r := range rs {
		if n := len(out); n > 0 && r.Start-out[n-1].End < gap {
			out[n-1].End = r.End
			continue
		}
		out = append(out, r)
	}
	return out
}
