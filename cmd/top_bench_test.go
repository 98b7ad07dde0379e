// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tcmprof/tcmprof/firmware-sampler/qemu"
	"github.com/tcmprof/tcmprof/internal/qemutest"
	"github.com/tcmprof/tcmprof/sample"
	"github.com/tcmprof/tcmprof/sample/device/devicetest"
)

// BenchmarkTopStream100k feeds tcmprof top, as its own process, a stream
// of 100,000 PC+LR samples a second and measures the CPU time it takes
// once warmed up, against tcmprof capture --mode stream (the same stream
// without the live view) in the same run.
//
// The records are recorded: a snapshot of the QEMU demo firmware (real
// PCs and LRs, so the frames compress as a real stream's do), replayed by
// the scripted device over a pty with the firmware's ring (8,192 PC+LR
// records, the demo's): samples are taken on time whether or not the host
// reads, and dropped when the ring is full. So a host that falls behind
// shows as device drops, and a host that loses bytes as missing records.
//
// The metrics are means over the runs (-benchtime Nx), losses summed.
//
//	go test -run '^$' -bench TopStream100k -benchtime 3x ./cmd   (bench/top.sh)
func BenchmarkTopStream100k(b *testing.B) {
	const (
		warmUp  = 5 * time.Second
		measure = 20 * time.Second
	)
	qemutest.Need(b)
	dir := b.TempDir()
	demo := qemutest.Demo(b, qemu.BuildOptions{})
	elfPath, mapPath := demo.ELF, demo.Map
	recorded := recordDemo(b, elfPath, filepath.Join(dir, "recorded.tcmcap"))

	var top, capture streamLoad
	runs := 0
	for b.Loop() {
		run := func(name string, args ...string) streamLoad {
			d := scriptedDevice(8192, devicetest.Faults{})
			d.MaxRateHz = 100_000
			d.BuildID = recorded.Header.BuildID
			d.Replay = recorded.Records
			d.StreamRing = 8192
			d.StreamBatch, d.StreamPeriod = 100, time.Millisecond
			port, _, _ := devicetest.ServePty(b, d)
			out := filepath.Join(dir, name+".tcmcap")
			args = append(args, "--port", port, "--rate", "100000", "--fields", "pc,lr", "--quiet", "-o", out)
			l := measureStream(b, warmUp, measure, out, args...)
			b.Logf("%-30s %5.1f %% of one core over %v, %.0f records/s received; %d dropped by the device, %d missing",
				name, l.cpu, measure, l.rate, l.dropped, l.missing)
			return l
		}
		capture.add(run("tcmprof capture --mode stream", "capture", "--mode", "stream"))
		top.add(run("tcmprof top -b", "top", "--elf", elfPath, "--map", mapPath, "--board", "qemu-demo", "-b", "--interval", "1s"))
		runs++
	}
	b.ReportMetric(top.cpu/float64(runs), "%core-top")
	b.ReportMetric(capture.cpu/float64(runs), "%core-capture")
	b.ReportMetric(top.rate/float64(runs), "records/s-top")
	b.ReportMetric(float64(top.dropped+top.missing), "lost-top")
	b.ReportMetric(float64(capture.dropped+capture.missing), "lost-capture")
}

// recordDemo takes a PC+LR snapshot of the demo firmware in QEMU.
func recordDemo(b *testing.B, elfPath, out string) *sample.Capture {
	inst := qemutest.Boot(b, elfPath, qemu.StartOptions{Icount: 3}, 10*time.Minute)
	defer inst.Stop() // before the measured runs boot their own
	if code, _, stderr := tcmprof("capture", "--port", inst.PTY, "--rate", "10000", "--jitter", "25", "--fields", "pc,lr", "--quiet", "-o", out); code != 0 {
		b.Fatalf("capture: %s", stderr)
	}
	c, err := sample.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// streamLoad is what one process did with the stream.
type streamLoad struct {
	cpu              float64 // percent of one core, after the warm-up
	rate             float64 // records received per second, over the whole run
	dropped, missing uint64
}

func (l *streamLoad) add(o streamLoad) {
	l.cpu += o.cpu
	l.rate += o.rate
	l.dropped += o.dropped
	l.missing += o.missing
}

// measureStream runs tcmprof with args as a child process, reads its CPU
// time from /proc after warmUp and again after measure, then stops it
// with SIGINT and reads the capture it wrote.
func measureStream(b *testing.B, warmUp, measure time.Duration, out string, args ...string) streamLoad {
	p, stderr := startTcmprof(b, args...)
	start := time.Now()
	time.Sleep(warmUp)
	cpu0 := cpuTime(b, p.Process.Pid)
	t0 := time.Now()
	time.Sleep(measure)
	cpu1 := cpuTime(b, p.Process.Pid)
	wall := time.Since(t0)
	p.Process.Signal(syscall.SIGINT)
	if err := p.Wait(); err != nil {
		b.Fatalf("%v: %s", err, stderr)
	}
	elapsed := time.Since(start)
	c, err := sample.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	os.Remove(out)
	return streamLoad{
		cpu:     100 * (cpu1 - cpu0).Seconds() / wall.Seconds(),
		rate:    float64(len(c.Records)) / elapsed.Seconds(),
		dropped: uint64(c.Header.Dropped),
		missing: c.MissingCount(),
	}
}

// cpuTime is the user and system time of process pid so far, from
// /proc/PID/stat (fields 14 and 15, in clock ticks of 1/100 s).
func cpuTime(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", pid, raw)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
