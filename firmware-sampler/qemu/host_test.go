// SPDX-License-Identifier: Apache-2.0

package qemu

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.bug.st/serial"

	"github.com/tcmprof/tcmprof/internal/armtest"
	"github.com/tcmprof/tcmprof/sample"
	"github.com/tcmprof/tcmprof/sample/device"
)

// This file holds the test-side host: a build shared by the tests, a
// minimal command/response loop over the firmware's UART (using the
// sample package's decoder and encoders), and symbol lookup in the ELF.

// builds are the images the tests build, by optimisation level ("": the
// default, -Os, no plan), each built once and cached in $TMPDIR
// (armtest.Build, as internal/qemutest.Demo caches the other packages'
// builds). They have directories of their own: the trace tests build
// their plugin into the default one, and cmd's, running at the same time,
// into qemutest's.
var builds sync.Map // optimisation level -> *armtest.Build

// image is the image built at optimisation level opt ("": the default)
// and its map.
func image(t *testing.T, opt string) (elfPath, mapPath string) {
	t.Helper()
	name := "tcmprof-qemu-default"
	if opt != "" {
		name = "tcmprof-qemu-opt" + strings.TrimPrefix(opt, "-")
	}
	b, _ := builds.LoadOrStore(opt, &armtest.Build{
		Prefix:  name,
		Src:     filepath.Dir(SourceDir()),
		InPlace: true, // the map names the objects by absolute path
		Tools:   BuildTools,
		Make: func(_, out string) error {
			_, _, err := Build(BuildOptions{OutDir: out, Opt: opt})
			return err
		},
	})
	dir := b.(*armtest.Build).Dir(t)
	return filepath.Join(dir, ELFName), filepath.Join(dir, MapName)
}

// defaultImage is the default image and its map.
func defaultImage(t *testing.T) (elfPath, mapPath string) {
	t.Helper()
	return image(t, "")
}

// needQEMU skips a test that boots the image under -short or without QEMU
// (armtest.NeedQEMU, the rule every package's QEMU tests follow).
func needQEMU(t *testing.T) {
	t.Helper()
	armtest.NeedQEMU(t, BuildTools...)
}

// testOptions is how the tests run QEMU (docs/qemu.md says why).
func testOptions() StartOptions {
	o := StartOptions{Icount: 3}
	if v := os.Getenv("TCMPROF_QEMU_MODE"); v != "" { // measurement only
		o = StartOptions{}
		if strings.Contains(v, "icount") {
			o.Icount = 3
		}
		if strings.Contains(v, "single") {
			o.OneInsnPerTB = true
		}
	}
	return o
}

// host talks to one running firmware.
type host struct {
	t      *testing.T
	inst   *Instance
	port   serial.Port
	events chan device.Event
	fields atomic.Uint32 // fields of a stream run, for the decoder until a HEADER
	mu     sync.Mutex
	logs   []string
	stats  sample.DecodeStats
}

// boot starts the image in QEMU and waits for its banner.
func boot(t *testing.T, elfPath string, opts StartOptions) *host {
	t.Helper()
	needQEMU(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	inst, err := StartWith(ctx, elfPath, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	port, err := inst.OpenSerial()
	if err != nil {
		inst.Stop()
		cancel()
		t.Fatal(err)
	}
	h := &host{t: t, inst: inst, port: port, events: make(chan device.Event, 4096)}
	readerDone, quit := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() {
		close(quit) // the reader may be blocked on events nobody reads any more
		inst.Stop()
		port.Close()
		<-readerDone
		cancel()
		if t.Failed() {
			h.mu.Lock()
			t.Logf("firmware log:\n%s", strings.Join(h.logs, "\n"))
			h.mu.Unlock()
		}
	})
	if err := port.SetReadTimeout(50 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	go h.read(quit, readerDone)
	h.waitLog("tcmprof QEMU demo", 20*time.Second)
	return h
}

// read decodes the link into h.events until the port fails or quit closes.
func (h *host) read(quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	defer close(h.events)
	dec := device.NewDecoder(sample.FieldPC)
	buf := make([]byte, 4096)
	for {
		n, err := h.port.Read(buf)
		if err != nil {
			return
		}
		if f := sample.Fields(h.fields.Swap(0)); f != 0 {
			dec.SetFields(f)
		}
		evs := dec.Feed(buf[:n])
		if n == 0 {
			evs = dec.Idle()
		}
		for _, ev := range evs {
			if ev.Log != "" {
				h.mu.Lock()
				h.logs = append(h.logs, ev.Log)
				h.mu.Unlock()
			}
			select {
			case h.events <- ev:
			case <-quit:
				return
			}
		}
		h.mu.Lock()
		h.stats = dec.Stats()
		h.mu.Unlock()
	}
}

// logLines returns the firmware's log lines so far.
func (h *host) logLines() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.logs...)
}

// decodeStats returns the decoder's counts so far.
func (h *host) decodeStats() sample.DecodeStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stats
}

// stop ends the emulator (which flushes its logs) before the test ends.
func (h *host) stop() { h.inst.Stop() }

// next returns the next frame, skipping log lines.
func (h *host) next(timeout time.Duration) device.Frame {
	h.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-h.events:
			if !ok {
				h.t.Fatal("firmware link closed")
			}
			if ev.Err != nil {
				h.t.Fatalf("unreadable frame: %v", ev.Err)
			}
			if ev.Frame != nil {
				return ev.Frame
			}
		case <-deadline:
			h.t.Fatalf("no frame within %v", timeout)
		}
	}
}

// waitLog waits for a log line containing substr and returns it. It gives
// up when the firmware has sent nothing for timeout: one that goes on
// printing is waited for, however slowly QEMU runs on a busy host (and at
// most until boot's deadline stops QEMU).
func (h *host) waitLog(substr string, timeout time.Duration) string {
	h.t.Helper()
	quiet := time.NewTimer(timeout)
	defer quiet.Stop()
	for {
		select {
		case ev, ok := <-h.events:
			if !ok {
				h.t.Fatalf("firmware link closed before %q", substr)
			}
			if strings.Contains(ev.Log, substr) {
				return ev.Log
			}
			quiet.Reset(timeout)
		case <-quiet.C:
			h.t.Fatalf("no log line with %q; then nothing from the firmware for %v", substr, timeout)
		}
	}
}

func (h *host) send(f device.Frame) {
	h.t.Helper()
	b, err := device.EncodeFrame(f)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.port.Write(b); err != nil {
		h.t.Fatal(err)
	}
}

// command sends f and returns the device's REPLY to it.
func (h *host) command(f device.Frame) *device.Reply {
	h.t.Helper()
	h.send(f)
	for {
		fr := h.next(10 * time.Second)
		if r, ok := fr.(*device.Reply); ok && r.Command == f.Type() {
			return r
		}
		h.t.Logf("skipping %T while waiting for the REPLY to %v", fr, f.Type())
	}
}

func (h *host) status() *sample.Header {
	h.t.Helper()
	h.send(&device.Status{})
	for {
		if hd, ok := h.next(10 * time.Second).(*device.HeaderFrame); ok {
			return &hd.Header
		}
	}
}

// waitHolding polls STATUS until a snapshot run has stopped. A run that
// still takes samples is waited for (QEMU on a busy host runs slowly); one
// that has taken none for timeout fails the test.
func (h *host) waitHolding(timeout time.Duration) *sample.Header {
	h.t.Helper()
	deadline, taken := time.Now().Add(timeout), uint32(0)
	for {
		hd := h.status()
		if hd.State == sample.StateHolding {
			return hd
		}
		if hd.Taken != taken {
			deadline, taken = time.Now().Add(timeout), hd.Taken
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("run still %v, no sample taken for %v (taken %d)", hd.State, timeout, hd.Taken)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// capture is what one drain or stream run delivered.
type capture struct {
	header  *sample.Header
	records []sample.Record
	threads []device.Thread
	tops    []sample.StackTop // protocol 1.3's STACK_TOP frames
	end     *device.End
}

// collect reads DATA, THREADS and STACK_TOP frames until END; records must be
// consecutive from index from.
func (h *host) collect(c *capture, from uint32, timeout time.Duration) {
	h.t.Helper()
	for {
		switch f := h.next(timeout).(type) {
		case *device.HeaderFrame:
			c.header = &f.Header
		case *device.Data:
			if want := from + uint32(len(c.records)); f.First != want {
				h.t.Fatalf("DATA frame starts at record %d, want %d", f.First, want)
			}
			c.records = append(c.records, f.Records...)
		case *device.Threads:
			c.threads = append(c.threads, f.Entries...)
		case *device.StackTopFrame:
			c.tops = append(c.tops, f.StackTop)
		case *device.End:
			c.end = f
			return
		case *device.Reply:
			h.t.Fatalf("unexpected REPLY %v to %v", f.Status, f.Command)
		}
	}
}

// snapshot runs one snapshot of count samples and drains it.
func (h *host) snapshot(start device.Start) *capture {
	h.t.Helper()
	start.Mode = sample.ModeSnapshot
	if r := h.command(&start); r.Status != device.StatusOK {
		h.t.Fatalf("START: %v", r.Status)
	}
	h.waitHolding(60 * time.Second)
	h.send(&device.Drain{})
	c := &capture{}
	h.collect(c, 0, 30*time.Second)
	if r := h.command(&device.Done{}); r.Status != device.StatusOK {
		h.t.Fatalf("DONE: %v", r.Status)
	}
	return c
}

// symtab finds the function containing an address.
type symtab struct {
	funcs []elf.Symbol // FUNC symbols with a size, sorted by address
}

func loadSymbols(t *testing.T, elfPath string) (*elf.File, *symtab) {
	t.Helper()
	f, err := elf.Open(elfPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	st := &symtab{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 {
			s.Value &^= 1 // Thumb bit
			st.funcs = append(st.funcs, s)
		}
	}
	sort.Slice(st.funcs, func(i, j int) bool { return st.funcs[i].Value < st.funcs[j].Value })
	return f, st
}

// lookup returns the function containing pc, or "" when none does.
func (s *symtab) lookup(pc uint32) string {
	i := sort.Search(len(s.funcs), func(i int) bool { return s.funcs[i].Value > uint64(pc) }) - 1
	if i >= 0 && uint64(pc) < s.funcs[i].Value+s.funcs[i].Size {
		return s.funcs[i].Name
	}
	return ""
}

// symbol returns the one symbol called name.
func symbol(t *testing.T, f *elf.File, name string) elf.Symbol {
	t.Helper()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var found []elf.Symbol
	for _, s := range syms {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d symbols named %s, want 1", len(found), name)
	}
	return found[0]
}

// buildID returns the descriptor of the ELF's .note.gnu.build-id.
func buildID(f *elf.File) ([]byte, error) {
	sec := f.Section(".note.gnu.build-id")
	if sec == nil {
		return nil, errors.New("no .note.gnu.build-id section")
	}
	data, err := sec.Data()
	if err != nil {
		return nil, err
	}
	if len(data) < 16 {
		return nil, fmt.Errorf("build-id note of %d bytes", len(data))
	}
	namesz := f.ByteOrder.Uint32(data[0:])
	descsz := f.ByteOrder.Uint32(data[4:])
	off := 12 + (namesz+3)&^3
	if uint64(off)+uint64(descsz) > uint64(len(data)) {
		return nil, errors.New("truncated build-id note")
	}
	return data[off : off+descsz], nil
}
