// SPDX-License-Identifier: Apache-2.0

// The tests of session.go (one file; its header says why), some 600 lines,
// each against devicetest's scripted device: commands and retries,
// snapshot, drain, resume and stream runs, and the line's faults.

package device_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tcmprof/tcmprof/sample"
	"github.com/tcmprof/tcmprof/sample/device"
	"github.com/tcmprof/tcmprof/sample/device/devicetest"
)

func newDevice(capacity uint32, faults devicetest.Faults) *devicetest.Device {
	return &devicetest.Device{
		Capacity: capacity, CPUHz: 600_000_000, TimerHz: 24_000_000, DefaultRateHz: 10_000, MaxRateHz: 100_000,
		BuildID: []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		Threads: []device.Thread{{ID: 0x20001000, Name: "main"}, {ID: 0x20001100, Name: "idle"}},
		Seed:    42, RunTime: 20 * time.Millisecond, StreamBatch: 128, StreamPeriod: 2 * time.Millisecond,
		Faults: faults,
	}
}

func openSession(t testing.TB, d *devicetest.Device, to device.Timeouts) (*device.Session, <-chan error) {
	t.Helper()
	path, slave, served := devicetest.ServePty(t, d)
	p, err := device.OpenPort(path, 115200)
	if err != nil {
		t.Fatal(err)
	}
	slave.Close() // the serial port keeps the pty open now
	s := device.NewSession(p, nil, to)
	t.Cleanup(func() { s.Close() })
	return s, served
}

// fastTimeouts keep the tests short: a lost command is asked again after
// 50 ms. On a loaded machine an answer can miss that window several times
// in a row (seen once in a CI run: a record given up after 8 tries), so
// the tries are many; they cost nothing while answers come in time.
func fastTimeouts() device.Timeouts {
	return device.Timeouts{Reply: 50 * time.Millisecond, Retries: 20, Poll: 5 * time.Millisecond, LogFlush: 10 * time.Millisecond}
}

// checkTruth compares every record of c with the device's ground truth.
func checkTruth(t *testing.T, d *devicetest.Device, c *sample.Capture) {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Records {
		if want := d.Record(r.Index); !reflect.DeepEqual(r, want) {
			t.Fatalf("record %d = %+v, device sent %+v", r.Index, r, want)
		}
	}
}

func TestSnapshotCleanLine(t *testing.T) {
	for _, fields := range []sample.Fields{sample.FieldPC, sample.FieldPC | sample.FieldLR, sample.FieldPC | sample.FieldLR | sample.FieldExc | sample.FieldThread,
		sample.FieldPC | sample.FieldLR | sample.FieldExc | sample.FieldThread | sample.FieldStack} {
		t.Run(fields.String(), func(t *testing.T) {
			d := newDevice(4096, devicetest.Faults{})
			s, _ := openSession(t, d, fastTimeouts())
			c, err := s.Snapshot(context.Background(), device.Start{RateHz: 20000, Fields: fields, StackWords: 24}, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Records) != 4096 || len(c.Missing) != 0 || c.Header.Stored != 4096 || c.Header.Fields != fields {
				t.Fatalf("%d records, missing %v, header %+v", len(c.Records), c.Missing, c.Header)
			}
			checkTruth(t, d, c)
			if fields&sample.FieldThread != 0 && !reflect.DeepEqual(c.Threads, map[uint32]string{0x20001000: "main", 0x20001100: "idle"}) {
				t.Errorf("threads %v", c.Threads)
			}
			st := c.Stats
			if st.CRCErrors+st.BadFrames+st.GarbageBytes != 0 {
				t.Errorf("errors on a clean line: %+v", st)
			}
			// The device holds the run until DONE.
			if h, err := s.Status(context.Background()); err != nil || h.State != sample.StateHolding {
				t.Errorf("after the drain the device is %v (%v); want holding until DONE", h.State, err)
			}
			if err := s.Done(context.Background()); err != nil {
				t.Fatal(err)
			}
			if h, err := s.Status(context.Background()); err != nil || h.State != sample.StateIdle {
				t.Errorf("after DONE the device is %v (%v); want idle", h.State, err)
			}
		})
	}
}

// The acceptance test of the transport: 1 % of the bytes corrupted, log
// text between and inside frames, writes split at random offsets and
// corrupted commands. Every record must arrive, equal to what the device
// sent, and every damaged frame must have been noticed and re-requested.
func TestSnapshotNoisyLine(t *testing.T) {
	d := newDevice(4096, devicetest.Faults{Seed: 7, CorruptOut: 0.01, CorruptIn: 0.01, LogBetween: 0.1, LogInside: 0.05, MaxChunk: 7})
	s, _ := openSession(t, d, fastTimeouts())
	var logs int
	s.OnLog = func(string) { logs++ }
	c, err := s.Snapshot(context.Background(), device.Start{Fields: sample.FieldPC | sample.FieldLR}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Records) != 4096 || len(c.Missing) != 0 {
		t.Fatalf("%d records, missing %v", len(c.Records), c.Missing)
	}
	checkTruth(t, d, c)
	damaged := d.Damaged()
	var damagedRecs uint64
	for _, r := range damaged {
		damagedRecs += uint64(r.Len())
	}
	st := c.Stats
	t.Logf("damaged DATA frames %d (%d records); stats %+v; device log lines %d, host %d", len(damaged), damagedRecs, st, d.LogLines(), logs)
	if len(damaged) == 0 || st.CRCErrors+st.GarbageBytes == 0 {
		t.Fatal("the fault injection damaged nothing, or the host noticed nothing")
	}
	// Each damaged DATA frame's records were asked for again.
	if st.Rerequested < damagedRecs/2 || st.Rerequests == 0 {
		t.Errorf("re-requested %d records in %d DRAINs for %d damaged records", st.Rerequested, st.Rerequests, damagedRecs)
	}
	if logs == 0 || uint64(logs) != st.LogLines {
		t.Errorf("host saw %d log lines, counted %d", logs, st.LogLines)
	}
}

// Records with stacks are 10 to 200 bytes, and a DRAIN of one record codes
// its stack against nothing: re-requests shrink to single records, which
// arrive through a line that damages one byte in 300.
func TestSnapshotNoisyLineWithStacks(t *testing.T) {
	d := newDevice(2048, devicetest.Faults{Seed: 3, CorruptOut: 0.003, CorruptIn: 0.003, LogBetween: 0.1, MaxChunk: 7})
	s, _ := openSession(t, d, fastTimeouts())
	c, err := s.Snapshot(context.Background(), device.Start{Fields: sample.FieldPC | sample.FieldLR | sample.FieldStack}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Records) != 2048 || len(c.Missing) != 0 || c.Header.StackWords != device.DefaultStackWords {
		t.Fatalf("%d records, missing %v, %d stack words", len(c.Records), c.Missing, c.Header.StackWords)
	}
	checkTruth(t, d, c)
	if st := c.Stats; len(d.Damaged()) == 0 || st.Rerequests == 0 {
		t.Fatalf("nothing was damaged or asked for again: %+v", st)
	}
}

func TestSnapshotCleanLogLinesAllShown(t *testing.T) {
	d := newDevice(2048, devicetest.Faults{Seed: 3, LogBetween: 0.3, MaxChunk: 3})
	s, _ := openSession(t, d, fastTimeouts())
	var logs []string
	s.OnLog = func(l string) { logs = append(logs, l) }
	c, err := s.Snapshot(context.Background(), device.Start{Fields: sample.FieldPC}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkTruth(t, d, c)
	if err := s.Done(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !sawAllLogLines(t, s, d, func() int { return len(logs) }) || logs[0] != "<inf> app: between frames" {
		t.Errorf("host saw %d log lines (%q...), device sent %d", len(logs), logs[:min(1, len(logs))], d.LogLines())
	}
}

// sawAllLogLines says whether the host has shown every log line the device
// sent. The device may still be answering commands the host sent again
// (on a busy host a 50 ms time-out passes now and then), each answer maybe
// after a line; a STATUS's HEADER comes after all of them and the lines
// before it, so the counts are compared after a STATUS, until they agree,
// or a line is lost (the host's count then never catches up).
func sawAllLogLines(t *testing.T, s *device.Session, d *devicetest.Device, shown func() int) bool {
	t.Helper()
	for range 10 {
		if _, err := s.Status(context.Background()); err != nil {
			t.Fatal(err)
		}
		if shown() == d.LogLines() {
			return true
		}
	}
	return false
}

// A real two-second stall in the middle of a DATA frame, with the default
// time-outs: the drain times out, asks again, and ends with every record.
func TestSnapshotTwoSecondStall(t *testing.T) {
	d := newDevice(4096, devicetest.Faults{Seed: 1, StallAfter: 3000, Stall: 2 * time.Second})
	s, _ := openSession(t, d, device.DefaultTimeouts())
	c, err := s.Snapshot(context.Background(), device.Start{Fields: sample.FieldPC | sample.FieldLR}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkTruth(t, d, c)
	// The default 1 s time-out ends the first DRAIN inside the stall; the
	// rest is asked for again (and its late first copy ignored).
	if len(c.Records) != 4096 || !d.Stalled() || c.Stats.Rerequests == 0 {
		t.Fatalf("%d records; stalled %v; stats %+v", len(c.Records), d.Stalled(), c.Stats)
	}
	t.Logf("stats after the stall: %+v", c.Stats)
}

// A device that samples slower than its settings promise (an emulator on a
// busy host) is left to end its run; one that takes no sample for maxWait
// is stopped, and what it took is drained.
func TestSnapshotWaitsWhileSampling(t *testing.T) {
	slow := newDevice(4096, devicetest.Faults{})
	slow.RunTime = 600 * time.Millisecond // a sample every 0.15 ms, 6× maxWait in all
	s, _ := openSession(t, slow, fastTimeouts())
	c, err := s.Snapshot(context.Background(), device.Start{Fields: sample.FieldPC}, 100*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Records) != 4096 || c.Header.Taken != 4096 {
		t.Errorf("slow device: %d records, taken %d; want the full buffer", len(c.Records), c.Header.Taken)
	}
	checkTruth(t, slow, c)

	stuck := newDevice(1024, devicetest.Faults{})
	stuck.RunTime = time.Hour // a sample every 3.5 s
	s, _ = openSession(t, stuck, fastTimeouts())
	c, err = s.Snapshot(context.Background(), device.Start{Fields: sample.FieldPC}, 100*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Header.State != sample.StateHolding || len(c.Records) >= 1024 || len(c.Records) != int(c.Header.Stored) {
		t.Errorf("stuck device: %d records, header %+v; want it stopped with what it took", len(c.Records), c.Header)
	}
	checkTruth(t, stuck, c)
}

// A hang-up half-way through the drain: the capture keeps what arrived and
// names what is missing; Resume on a new connection fetches the rest.
func TestSnapshotHangUpThenResume(t *testing.T) {
	d := newDevice(4096, devicetest.Faults{Seed: 5, HangUpAfter: 8000})
	s, served := openSession(t, d, fastTimeouts())
	c, err := s.Snapshot(context.Background(), device.Start{Fields: sample.FieldPC | sample.FieldLR}, 0, nil)
	var inc *device.IncompleteError
	var disc *device.DisconnectError
	if !errors.As(err, &inc) || !errors.As(err, &disc) || !inc.Resumable {
		t.Fatalf("err = %v; want an incomplete, resumable capture after a disconnect", err)
	}
	if <-served == nil {
		t.Error("device did not hang up")
	}
	if len(c.Records) == 0 || len(c.Missing) == 0 || c.MissingCount()+uint64(len(c.Records)) != 4096 {
		t.Fatalf("%d records, missing %v", len(c.Records), c.Missing)
	}
	checkTruth(t, d, c)
	d.Faults = devicetest.Faults{}
	s2, _ := openSession(t, d, fastTimeouts())
	done, err := s2.Resume(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(done.Records) != 4096 || len(done.Missing) != 0 {
		t.Fatalf("after resume: %d records, missing %v", len(done.Records), done.Missing)
	}
	checkTruth(t, d, done)
	if err := s2.Done(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Resume(context.Background(), c); err == nil {
		t.Error("a second resume after DONE succeeded")
	}
}

func TestStreamUntilStop(t *testing.T) {
	d := newDevice(4096, devicetest.Faults{})
	s, _ := openSession(t, d, fastTimeouts())
	stop := make(chan struct{})
	s.OnProgress = func(got, _ uint64) {
		if got >= 3000 && !isClosed(stop) {
			close(stop)
		}
	}
	c, err := s.Stream(context.Background(), device.Start{Fields: sample.FieldPC | sample.FieldThread}, 0, stop)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Records) < 3000 || len(c.Missing) != 0 || c.Header.Stored != uint32(len(c.Records)) || c.Header.Mode != sample.ModeStream {
		t.Fatalf("%d records, missing %v, header %+v", len(c.Records), c.Missing, c.Header)
	}
	checkTruth(t, d, c)
	if len(c.Threads) != 2 {
		t.Errorf("threads %v", c.Threads)
	}
}

func TestStreamCount(t *testing.T) {
	d := newDevice(4096, devicetest.Faults{})
	s, _ := openSession(t, d, fastTimeouts())
	c, err := s.Stream(context.Background(), device.Start{Fields: sample.FieldPC, Count: 1000}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Records) != 1000 || c.Header.Stored != 1000 {
		t.Fatalf("%d records, header %+v", len(c.Records), c.Header)
	}
	checkTruth(t, d, c)
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestStartRefusals(t *testing.T) {
	d := newDevice(1024, devicetest.Faults{})
	s, _ := openSession(t, d, fastTimeouts())
	ctx := context.Background()
	if err := s.Start(ctx, device.Start{RateHz: 1_000_000, Fields: sample.FieldPC}); err == nil {
		t.Error("START above the device's rate accepted")
	}
	if _, err := s.Attach(ctx, nil); err == nil {
		t.Error("attach to an idle device succeeded")
	}
	if err := s.Start(ctx, device.Start{Fields: sample.FieldPC}); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx, device.Start{Fields: sample.FieldPC}); err == nil {
		t.Error("START over a running run accepted")
	}
	c, err := s.Attach(ctx, nil)
	if err != nil || len(c.Records) != 1024 {
		t.Fatalf("attach: %v", err)
	}
	checkTruth(t, d, c)
}

// A noisy stream: what is lost cannot be asked for again (the device
// released it), so the capture names it as missing and is not resumable;
// everything that did arrive is exact. In the coding of 1.4 a damaged
// frame takes the frames that continue its coding with it, up to the next
// key frame: exactly those are missing.
func TestStreamNoisyLine(t *testing.T) {
	d := newDevice(4096, devicetest.Faults{Seed: 11, CorruptOut: 0.003, MaxChunk: 5})
	s, _ := openSession(t, d, fastTimeouts())
	c, err := s.Stream(context.Background(), device.Start{Fields: sample.FieldPC | sample.FieldLR, Count: 6000}, 0, nil)
	var inc *device.IncompleteError
	if !errors.As(err, &inc) || inc.Resumable || len(c.Missing) == 0 {
		t.Fatalf("err = %v, missing %v; want an incomplete capture that cannot be resumed", err, c.Missing)
	}
	checkTruth(t, d, c)
	if uint64(len(c.Records))+c.MissingCount() != 6000 || c.Header.Stored != 6000 || c.Header.State != sample.StateIdle {
		t.Errorf("%d records + %d missing, header %+v", len(c.Records), c.MissingCount(), c.Header)
	}
	var lost uint64
	for _, r := range d.Damaged() {
		lost += uint64(r.Len())
	}
	if c.Header.Coding != sample.CodingV14 || c.MissingCount() != lost {
		t.Errorf("coding %v: %d records missing, the device damaged or cut off the chains of %d", c.Header.Coding, c.MissingCount(), lost)
	}
	t.Logf("%d records, %d missing in %d ranges; damaged frames and those continuing them %d", len(c.Records), c.MissingCount(), len(c.Missing), len(d.Damaged()))
}

func TestNewerProtocolRefused(t *testing.T) {
	d := newDevice(1024, devicetest.Faults{})
	d.ProtoMajor = 2
	s, _ := openSession(t, d, fastTimeouts())
	_, err := s.Status(context.Background())
	want := fmt.Sprintf("protocol version 2.%d, newer than this tcmprof reads (%d.%d)", device.ProtoMinor, device.ProtoMajor, device.ProtoMinor)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v", err)
	}
}

// The thread table is asked for again when it did not come with the
// records; a device that never sends one still gets its DONE.
func TestThreadTableRecovered(t *testing.T) {
	all := sample.FieldPC | sample.FieldLR | sample.FieldExc | sample.FieldThread
	for _, tc := range []struct {
		skip        int
		wantThreads int
	}{{2, 2}, {1000, 0}} {
		d := newDevice(1024, devicetest.Faults{SkipThreads: tc.skip})
		s, _ := openSession(t, d, fastTimeouts())
		c, err := s.Snapshot(context.Background(), device.Start{Fields: all}, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkTruth(t, d, c)
		if len(c.Records) != 1024 || len(c.Threads) != tc.wantThreads {
			t.Errorf("skip %d: %d records, threads %v", tc.skip, len(c.Records), c.Threads)
		}
		if err := s.Done(context.Background()); err != nil {
			t.Errorf("skip %d: DONE: %v", tc.skip, err)
		}
	}
}

// A device that reset after the hang-up holds nothing: resume says so.
func TestResumeAfterDeviceReset(t *testing.T) {
	d := newDevice(2048, devicetest.Faults{HangUpAfter: 3000})
	s, _ := openSession(t, d, fastTimeouts())
	c, err := s.Snapshot(context.Background(), device.Start{Fields: sample.FieldPC}, 0, nil)
	if err == nil || len(c.Missing) == 0 {
		t.Fatalf("err %v, missing %v", err, c.Missing)
	}
	d.Reset()
	d.Faults = devicetest.Faults{}
	s2, _ := openSession(t, d, fastTimeouts())
	if _, err := s2.Resume(context.Background(), c); err == nil || !strings.Contains(err.Error(), "no longer holds the run (state idle)") {
		t.Fatalf("resume after a reset: %v", err)
	}
	// A different run held by the device is refused too.
	if err := s2.Start(context.Background(), device.Start{Fields: sample.FieldPC, Count: 100}); err != nil {
		t.Fatal(err)
	}
	waitHeld(t, s2)
	if _, err := s2.Resume(context.Background(), c); err == nil || !strings.Contains(err.Error(), "holds a different run") {
		t.Fatalf("resume against another run: %v", err)
	}
}

// The device writes one byte at a time, so every frame is split at every
// offset on its way to the host.
func TestSnapshotByteAtATime(t *testing.T) {
	d := newDevice(2048, devicetest.Faults{Seed: 4, MaxChunk: 1, LogBetween: 0.2})
	to := fastTimeouts()
	to.Reply = time.Second // a frame takes tens of ms to trickle through
	s, _ := openSession(t, d, to)
	var logs int
	s.OnLog = func(string) { logs++ }
	c, err := s.Snapshot(context.Background(), device.Start{Fields: sample.FieldPC | sample.FieldLR | sample.FieldExc}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkTruth(t, d, c)
	if err := s.Done(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(c.Records) != 2048 || c.Stats.CRCErrors+c.Stats.GarbageBytes != 0 || !sawAllLogLines(t, s, d, func() int { return logs }) {
		t.Errorf("%d records, stats %+v, %d of %d log lines", len(c.Records), c.Stats, logs, d.LogLines())
	}
}

// What a live view needs from a stream run: every record handed over as
// its frame arrives, in order; the device's counters while the run goes
// (StatusEvery); and the run so far, asked for from another goroutine.
func TestStreamLiveHooks(t *testing.T) {
	d := newDevice(4096, devicetest.Faults{})
	d.StreamRing = 8192
	s, _ := openSession(t, d, fastTimeouts())
	s.StatusEvery = 20 * time.Millisecond
	var seen []sample.Record
	s.OnRecords = func(recs []sample.Record) { seen = append(seen, recs...) }
	var running []sample.Header
	var nRunning atomic.Int32 // read by the goroutine that ends the run
	s.OnHeader = func(h *sample.Header) {
		if h.State == sample.StateRunning {
			running = append(running, *h)
			nRunning.Add(1)
		}
	}
	stop := make(chan struct{})
	partial := make(chan *sample.Capture, 1)
	go func() {
		defer close(stop)
		waitForStored(t, d, 3000)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := s.Received(ctx)
		if err != nil {
			t.Error(err)
		}
		partial <- c
		waitForStored(t, d, 6000)
		// Two HEADERs while running, however slowly a busy machine runs
		// the session's goroutine.
		for deadline := time.Now().Add(10 * time.Second); nRunning.Load() < 2 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
	}()
	c, err := s.Stream(context.Background(), device.Start{Fields: sample.FieldPC | sample.FieldLR}, 0, stop)
	if err != nil {
		t.Fatal(err)
	}
	checkTruth(t, d, c)
	if !reflect.DeepEqual(seen, c.Records) {
		t.Errorf("OnRecords saw %d records, the capture holds %d", len(seen), len(c.Records))
	}
	if len(running) < 2 || running[len(running)-1].Stored <= running[0].Stored {
		t.Errorf("HEADERs while running: %+v", running)
	}
	p := <-partial
	if p == nil {
		t.Fatal("no partial capture")
	}
	checkTruth(t, d, p)
	if n := len(p.Records); n < 1 || n >= len(c.Records) || !reflect.DeepEqual(p.Records, c.Records[:n]) || p.Header.Mode != sample.ModeStream {
		t.Errorf("partial capture: %d records of %d, header %+v", n, len(c.Records), p.Header)
	}
}

// A device whose ring overflows drops samples and says so in its counters:
// the host sees drops, not missing records.
func TestStreamRingOverflow(t *testing.T) {
	d := newDevice(4096, devicetest.Faults{})
	d.StreamRing, d.StreamBatch, d.StreamPeriod = 256, 1000, time.Millisecond
	s, _ := openSession(t, d, fastTimeouts())
	c, err := s.Stream(context.Background(), device.Start{Fields: sample.FieldPC, Count: 50000}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkTruth(t, d, c)
	h := c.Header
	if h.Taken != 50000 || h.Dropped == 0 || h.Stored+h.Dropped != h.Taken || uint32(len(c.Records)) != h.Stored || len(c.Missing) != 0 {
		t.Errorf("taken %d, dropped %d, stored %d, %d records, missing %v", h.Taken, h.Dropped, h.Stored, len(c.Records), c.Missing)
	}
}

func waitForStored(t *testing.T, d *devicetest.Device, n uint32) {
	for deadline := time.Now().Add(10 * time.Second); d.Stored() < n; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("the device stored only %d records", d.Stored())
			return
		}
	}
}

// A host asks a 1.4 device for the 1.4 record coding, stack records
// included, and a 1.2 or 1.3 device for the 1.2 one, and reads it; a 1.1
// device (which ignores the request and reports coding 0) is read in the
// coding of 1.0. Every run comes back record for record.
func TestCodingNegotiated(t *testing.T) {
	fields := sample.FieldPC | sample.FieldLR | sample.FieldExc | sample.FieldThread | sample.FieldStack
	for _, tt := range []struct {
		minor uint8
		want  sample.Coding
	}{{1, sample.CodingV10}, {2, sample.CodingV12}, {3, sample.CodingV12}, {4, sample.CodingV14}} {
		for _, mode := range []sample.Mode{sample.ModeSnapshot, sample.ModeStream} {
			d := newDevice(1024, devicetest.Faults{})
			d.ProtoMinor = tt.minor
			s, _ := openSession(t, d, fastTimeouts())
			var c *sample.Capture
			var err error
			if mode == sample.ModeSnapshot {
				c, err = s.Snapshot(context.Background(), device.Start{RateHz: 20000, Fields: fields}, 0, nil)
			} else {
				c, err = s.Stream(context.Background(), device.Start{RateHz: 20000, Fields: fields, Count: 1000}, 0, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Header.Coding != tt.want || c.Header.ProtoMinor != tt.minor || len(c.Records) < 1000 || len(c.Missing) != 0 {
				t.Fatalf("device 1.%d, %v: coding %v, %d records, missing %v", tt.minor, mode, c.Header.Coding, len(c.Records), c.Missing)
			}
			checkTruth(t, d, c)
		}
	}
}

// A 1.3 device follows the thread table of a run with THREAD and STACK
// with each thread's stack top: the capture carries them in a snapshot
// (also when the line damages frames, so that some arrive only when asked
// again) and in a stream. A 1.2 device sends none, and the capture is
// complete without them.
func TestStackTopsCollected(t *testing.T) {
	fields := sample.FieldPC | sample.FieldLR | sample.FieldExc | sample.FieldThread | sample.FieldStack
	tops := []sample.StackTop{
		{Thread: 0x20001000, Top: 0x20202000, Words: []uint32{0x60001235, 0, 0x20201f80}},
		{Thread: 0x20001100, Top: 0x20204000, Words: make([]uint32, sample.MaxStackTopWords)},
	}
	for _, tt := range []struct {
		minor  uint8
		mode   sample.Mode
		faults devicetest.Faults
		want   int
	}{
		{3, sample.ModeSnapshot, devicetest.Faults{}, 2},
		{3, sample.ModeSnapshot, devicetest.Faults{Seed: 5, CorruptOut: 0.003, SkipThreads: 1}, 2},
		{3, sample.ModeStream, devicetest.Faults{}, 2},
		{2, sample.ModeSnapshot, devicetest.Faults{}, 0},
		{2, sample.ModeStream, devicetest.Faults{}, 0},
	} {
		d := newDevice(512, tt.faults)
		d.ProtoMinor, d.StackTops = tt.minor, tops
		s, _ := openSession(t, d, fastTimeouts())
		var c *sample.Capture
		var err error
		if tt.mode == sample.ModeSnapshot {
			c, err = s.Snapshot(context.Background(), device.Start{Fields: fields}, 0, nil)
		} else {
			c, err = s.Stream(context.Background(), device.Start{Fields: fields, Count: 512}, 0, nil)
		}
		if err != nil {
			t.Fatalf("1.%d %v: %v", tt.minor, tt.mode, err)
		}
		checkTruth(t, d, c)
		if len(c.StackTops) != tt.want || len(c.Threads) != 2 {
			t.Fatalf("1.%d %v %+v: stack tops %v, threads %v", tt.minor, tt.mode, tt.faults, c.StackTops, c.Threads)
		}
		for _, want := range tops[:tt.want] {
			if got := c.StackTops[want.Thread]; !reflect.DeepEqual(got, want) {
				t.Errorf("1.%d %v: thread %#x's stack top %+v, sent %+v", tt.minor, tt.mode, want.Thread, got, want)
			}
		}
	}
}
