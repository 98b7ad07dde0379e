// SPDX-License-Identifier: Apache-2.0

// Package devicetest is a scripted firmware-sampler for tests: it speaks
// the wire protocol through any byte stream (a pty in the tests of sample
// and cmd), produces known records, and injects faults: corrupted bytes,
// log text between and inside frames, writes split at random points, a
// stall, and a hang-up. It encodes with the sample package's encoders and
// knows the truth the host should recover.
//
// One file of some 700 lines: the scripted device is one state machine
// (commands, runs, the ring, the fault injector), and its parts share that
// state under one lock.
package devicetest

import (
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/tcmprof/tcmprof/sample"
	"github.com/tcmprof/tcmprof/sample/device"
)

// Faults are what the device does wrong on purpose. Zero means none.
type Faults struct {
	Seed       uint64  // of the fault generator; the same seed gives the same faults
	CorruptOut float64 // probability that a byte the device sends is changed
	CorruptIn  float64 // probability that a byte the device receives is changed
	LogBetween float64 // probability of a log line before a frame
	LogInside  float64 // probability of a log line in the middle of a frame
	MaxChunk   int     // send in writes of 1..MaxChunk bytes (0 = one write per frame)
	// StallAfter and Stall: once StallAfter bytes of DATA frames have been
	// sent, stop sending for Stall (once).
	StallAfter int64
	Stall      time.Duration
	// HangUpAfter: once this many bytes of DATA frames have been sent,
	// close the connection (as an unplugged or reset device would).
	HangUpAfter int64
	// SkipThreads: the first SkipThreads THREADS frames are not sent.
	SkipThreads int
}

// Device is the scripted sampler. Configure the exported fields, then call
// Serve for each connection; the run's state survives a hang-up, so a
// second Serve resumes with the records still held.
type Device struct {
	Capacity   uint32 // records the buffer holds
	ProtoMajor uint8  // protocol major in HEADER; 0 = sample.ProtoMajor
	// ProtoMinor is the protocol minor in HEADER; 0 = sample.ProtoMinor.
	// Below 2 the device codes records as 1.1 did, whatever START asks.
	ProtoMinor    uint8
	CPUHz         uint32
	TimerHz       uint32
	DefaultRateHz uint32
	MaxRateHz     uint32 // START above this is BAD_ARG
	BuildID       []byte
	Threads       []device.Thread // thread ids records use, with names
	// StackTops are sent after the THREADS table of a run with THREAD and
	// STACK when the device speaks protocol 1.3 or later.
	StackTops    []sample.StackTop
	Seed         uint64        // of the records
	RunTime      time.Duration // a snapshot run's sampling time (the device's clock is fast)
	StreamBatch  int           // records per DATA frame while streaming
	StreamPeriod time.Duration // between stream DATA frames
	// StreamRing, when positive, makes a stream run behave like the
	// firmware's ring: StreamBatch samples are taken every StreamPeriod
	// whether or not the host reads, wait in a ring of StreamRing records,
	// and go out one DATA frame at a time as fast as the connection takes
	// them; a sample that finds the ring full is dropped and counted. With
	// 0 each batch is sent before the next is taken: a slow host slows the
	// run down and nothing is dropped.
	StreamRing uint32
	// Replay, when set, gives the records' fields in place of generated
	// ones: record i is Replay[i mod len(Replay)] with index i, as if a
	// recorded capture played again.
	Replay []sample.Record
	Faults Faults

	mu        sync.Mutex
	wmu       sync.Mutex // serialises frames from Serve and the stream goroutine
	rng       *rand.Rand
	conn      io.ReadWriteCloser
	hungUp    bool
	stalled   bool
	dataSent  int64
	state     sample.State
	mode      sample.Mode
	fields    sample.Fields
	stackK    uint8 // K of a STACK run
	coding    sample.Coding
	writer    *device.DataWriter // frames the records of the run, or of a DRAIN answer
	chainLost bool               // a CodingV14 frame was damaged: the frames continuing it are lost too
	jitter    uint8
	rate      uint32
	target    uint32 // samples the run takes
	started   time.Time
	taken     uint32
	stored    uint32
	sent      uint32 // a ring stream's records below this index are sent
	heldFrom  uint32
	stopRun   chan struct{}
	stopping  bool
	damaged   []sample.Range
	logLines  int
}

// Record is the ground truth of record i of the current run (only its
// fields are set).
func (d *Device) Record(i uint32) sample.Record {
	d.mu.Lock()
	f, k := d.fields, d.stackK
	d.mu.Unlock()
	return d.record(i, f, k)
}

// record i of a run with fields f and, with STACK, k stack words: the
// stack is one of three threads' at a random depth, so that stacks repeat
// as they do on a device. With Replay set, the fields are the replayed
// record's.
func (d *Device) record(i uint32, f sample.Fields, k uint8) sample.Record {
	if n := uint32(len(d.Replay)); n > 0 {
		rec := d.Replay[i%n]
		r := sample.Record{Index: i, PC: rec.PC}
		if f&sample.FieldLR != 0 {
			r.LR = rec.LR
		}
		if f&sample.FieldExc != 0 {
			r.Exc = rec.Exc
		}
		if f&sample.FieldThread != 0 {
			r.Thread = rec.Thread
		}
		if f&sample.FieldStack != 0 {
			r.SP = rec.SP
			r.Stack = rec.Stack[:min(len(rec.Stack), int(k))]
		}
		return r
	}
	h := rand.New(rand.NewPCG(d.Seed, uint64(i)))
	funcs := []uint32{0x60001000, 0x60002400, 0x60010000, 0x00000400, 0x60023000}
	r := sample.Record{Index: i, PC: funcs[h.IntN(len(funcs))] + uint32(h.IntN(0x100))*2}
	if f&sample.FieldLR != 0 {
		r.LR = funcs[h.IntN(len(funcs))] + uint32(h.IntN(0x200))*2 + 1
		if h.IntN(10) == 0 {
			r.LR = 0xFFFFFFF9
		}
	}
	if f&sample.FieldExc != 0 && h.IntN(8) == 0 {
		r.Exc = 16 + uint16(h.IntN(100))
	}
	if f&sample.FieldThread != 0 && len(d.Threads) > 0 {
		r.Thread = d.Threads[h.IntN(len(d.Threads))].ID
	}
	if f&sample.FieldStack != 0 {
		thread := uint32(h.IntN(3))
		top := 0x20201000 + 0x800*thread
		depth := uint32(h.IntN(48))
		r.SP = top - 4*depth
		for w := range min(depth, uint32(k)) {
			addr := r.SP + 4*w
			r.Stack = append(r.Stack, addr^0x55555555*thread) // the same word at the same address
		}
		if len(r.Stack) > 0 {
			r.Stack[0] = h.Uint32() // the innermost word changes
		}
	}
	return r
}

// Stalled reports whether the configured stall has happened.
func (d *Device) Stalled() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stalled
}

// Reset forgets the run, as a device that rebooted would.
func (d *Device) Reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.state, d.taken, d.stored, d.heldFrom = sample.StateIdle, 0, 0, 0
}

// Damaged lists the index ranges of DATA frames the device damaged on
// purpose (corrupted or split by log text).
func (d *Device) Damaged() []sample.Range {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]sample.Range(nil), d.damaged...)
}

// Stored is how many records the current run has stored.
func (d *Device) Stored() uint32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.advance()
	return d.stored
}

// LogLines is how many log lines the device sent.
func (d *Device) LogLines() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.logLines
}

var errHungUp = errors.New("device hung up")

// Serve answers commands on conn until reading fails or the device hangs
// up by fault; it closes conn on a hang-up only.
func (d *Device) Serve(conn io.ReadWriteCloser) error {
	d.mu.Lock()
	if d.rng == nil {
		d.rng = rand.New(rand.NewPCG(d.Faults.Seed, 1))
	}
	d.conn = conn
	d.hungUp = false
	d.mu.Unlock()
	dec := device.NewDecoder(sample.FieldPC)
	buf := make([]byte, 512)
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			in := append([]byte(nil), buf[:n]...)
			d.mu.Lock()
			for i := range in {
				if d.Faults.CorruptIn > 0 && d.rng.Float64() < d.Faults.CorruptIn {
					in[i] ^= byte(1 + d.rng.IntN(255))
				}
			}
			d.mu.Unlock()
			for _, ev := range dec.Feed(in) {
				if ev.Frame == nil {
					continue
				}
				if err := d.handle(ev.Frame); err != nil {
					return err
				}
			}
		}
		if err != nil {
			return err
		}
	}
}

func (d *Device) handle(f device.Frame) error {
	d.mu.Lock()
	d.advance()
	d.mu.Unlock()
	switch c := f.(type) {
	case *device.Status:
		return d.send(d.header())
	case *device.Start:
		return d.start(c)
	case *device.Stop:
		d.mu.Lock()
		running := d.state == sample.StateRunning
		if running && d.mode == sample.ModeSnapshot {
			d.target = d.stored
			d.state = sample.StateHolding
		}
		stream := running && d.mode == sample.ModeStream && !d.stopping
		if stream {
			d.stopping = true
		}
		d.mu.Unlock()
		if err := d.send(&device.Reply{Command: device.TypeStop, Status: device.StatusOK}); err != nil {
			return err
		}
		if stream {
			close(d.stopRun)
		}
		return nil
	case *device.Drain:
		return d.drain(c)
	case *device.Done:
		d.mu.Lock()
		status := device.StatusOK
		if d.state == sample.StateRunning {
			status = device.StatusBusy
		} else {
			d.state = sample.StateIdle
			d.heldFrom = d.stored
		}
		d.mu.Unlock()
		return d.send(&device.Reply{Command: device.TypeDone, Status: status})
	}
	return d.send(&device.Reply{Command: f.Type(), Status: device.StatusUnknown})
}

// advance moves a snapshot run's clock: records appear over RunTime.
func (d *Device) advance() {
	if d.state != sample.StateRunning || d.mode != sample.ModeSnapshot {
		return
	}
	el := time.Since(d.started)
	if el >= d.RunTime {
		d.stored, d.taken, d.state = d.target, d.target, sample.StateHolding
		return
	}
	d.stored = uint32(uint64(d.target) * uint64(el) / uint64(d.RunTime))
	d.taken = d.stored
}

func (d *Device) header() *device.HeaderFrame {
	d.mu.Lock()
	defer d.mu.Unlock()
	rate := d.rate
	if rate == 0 {
		rate = d.DefaultRateHz
	}
	major := d.ProtoMajor
	if major == 0 {
		major = device.ProtoMajor
	}
	return &device.HeaderFrame{Header: sample.Header{ProtoMajor: major, ProtoMinor: d.minor(), SamplerVersion: [3]uint8{0, 1, 0}, Coding: d.coding,
		State: d.state, Mode: d.mode, Fields: d.fields | sample.FieldPC, JitterPct: d.jitter, CPUHz: d.CPUHz, TimerHz: d.TimerHz,
		IntervalTicks: d.TimerHz / rate, Capacity: d.Capacity, Taken: d.taken, Dropped: d.taken - d.stored,
		Stored: d.stored, HeldFrom: d.heldFrom, BuildID: d.BuildID, StackWords: d.stackK}}
}

func (d *Device) minor() uint8 {
	if d.ProtoMinor == 0 {
		return device.ProtoMinor
	}
	return d.ProtoMinor
}

func (d *Device) start(c *device.Start) error {
	d.mu.Lock()
	status := device.StatusOK
	rate := c.RateHz
	if rate == 0 {
		rate = d.DefaultRateHz
	}
	k := uint8(0)
	if c.Fields&sample.FieldStack != 0 {
		k = c.StackWords
		if k == 0 {
			k = device.DefaultStackWords
		}
	}
	switch {
	case d.state != sample.StateIdle:
		status = device.StatusBusy
	case c.Fields&sample.FieldPC == 0 || c.JitterPct > 50 || rate > d.MaxRateHz || c.Mode > sample.ModeStream:
		status = device.StatusBadArg
	case c.Fields&sample.FieldStack != 0 && (c.Fields&sample.FieldLR == 0 || k < sample.MinStackWords || k > sample.MaxStackWords):
		status = device.StatusBadArg
	}
	if status == device.StatusOK {
		d.state, d.mode, d.fields, d.jitter, d.rate = sample.StateRunning, c.Mode, c.Fields, c.JitterPct, rate
		d.stackK = k
		// As the firmware: a coding it does not know is the 1.0 one.
		d.coding = sample.CodingV10
		if d.minor() >= 2 && c.Coding == sample.CodingV12 || d.minor() >= 4 && c.Coding == sample.CodingV14 {
			d.coding = c.Coding
		}
		d.writer = device.NewDataWriter(c.Fields, d.coding)
		d.taken, d.stored, d.sent, d.heldFrom = 0, 0, 0, 0
		d.target = d.Capacity
		if c.Count > 0 {
			d.target = min(d.target, c.Count)
		}
		if c.Mode == sample.ModeStream {
			d.target = c.Count // 0: until STOP
		}
		if c.DurationMS > 0 {
			byTime := uint32(uint64(c.DurationMS) * uint64(rate) / 1000)
			if d.target == 0 || byTime < d.target {
				d.target = byTime
			}
		}
		d.started = time.Now()
		d.stopRun = make(chan struct{})
		d.stopping = false
	}
	stream := status == device.StatusOK && c.Mode == sample.ModeStream
	d.mu.Unlock()
	if err := d.send(&device.Reply{Command: device.TypeStart, Status: status}); err != nil {
		return err
	}
	switch {
	case stream && d.StreamRing > 0:
		go d.streamRing(d.stopRun)
	case stream:
		go d.stream(d.stopRun)
	}
	return nil
}

// stream sends StreamBatch records every StreamPeriod until the target or STOP.
func (d *Device) stream(stop chan struct{}) {
	tick := time.NewTicker(d.StreamPeriod)
	defer tick.Stop()
	for {
		stopped := false
		select {
		case <-stop:
			stopped = true
		case <-tick.C:
		}
		d.mu.Lock()
		from := d.stored
		n := uint32(d.StreamBatch)
		if d.target > 0 {
			n = min(n, d.target-from)
		}
		if stopped {
			n = 0
		}
		d.stored += n
		d.taken = d.stored
		done := stopped || d.target > 0 && d.stored >= d.target
		fields := d.fields
		d.mu.Unlock()
		if n > 0 && d.sendRecords(from, from+n, fields) != nil {
			return
		}
		if done {
			d.endStream(fields)
			return
		}
	}
}

// streamRing is stream with the firmware's ring (see StreamRing): a taker
// stores samples on time, or drops them, and this goroutine sends what the
// ring holds, one frame at a time, releasing each frame's records once it
// is written.
func (d *Device) streamRing(stop chan struct{}) {
	wake := make(chan struct{}, 1)
	takerDone := make(chan struct{})
	go func() {
		defer close(takerDone)
		tick := time.NewTicker(d.StreamPeriod)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			d.mu.Lock()
			// Samples due by now at the mean rate, so that a late tick
			// takes more rather than the rate falling behind.
			due := uint64(time.Since(d.started)/d.StreamPeriod) * uint64(d.StreamBatch)
			if d.target > 0 {
				due = min(due, uint64(d.target))
			}
			n := uint32(due) - d.taken
			stored := min(n, d.StreamRing-(d.stored-d.sent))
			d.taken += n
			d.stored += stored
			finished := d.target > 0 && d.taken >= d.target
			d.mu.Unlock()
			select {
			case wake <- struct{}{}:
			default:
			}
			if finished {
				return
			}
		}
	}()
	for taking := true; ; {
		d.mu.Lock()
		from, end, fields := d.sent, d.stored, d.fields
		d.mu.Unlock()
		if from < end {
			n, err := d.sendFrame(from, end, fields)
			if err != nil {
				return
			}
			d.mu.Lock()
			d.sent += n
			d.mu.Unlock()
			continue
		}
		if !taking {
			d.endStream(fields)
			return
		}
		select {
		case <-wake:
		case <-takerDone:
			taking = false
		}
	}
}

// endStream ends a stream run as the firmware does: the thread table, then
// END with the final counters, and the device is idle.
func (d *Device) endStream(fields sample.Fields) {
	d.mu.Lock()
	d.state = sample.StateIdle
	d.heldFrom = d.stored
	end := &device.End{Reason: device.EndStreamStopped, Next: d.stored, Taken: d.taken, Dropped: d.taken - d.stored, Stored: d.stored}
	d.mu.Unlock()
	if d.sendThreads(fields) == nil {
		d.send(end)
	}
}

func (d *Device) drain(c *device.Drain) error {
	d.mu.Lock()
	state, taken, stored, held, fields := d.state, d.taken, d.stored, d.heldFrom, d.fields
	d.mu.Unlock()
	if state == sample.StateRunning {
		return d.send(&device.Reply{Command: device.TypeDrain, Status: device.StatusBusy})
	}
	end := stored
	if c.Count > 0 && uint64(c.From)+uint64(c.Count) < uint64(stored) {
		end = c.From + c.Count
	}
	if state != sample.StateHolding || c.From < held || c.From > stored {
		return d.send(&device.Reply{Command: device.TypeDrain, Status: device.StatusUnavailable})
	}
	if err := d.send(d.header()); err != nil {
		return err
	}
	d.mu.Lock()
	d.writer = device.NewDataWriter(fields, d.coding) // a DRAIN answer starts with a key frame
	d.mu.Unlock()
	if err := d.sendRecords(c.From, end, fields); err != nil {
		return err
	}
	if err := d.sendThreads(fields); err != nil {
		return err
	}
	return d.send(&device.End{Reason: device.EndDrained, First: c.From, Next: end, Taken: taken, Stored: stored})
}

// sendRecords sends records [from, end) in DATA frames filled as the
// firmware fills them (sample.FillData).
func (d *Device) sendRecords(from, end uint32, fields sample.Fields) error {
	for from < end {
		n, err := d.sendFrame(from, end, fields)
		if err != nil {
			return err
		}
		from += n
	}
	return nil
}

// sendFrame sends one DATA frame of the first records of [from, end),
// filled as the firmware fills it, and returns how many it sent.
func (d *Device) sendFrame(from, end uint32, fields sample.Fields) (uint32, error) {
	d.mu.Lock()
	k, writer := d.stackK, d.writer
	d.mu.Unlock()
	recs := make([]sample.Record, min(end-from, device.MaxPayload))
	for i := range recs {
		recs[i] = d.record(from+uint32(i), fields, k)
	}
	data := writer.Fill(from, recs)
	return uint32(len(data.Records)), d.sendData(data)
}

func (d *Device) sendThreads(fields sample.Fields) error {
	if fields&sample.FieldThread == 0 || len(d.Threads) == 0 {
		return nil
	}
	d.mu.Lock()
	skip := d.Faults.SkipThreads > 0
	if skip {
		d.Faults.SkipThreads--
	}
	d.mu.Unlock()
	if skip {
		return nil
	}
	if err := d.send(&device.Threads{Entries: d.Threads}); err != nil {
		return err
	}
	if fields&sample.FieldStack == 0 || d.minor() < 3 {
		return nil
	}
	for i := range d.StackTops {
		if err := d.send(&device.StackTopFrame{StackTop: d.StackTops[i]}); err != nil {
			return err
		}
	}
	return nil
}

func (d *Device) sendData(data *device.Data) error {
	b, err := device.EncodeFrame(data)
	if err != nil {
		return err
	}
	return d.write(b, data)
}

func (d *Device) send(f device.Frame) error {
	b, err := device.EncodeFrame(f)
	if err != nil {
		return err
	}
	return d.write(b, nil)
}

// write sends one encoded frame with the configured faults.
func (d *Device) write(frame []byte, data *device.Data) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	d.mu.Lock()
	if d.hungUp {
		d.mu.Unlock()
		return errHungUp
	}
	fl := &d.Faults
	var out []byte
	damaged := false
	if fl.LogBetween > 0 && d.rng.Float64() < fl.LogBetween {
		out = append(out, "<inf> app: between frames\r\n"...)
		d.logLines++
	}
	frame = append([]byte(nil), frame...)
	for i := range frame {
		if fl.CorruptOut > 0 && d.rng.Float64() < fl.CorruptOut {
			frame[i] ^= byte(1 + d.rng.IntN(255))
			damaged = true
		}
	}
	if fl.LogInside > 0 && d.rng.Float64() < fl.LogInside {
		at := 1 + d.rng.IntN(len(frame)-2)
		frame = append(frame[:at], append([]byte("<wrn> log inside a frame\r\n"), frame[at:]...)...)
		damaged = true
	}
	out = append(out, frame...)
	if data != nil {
		if !data.Continues {
			d.chainLost = false
		}
		if damaged || d.chainLost {
			d.damaged = append(d.damaged, sample.Range{Start: data.First, End: data.First + uint32(len(data.Records))})
		}
		d.chainLost = d.chainLost || damaged && data.Coding == sample.CodingV14
		d.dataSent += int64(len(out))
	}
	stall := fl.Stall > 0 && !d.stalled && data != nil && d.dataSent >= fl.StallAfter
	if stall {
		d.stalled = true
	}
	hangUp := fl.HangUpAfter > 0 && data != nil && d.dataSent >= fl.HangUpAfter
	conn := d.conn
	var chunks []int
	for rest := len(out); rest > 0; {
		n := rest
		if fl.MaxChunk > 0 {
			n = min(rest, 1+d.rng.IntN(fl.MaxChunk))
		}
		chunks = append(chunks, n)
		rest -= n
	}
	d.mu.Unlock()

	if hangUp {
		// Send half the frame, then go away (after the host has read it:
		// a pty hang-up discards unread input).
		conn.Write(out[:len(out)/2])
		time.Sleep(200 * time.Millisecond)
		d.mu.Lock()
		d.hungUp = true
		d.mu.Unlock()
		conn.Close()
		return errHungUp
	}
	for i, n := range chunks {
		if stall && i == len(chunks)/2 {
			time.Sleep(fl.Stall)
		}
		if _, err := conn.Write(out[:n]); err != nil {
			return err
		}
		out = out[n:]
	}
	return nil
}
