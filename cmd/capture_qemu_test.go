// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tcmprof/tcmprof/elf/board"
	"github.com/tcmprof/tcmprof/firmware-sampler/qemu"
	"github.com/tcmprof/tcmprof/internal/armtest"
	"github.com/tcmprof/tcmprof/internal/qemutest"
	"github.com/tcmprof/tcmprof/profile/profiletest"
	"github.com/tcmprof/tcmprof/sample"
	"github.com/tcmprof/tcmprof/sample/device"
)

// End to end: the demo firmware in QEMU, `tcmprof capture --port
// /dev/pts/N` through cmd.Main, and the capture checked against oracles
// nobody here wrote: readelf for the build-id, addr2line for the PCs.
func TestCaptureQEMU(t *testing.T) {
	armtest.NeedTools(t, "arm-none-eabi-readelf", "arm-none-eabi-addr2line")
	dir := t.TempDir()
	elfPath, _, inst := bootDemo(t)
	wantID := hex.EncodeToString(profiletest.ReadelfBuildID(t, elfPath))

	t.Run("snapshot pc", func(t *testing.T) {
		out := filepath.Join(dir, "pc.tcmcap")
		code, _, stderr := tcmprof("capture", "--port", inst.PTY, "--rate", "10000", "--jitter", "25",
			"--fields", "pc", "--samples", "6000", "--raw", filepath.Join(dir, "pc.raw"), "-o", out)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, stderr)
		}
		if !strings.Contains(stderr, "device: ") {
			t.Errorf("no firmware log lines on stderr:\n%s", stderr)
		}
		c, err := sample.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		h := c.Header
		// The firmware's settings (25 MHz system clock in the mps2-an500
		// model, a 16384-word buffer) and what START asked for.
		if h.ProtoMajor != 1 || h.CPUHz != 25_000_000 || h.IntervalTicks != 25_000_000/10_000 || h.JitterPct != 25 ||
			h.Fields != sample.FieldPC || h.Capacity != 16384 || h.Mode != sample.ModeSnapshot {
			t.Errorf("header %+v", h)
		}
		if h.Taken != 6000 || h.Stored != 6000 || h.Dropped != 0 || len(c.Records) != 6000 || len(c.Missing) != 0 {
			t.Errorf("counts: taken %d stored %d dropped %d, %d records, missing %v", h.Taken, h.Stored, h.Dropped, len(c.Records), c.Missing)
		}
		if hex.EncodeToString(h.BuildID) != wantID {
			t.Errorf("build-id %x, readelf says %s", h.BuildID, wantID)
		}
		checkPCsWithAddr2line(t, elfPath, c.Records)

		// info --json reports the same.
		code, stdout, _ := tcmprof("info", "--json", out)
		var in captureInfo
		if code != 0 || json.Unmarshal([]byte(stdout), &in) != nil || in.Records != 6000 || in.BuildID != wantID || in.RateHz != 10000 {
			t.Errorf("info --json (exit %d): %s", code, stdout)
		}
	})

	t.Run("snapshot pc,lr,ctx", func(t *testing.T) {
		out := filepath.Join(dir, "ctx.tcmcap")
		code, _, stderr := tcmprof("capture", "--port", inst.PTY, "--rate", "10000", "--fields", "pc,lr,ctx", "--quiet", "-o", out)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, stderr)
		}
		c, err := sample.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		// Without --samples the run fills the buffer: 4 words per record.
		if c.Header.Capacity != 4096 || len(c.Records) != 4096 || c.Header.Stored != 4096 || len(c.Threads) == 0 {
			t.Errorf("capacity %d, %d records, stored %d, threads %v", c.Header.Capacity, len(c.Records), c.Header.Stored, c.Threads)
		}
		for _, r := range c.Records {
			if _, ok := c.Threads[r.Thread]; !ok {
				t.Fatalf("record %d: thread %#x not in the thread table %v", r.Index, r.Thread, c.Threads)
			}
		}
	})

	t.Run("stream", func(t *testing.T) {
		out := filepath.Join(dir, "stream.tcmcap")
		code, _, stderr := tcmprof("capture", "--port", inst.PTY, "--mode", "stream", "--rate", "10000",
			"--fields", "pc,lr", "--samples", "20000", "--quiet", "-o", out)
		c, err := sample.ReadFile(out)
		if err != nil {
			t.Fatalf("exit %d, %v:\n%s", code, err, stderr)
		}
		// A stream can not ask again: the records of DATA frames the line
		// damaged are lost, and the capture must say so, exit 1, and keep
		// what arrived. QEMU's pty backend discards what the guest sends
		// while it takes the pty for closed, and it notices a reopened pty
		// by polling, which a loaded machine delays: under load 8 the
		// first 280 records were lost so. More than 1,000 is a fault.
		var lost uint32
		for _, m := range c.Missing {
			lost += m.Len()
		}
		st := c.Stats
		switch {
		case code == 0 && lost > 0, code != 0 && lost == 0:
			t.Fatalf("exit %d with %d records missing:\n%s", code, lost, stderr)
		case lost > 0 && (st.BadFrames+st.CRCErrors == 0 || lost > 1000):
			t.Fatalf("%d records missing with %d bad frames and %d CRC errors:\n%s", lost, st.BadFrames, st.CRCErrors, stderr)
		}
		h := c.Header
		if h.Taken != 20000 || h.Stored+h.Dropped != 20000 || uint32(len(c.Records))+lost != h.Stored {
			t.Errorf("taken %d stored %d dropped %d, %d records, missing %v", h.Taken, h.Stored, h.Dropped, len(c.Records), c.Missing)
		}
	})
}

// bootDemo boots the QEMU demo firmware (the default build, qemutest.Demo)
// with -icount as the firmware's own tests run it (docs/qemu.md): the
// virtual clock follows instructions, so the sampling rate is exact. The
// emulator stops at the test's cleanup, or after three minutes. The test
// is skipped as qemutest.Need says.
func bootDemo(t *testing.T) (elfPath, mapPath string, inst *qemu.Instance) {
	t.Helper()
	qemutest.Need(t)
	demo := qemutest.Demo(t, qemu.BuildOptions{})
	return demo.ELF, demo.Map, qemutest.Boot(t, demo.ELF, qemu.StartOptions{Icount: 3}, 3*time.Minute)
}

// bootAndCapture boots the demo firmware in QEMU (see bootDemo), takes a
// capture named name in the test's directory with the capture flags given,
// and stops the emulator.
func bootAndCapture(t *testing.T, name string, flags ...string) (dir, elfPath, mapPath, capture string) {
	t.Helper()
	dir = t.TempDir()
	elfPath, mapPath, inst := bootDemo(t)
	capture = filepath.Join(dir, name)
	args := append([]string{"capture", "--port", inst.PTY, "-o", capture}, flags...)
	if code, _, stderr := tcmprof(args...); code != 0 {
		t.Fatalf("capture: exit %d\n%s", code, stderr)
	}
	inst.Stop()
	return dir, elfPath, mapPath, capture
}

// checkPCsWithAddr2line asks addr2line for the function of every distinct
// PC: each must be in a function, and none in the sampler's own code.
func checkPCsWithAddr2line(t *testing.T, elfPath string, recs []sample.Record) {
	seen := map[uint32]bool{}
	var pcs []string
	for _, r := range recs {
		if !seen[r.PC] {
			seen[r.PC] = true
			pcs = append(pcs, fmt.Sprintf("0x%x", r.PC))
		}
	}
	sort.Strings(pcs)
	cmd := exec.Command("arm-none-eabi-addr2line", "-f", "-e", elfPath)
	cmd.Stdin = strings.NewReader(strings.Join(pcs, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2*len(pcs) {
		t.Fatalf("addr2line answered %d lines for %d PCs", len(lines), len(pcs))
	}
	funcs := map[string]int{}
	for i := range pcs {
		fn := lines[2*i]
		funcs[fn]++
		if fn == "??" || strings.HasPrefix(fn, "tcmp_sample_isr") || strings.HasPrefix(fn, "tcmp_on_sample") {
			t.Errorf("PC %s is in %q", pcs[i], fn)
		}
	}
	if len(funcs) < 5 {
		t.Errorf("samples in only %d functions: %v", len(funcs), funcs)
	}
	t.Logf("%d distinct PCs in %d functions", len(pcs), len(funcs))
}

// BenchmarkCaptureQEMU drains full snapshot buffers from the demo firmware
// in QEMU: 16,384 PC records, or 8,192 PC+LR records (the buffer holds 16,384
// words); streams 20,000 PC records at the device's default rate (10 kHz),
// and 2,000 records with stacks (PC, LR, EXC, THREAD, K = 32 stack words,
// at 2 kHz, as TestStackProfileOnQEMUDemo does). The time is the drain only
// (a stream's is its sampling time). QEMU's UART is no real link: the
// firmware writes it byte by byte and QEMU passes the bytes to the pty at
// once, so the time measures the emulated firmware and the host, not USB;
// the bytes per sample are what a real link carries. The demo's testbench
// (the code that plays the PC and the network, board.KindTestbench) runs on
// the same core 8 MB above the firmware's code, so every step between the
// two costs a long PC delta that a board, which runs no testbench, never
// sends: firmware-wire-bytes/sample is the received records without the
// testbench's, framed again as the device frames them. The same records
// framed in the record codings of protocols 1.2 and 1.0 give the *-v1.2
// and *-v1.0 figures: the codings compared on one set of samples,
// whatever the workload did in this run.
func BenchmarkCaptureQEMU(b *testing.B) {
	qemutest.Need(b) // before the build, which -short would waste
	fw := qemutest.Demo(b, qemu.BuildOptions{})
	inst := qemutest.Boot(b, fw.ELF, qemu.StartOptions{Icount: 3}, time.Hour)
	ctx := context.Background()
	port, err := device.OpenPort(inst.PTY, 115200)
	if err != nil {
		b.Fatal(err)
	}
	s := device.NewSession(port, nil, device.DefaultTimeouts())
	defer s.Close()
	demo, err := board.ByName("qemu-demo")
	if err != nil {
		b.Fatal(err)
	}
	stack := sample.FieldPC | sample.FieldLR | sample.FieldExc | sample.FieldThread | sample.FieldStack
	for _, run := range []struct {
		name   string
		fields sample.Fields
		stream *device.Start // nil: a full snapshot, drained
	}{
		{"pc", sample.FieldPC, nil},
		{"pc,lr", sample.FieldPC | sample.FieldLR, nil},
		{"pc-stream", sample.FieldPC, &device.Start{JitterPct: device.DefaultJitterPct, Fields: sample.FieldPC, Count: 20000}},
		// Streamed: a snapshot holds only 431 stacks.
		{stack.String(), stack, &device.Start{RateHz: 2000, JitterPct: 25, Fields: stack, Count: 2000}},
	} {
		b.Run(run.name, func(b *testing.B) {
			var bytes, records uint64
			codings := []sample.Coding{sample.CodingV14, sample.CodingV12, sample.CodingV10}
			var fw, all [3]struct{ bytes, records uint64 }
			for b.Loop() {
				var c *sample.Capture
				var received uint64
				if run.stream != nil {
					before := s.Stats().Bytes
					c, err = s.Stream(ctx, *run.stream, 0, nil)
					received = s.Stats().Bytes - before
				} else {
					c, received, err = drainSnapshot(b, ctx, s, run.fields)
				}
				if err != nil {
					b.Fatal(err)
				}
				if c.Header.Coding != sample.CodingV14 {
					b.Fatalf("the firmware codes records in %v, want 1.4", c.Header.Coding)
				}
				bytes += received
				records += uint64(len(c.Records))
				for i, coding := range codings {
					n, recs := wireBytes(b, run.fields, coding, firmwareRecords(demo, c.Records))
					fw[i].bytes += n
					fw[i].records += recs
					n, recs = wireBytes(b, run.fields, coding, c.Records)
					all[i].bytes += n
					all[i].records += recs
				}
			}
			b.ReportMetric(float64(bytes)/float64(records), "wire-bytes/sample")
			for i, coding := range codings {
				suffix := "" // the device's own coding: on the line, wire-bytes/sample above
				if coding != sample.CodingV14 {
					suffix = "-v" + coding.String()
					b.ReportMetric(float64(all[i].bytes)/float64(all[i].records), "wire-bytes"+suffix+"/sample")
				}
				b.ReportMetric(float64(fw[i].bytes)/float64(fw[i].records), "firmware-wire-bytes"+suffix+"/sample")
			}
			b.ReportMetric(float64(records)/float64(b.N), "records/run")
		})
	}
}

// drainSnapshot takes a full snapshot and drains it; received is the
// bytes of the drain (not of the STATUS polls that waited for the run).
func drainSnapshot(b *testing.B, ctx context.Context, s *device.Session, fields sample.Fields) (c *sample.Capture, received uint64, err error) {
	b.StopTimer()
	if err := s.Start(ctx, device.Start{RateHz: 20000, Fields: fields}); err != nil {
		return nil, 0, err
	}
	var h *sample.Header
	for h == nil || h.State != sample.StateHolding {
		time.Sleep(10 * time.Millisecond)
		if h, err = s.Status(ctx); err != nil {
			return nil, 0, err
		}
	}
	b.StartTimer()
	before := s.Stats().Bytes
	c, err = s.Drain(ctx, h)
	received = s.Stats().Bytes - before
	if err == nil {
		err = s.Done(ctx)
	}
	return c, received, err
}

// firmwareRecords are the records of recs outside the board's testbench.
func firmwareRecords(b *board.Board, recs []sample.Record) []sample.Record {
	var firmware []sample.Record
	for _, r := range recs {
		if kind, _ := b.Classify(r.PC, nil); kind != board.KindTestbench {
			firmware = append(firmware, r)
		}
	}
	return firmware
}

// wireBytes frames recs as the device would send them in coding
// (device.DataWriter, one full DATA frame after another) and returns
// their bytes on the wire and their count.
func wireBytes(tb testing.TB, fields sample.Fields, coding sample.Coding, recs []sample.Record) (bytes, records uint64) {
	w := device.NewDataWriter(fields, coding)
	for first := 0; first < len(recs); {
		d := w.Fill(uint32(first), recs[first:])
		frame, err := device.EncodeFrame(d)
		if err != nil {
			tb.Fatal(err)
		}
		bytes += uint64(len(frame))
		first += len(d.Records)
	}
	return bytes, uint64(len(recs))
}
