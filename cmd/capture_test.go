// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/tcmprof/tcmprof/sample"
	"github.com/tcmprof/tcmprof/sample/device"
	"github.com/tcmprof/tcmprof/sample/device/devicetest"
)

func scriptedDevice(capacity uint32, faults devicetest.Faults) *devicetest.Device {
	return &devicetest.Device{
		Capacity: capacity, CPUHz: 600_000_000, TimerHz: 24_000_000, DefaultRateHz: 10_000, MaxRateHz: 100_000,
		BuildID: bytes.Repeat([]byte{0xab}, 20), Threads: []device.Thread{{ID: 0x20001000, Name: "main"}},
		Seed: 9, RunTime: 20 * time.Millisecond, StreamBatch: 64, StreamPeriod: 2 * time.Millisecond, Faults: faults,
	}
}

func checkCaptureFile(t *testing.T, d *devicetest.Device, path string, want int) *sample.Capture {
	t.Helper()
	c, err := sample.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Records) != want || len(c.Missing) != 0 {
		t.Fatalf("%s: %d records, missing %v; want %d", path, len(c.Records), c.Missing, want)
	}
	for _, r := range c.Records {
		if !reflect.DeepEqual(r, d.Record(r.Index)) {
			t.Fatalf("record %d = %+v, device sent %+v", r.Index, r, d.Record(r.Index))
		}
	}
	return c
}

func dirNames(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestCaptureSnapshotThenInfo(t *testing.T) {
	d := scriptedDevice(4096, devicetest.Faults{LogBetween: 0.05, Seed: 2})
	port, _, _ := devicetest.ServePty(t, d)
	dir := t.TempDir()
	out, raw := filepath.Join(dir, "run.tcmcap"), filepath.Join(dir, "run.raw")
	code, _, stderr := tcmprof("capture", "--port", port, "--rate", "20000", "--jitter", "10", "--fields", "pc,lr",
		"--samples", "3000", "--raw", raw, "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "device: <inf> app: between frames") || !strings.Contains(stderr, "3000 records (pc,lr, snapshot mode), 0 missing") {
		t.Errorf("stderr:\n%s", stderr)
	}
	c := checkCaptureFile(t, d, out, 3000)
	h := c.Header
	if h.Stored != 3000 || h.Fields != sample.FieldPC|sample.FieldLR || h.JitterPct != 10 || h.IntervalTicks != 24_000_000/20_000 ||
		!bytes.Equal(h.BuildID, d.BuildID) || c.Host.Port != port || c.Host.Baud != 115200 {
		t.Errorf("header %+v host %+v", h, c.Host)
	}
	// The raw file holds every byte received, and decodes to the same records.
	rawBytes, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	// (The raw file also has the answer to DONE, sent after the capture was saved.)
	if uint64(len(rawBytes)) < c.Stats.Bytes {
		t.Errorf("raw file %d bytes, stats say %d received", len(rawBytes), c.Stats.Bytes)
	}
	var fromRaw int
	for _, ev := range device.NewDecoder(h.Fields).Feed(rawBytes) {
		if data, ok := ev.Frame.(*device.Data); ok {
			fromRaw += len(data.Records)
		}
	}
	if fromRaw != 3000 {
		t.Errorf("raw file decodes to %d records", fromRaw)
	}

	// info says what the run was (its layout is pinned by TestGoldenOutputs).
	code, stdout, _ := tcmprof("info", "--json", out)
	var js captureInfo
	if code != 0 || json.Unmarshal([]byte(stdout), &js) != nil || js.Records != 3000 || js.Stored != 3000 || js.EndIndex != 3000 ||
		len(js.Missing) != 0 || js.RateHz != 20000 || js.JitterPct != 10 || js.Fields != "pc,lr" ||
		js.BuildID != hex.EncodeToString(d.BuildID) || js.Host.Port != port {
		t.Errorf("info --json (exit %d):\n%s", code, stdout)
	}
}

func TestCaptureStreamSamples(t *testing.T) {
	d := scriptedDevice(1024, devicetest.Faults{})
	port, _, _ := devicetest.ServePty(t, d)
	out := filepath.Join(t.TempDir(), "s.tcmcap")
	code, _, stderr := tcmprof("capture", "--port", port, "--mode", "stream", "--fields", "pc,lr,ctx", "--samples", "5000", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	c := checkCaptureFile(t, d, out, 5000)
	if c.Header.Mode != sample.ModeStream || c.Threads[0x20001000] != "main" {
		t.Errorf("header %+v threads %v", c.Header, c.Threads)
	}
}

// Stacks through the whole command: the START asks for K, the file keeps
// every stack word, info tells how deep they went.
func TestCaptureStacksThenInfo(t *testing.T) {
	d := scriptedDevice(1024, devicetest.Faults{})
	port, _, _ := devicetest.ServePty(t, d)
	out := filepath.Join(t.TempDir(), "stacks.tcmcap")
	code, _, stderr := tcmprof("capture", "--port", port, "--fields", "pc,ctx,stack", "--stack-words", "40", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	c := checkCaptureFile(t, d, out, 1024)
	if c.Header.StackWords != 40 || c.Header.Fields&sample.FieldStack == 0 {
		t.Errorf("header %+v", c.Header)
	}
	code, stdout, _ := tcmprof("info", out)
	if code != 0 || !strings.Contains(stdout, "40 words per sample at most") || !strings.Contains(stdout, "bytes received per record") {
		t.Errorf("info (exit %d):\n%s", code, stdout)
	}
}

// A device that hangs up half-way: the command writes what arrived with
// its missing ranges, names them, exits non-zero and leaves no temporary
// file; --resume then completes the same file.
func TestCaptureHangUpThenResume(t *testing.T) {
	d := scriptedDevice(4096, devicetest.Faults{Seed: 3, HangUpAfter: 6000, MaxChunk: 64})
	port, _, served := devicetest.ServePty(t, d)
	dir := t.TempDir()
	out := filepath.Join(dir, "run.tcmcap")
	code, _, stderr := tcmprof("capture", "--port", port, "--fields", "pc,lr", "--timeout", "100ms", "-o", out)
	if code == 0 {
		t.Fatal("exit 0 after a hang-up")
	}
	<-served
	if lines := strings.Count(strings.TrimSpace(withoutProgress(stderr)), "\n"); lines != 1 || !strings.Contains(stderr, "records missing (indices ") ||
		!strings.Contains(stderr, "device disconnected") || !strings.Contains(stderr, "; if the device still holds the run, fetch the rest with `tcmprof capture --port "+port+" --resume "+out+"`") {
		t.Errorf("stderr (want the summary and one error line):\n%s", stderr)
	}
	if names := dirNames(t, dir); len(names) != 1 || names[0] != "run.tcmcap" {
		t.Errorf("directory holds %v", names)
	}
	partial, err := sample.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(partial.Missing) == 0 || len(partial.Records) == 0 || uint64(len(partial.Records))+partial.MissingCount() != 4096 {
		t.Fatalf("partial capture: %d records, missing %v", len(partial.Records), partial.Missing)
	}

	d.Faults = devicetest.Faults{}
	port2, _, _ := devicetest.ServePty(t, d)
	code, _, stderr = tcmprof("capture", "--port", port2, "--resume", out)
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	c := checkCaptureFile(t, d, out, 4096)
	if c.Host.Time != partial.Host.Time || c.Stats.Bytes <= partial.Stats.Bytes {
		t.Errorf("resume lost the first session's metadata: %+v vs %+v", c.Host, partial.Host)
	}

	// Resuming the complete file again fetches nothing, succeeds and asks
	// no device (the port does not exist); -o elsewhere gets a copy.
	complete, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, "copy.tcmcap")
	for _, args := range [][]string{{"--resume", out}, {"--resume", out, "-o", copyPath}} {
		code, _, stderr = tcmprof(append([]string{"capture", "--port", filepath.Join(dir, "no-such-port")}, args...)...)
		if code != 0 || !strings.Contains(stderr, "has all its 4096 records: nothing to resume") {
			t.Errorf("%v on a complete capture: exit %d: %s", args, code, stderr)
		}
	}
	for _, path := range []string{out, copyPath} {
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, complete) {
			t.Errorf("%s after resuming a complete capture: %d bytes (want the %d of the capture), %v", path, len(got), len(complete), err)
		}
	}
}

func TestCaptureAttach(t *testing.T) {
	d := scriptedDevice(2048, devicetest.Faults{})
	port, _, _ := devicetest.ServePty(t, d)
	out := filepath.Join(t.TempDir(), "a.tcmcap")
	if code, _, stderr := tcmprof("capture", "--port", port, "--attach", "-o", out); code == 0 || !strings.Contains(stderr, "holds no records") {
		t.Fatalf("attach to an idle device: exit %d: %s", code, stderr)
	}
	// A run left held on the device (as by a tcmprof killed before its
	// drain) is drained by --attach, and a new run is refused meanwhile.
	if err := startHeldRun(port, 1500); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the run to be held", func() bool { return d.Stored() == 1500 })
	if code, _, stderr := tcmprof("capture", "--port", port, "-o", out); code == 0 || !strings.Contains(stderr, "--attach") {
		t.Fatalf("start over a held run: exit %d: %s", code, stderr)
	}
	code, _, stderr := tcmprof("capture", "--port", port, "--attach", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	checkCaptureFile(t, d, out, 1500)
}

// startHeldRun sends START for a snapshot of n samples and goes away.
func startHeldRun(port string, n uint32) error {
	p, err := device.OpenPort(port, 115200)
	if err != nil {
		return err
	}
	s := device.NewSession(p, nil, device.DefaultTimeouts())
	defer s.Close()
	return s.Start(context.Background(), device.Start{Fields: sample.FieldPC, Count: n})
}

func TestCaptureFlagErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"capture", "--port", "/dev/null"}, "no output file"},
		{[]string{"capture", "--resume", filepath.Join(dir, "none.tcmcap")}, "no such file"},
		{[]string{"capture", "--port", filepath.Join(dir, "nope"), "-o", filepath.Join(dir, "x.tcmcap")}, "opening"},
		{[]string{"capture", "--port", "/dev/null", "-o", filepath.Join(dir, "no", "such", "dir", "x.tcmcap")},
			"cannot write " + filepath.Join(dir, "no", "such", "dir", "x.tcmcap") + ": no such file or directory\n"},
		{[]string{"capture", "--port", "/dev/null", "-o", dir}, "cannot write " + dir + ": it is a directory"},
		{[]string{"info", filepath.Join(dir, "none.tcmcap")}, "no such file"},
		{[]string{"capture", "--port", "auto", "--vid", "ffff", "--pid", "fffe", "-o", filepath.Join(dir, "x.tcmcap")}, "no serial port"},
	}
	for _, tt := range tests {
		code, _, stderr := tcmprof(tt.args...)
		if code == 0 || !strings.Contains(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want one line with %q", tt.args, code, stderr, tt.want)
		}
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("failed commands left %v", names)
	}
	bad := filepath.Join(dir, "bad.tcmcap")
	os.WriteFile(bad, []byte("tcmcap 1.0\n\x05\x00\x00\x00{}"), 0o644)
	if code, _, stderr := tcmprof("info", bad); code == 0 || !strings.Contains(stderr, "truncated") {
		t.Errorf("info on a truncated file: exit %d %q", code, stderr)
	}
}

// drainingCapture is a tcmprof capture process caught in its drain, and
// the scripted device it drains.
type drainingCapture struct {
	device *devicetest.Device
	port   string
	proc   *exec.Cmd
	stderr *bytes.Buffer
}

// startDraining serves a device of 4096 PC records whose drain stalls for
// stall once stallAfter bytes are sent, starts a tcmprof capture process on
// it with args, a --raw log at raw and a 10 s reply time-out, and returns
// once the raw log holds half of stallAfter: the drain has begun.
func startDraining(t *testing.T, stallAfter int64, stall time.Duration, raw string, args ...string) drainingCapture {
	t.Helper()
	d := scriptedDevice(4096, devicetest.Faults{StallAfter: stallAfter, Stall: stall})
	port, _, _ := devicetest.ServePty(t, d)
	p, stderr := startTcmprof(t, append([]string{"capture", "--port", port, "--timeout", "10s", "--raw", raw}, args...)...)
	waitFor(t, "the drain to start", func() bool {
		fi, err := os.Stat(raw)
		return err == nil && fi.Size() > stallAfter/2
	})
	return drainingCapture{d, port, p, stderr}
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// SIGINT (Ctrl-C) or SIGTERM in stream mode stops the run and the capture
// is written whole.
func TestCaptureStreamInterrupt(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			d := scriptedDevice(1024, devicetest.Faults{})
			port, _, _ := devicetest.ServePty(t, d)
			out := filepath.Join(t.TempDir(), "i.tcmcap")
			p, stderr := startTcmprof(t, "capture", "--port", port, "--mode", "stream", "-o", out)
			waitFor(t, "streamed records", func() bool { return d.Stored() > 2000 })
			p.Process.Signal(sig)
			if err := p.Wait(); err != nil {
				t.Fatalf("%v: %s", err, stderr)
			}
			again := "Ctrl-C again to stop now"
			if sig == syscall.SIGTERM {
				again = "a second signal (SIGTERM again, or Ctrl-C) stops now"
			}
			if !strings.HasPrefix(withoutProgress(stderr.String()), "tcmprof: stopping the run, then receiving what it took; "+again+"\n") {
				t.Errorf("stderr does not start with the notice:\n%s", stderr)
			}
			c, err := sample.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			checkCaptureFile(t, d, out, int(d.Stored()))
			if len(c.Records) < 2000 || c.Header.Stored != uint32(len(c.Records)) {
				t.Errorf("%d records, header %+v", len(c.Records), c.Header)
			}
		})
	}
}

// A capture killed (SIGKILL) in the middle of its drain leaves no capture
// file and no temporary file behind: only the raw byte log.
func TestCaptureKilledLeavesNoPartialFile(t *testing.T) {
	dir := t.TempDir()
	c := startDraining(t, 4000, 5*time.Second, filepath.Join(dir, "k.raw"), "-o", filepath.Join(dir, "k.tcmcap"))
	c.proc.Process.Kill()
	c.proc.Wait()
	if names := dirNames(t, dir); len(names) != 1 || names[0] != "k.raw" {
		t.Errorf("after SIGKILL the directory holds %v", names)
	}
}

// info says the device dropped samples for want of room only when it
// counted drops: a run that dropped none says so, not "(buffer full)".
func TestInfoDrops(t *testing.T) {
	c, err := sample.ReadFile(filepath.Join("..", "sample", "testdata", "v1.0-qemu-demo.tcmcap"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dropped uint32
		want    string
	}{
		{0, "samples   300 taken, 300 stored, none dropped\n"},
		{7, "samples   307 taken, 300 stored, 7 dropped by the device: its buffer was full when they were taken\n"},
	} {
		c.Header.Taken, c.Header.Dropped = c.Header.Stored+tc.dropped, tc.dropped
		path := filepath.Join(t.TempDir(), "run.tcmcap")
		if err := sample.WriteFile(path, c); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := tcmprof("info", path)
		if code != 0 || !strings.Contains(stdout, tc.want) {
			t.Errorf("%d dropped: exit %d, want the line %q in\n%s%s", tc.dropped, code, tc.want, stdout, stderr)
		}
	}
}

// --samples above what the device's buffer holds is said, with the
// device's own figure, and the snapshot is the buffer's worth.
func TestCaptureSamplesOverCapacity(t *testing.T) {
	d := scriptedDevice(1024, devicetest.Faults{})
	port, _, _ := devicetest.ServePty(t, d)
	out := filepath.Join(t.TempDir(), "big.tcmcap")
	code, _, stderr := tcmprof("capture", "--port", port, "--samples", "5000", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "tcmprof: warning: --samples 5000 is more than the device's buffer holds with --fields pc (1024 records)") {
		t.Errorf("stderr:\n%s", stderr)
	}
	checkCaptureFile(t, d, out, 1024)
	if code, _, stderr := tcmprof("capture", "--port", port, "--samples", "1000", "-o", out); code != 0 || strings.Contains(stderr, "warning") {
		t.Errorf("--samples within the buffer: exit %d\n%s", code, stderr)
	}
}

// When the output can not be written after all (here its directory went
// away during the drain), the records are kept in the temporary directory
// and the error says where.
func TestCaptureKeepsRunWhenOutputFails(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	outDir := filepath.Join(t.TempDir(), "out")
	if err := os.Mkdir(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := startDraining(t, 2000, time.Second, filepath.Join(t.TempDir(), "run.raw"), "-o", filepath.Join(outDir, "run.tcmcap"))
	p, stderr, d := c.proc, c.stderr, c.device
	if err := os.RemoveAll(outDir); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); err == nil {
		t.Fatalf("exit 0 though the output could not be written:\n%s", stderr)
	}
	kept, _ := filepath.Glob(filepath.Join(tmp, "tcmprof-*.tcmcap"))
	if len(kept) != 1 || !strings.Contains(stderr.String(), "the capture is kept in "+kept[0]) || strings.Count(stderr.String(), "tcmprof: ") != 1 {
		t.Fatalf("kept %v; stderr:\n%s", kept, stderr)
	}
	checkCaptureFile(t, d, kept[0], 4096)
}

// capture -o - writes the capture to standard output; when standard output
// fails, the run is kept in the temporary directory as it is for a file.
func TestCaptureToStdout(t *testing.T) {
	d := scriptedDevice(1024, devicetest.Faults{})
	port, _, _ := devicetest.ServePty(t, d)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	args := []string{"capture", "--port", port, "-o", "-"}

	code, stdout, stderr := tcmprof(args...)
	if code != 0 || !strings.Contains(stderr, "standard output: 1024 records") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if c, err := sample.Parse(strings.NewReader(stdout)); err != nil || len(c.Records) != 1024 {
		t.Fatalf("standard output is not the capture: %v", err)
	}

	var errb bytes.Buffer
	code = Main(Streams{In: strings.NewReader(""), Out: closedOutput{}, Err: &errb}, args)
	kept, _ := filepath.Glob(filepath.Join(tmp, "tcmprof-*.tcmcap"))
	if code == 0 || len(kept) != 1 || !strings.Contains(errb.String(), "writing standard output: "+os.ErrClosed.Error()+"; the capture is kept in "+kept[0]) {
		t.Fatalf("exit %d, kept %v; stderr:\n%s", code, kept, &errb)
	}
	checkCaptureFile(t, d, kept[0], 1024)
}

// closedOutput is a standard output that was closed.
type closedOutput struct{}

func (closedOutput) Write([]byte) (int, error) { return 0, os.ErrClosed }

// Signals during a drain, to a real tcmprof process: the first Ctrl-C or
// SIGTERM is not ignored in silence but finishes the drain, and says so;
// a second one stops at once, keeps the records that arrived, and says why
// in words.
func TestCaptureSignalsDuringDrain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		signals []syscall.Signal
		want    string // in the error line; "" for a whole capture and exit 0
	}{
		{"Ctrl-C finishes the drain", []syscall.Signal{syscall.SIGINT}, ""},
		{"SIGTERM finishes the drain", []syscall.Signal{syscall.SIGTERM}, ""},
		{"second Ctrl-C stops now", []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, "stopped by a second Ctrl-C"},
		{"Ctrl-C then SIGTERM stops now", []syscall.Signal{syscall.SIGINT, syscall.SIGTERM}, "stopped by a second signal (SIGTERM)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The device stalls 3 s into its drain, within the 10 s reply
			// time-out: the signals come while the drain waits.
			out := filepath.Join(t.TempDir(), "run.tcmcap")
			run := startDraining(t, 2000, 3*time.Second, filepath.Join(t.TempDir(), "run.raw"), "-o", out)
			p, stderr, d := run.proc, run.stderr, run.device
			for _, sig := range tc.signals {
				p.Process.Signal(sig)
				time.Sleep(300 * time.Millisecond)
			}
			err := p.Wait()
			again := "Ctrl-C again to stop now"
			if tc.signals[0] == syscall.SIGTERM { // no "Ctrl-C again" after a SIGTERM
				again = "a second signal (SIGTERM again, or Ctrl-C) stops now"
			}
			if !strings.HasPrefix(withoutProgress(stderr.String()), "tcmprof: finishing the drain; "+again+"\n") {
				t.Errorf("stderr does not start with the notice:\n%s", stderr)
			}
			if strings.Contains(stderr.String(), "context canceled") {
				t.Errorf("stderr:\n%s", stderr)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("%v\n%s", err, stderr)
				}
				checkCaptureFile(t, d, out, 4096)
				return
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			last := lines[len(lines)-1]
			if err == nil || !strings.Contains(last, tc.want) || !strings.Contains(last, "if the device still holds the run, fetch the rest with") {
				t.Fatalf("exit %v, last line %q; want %q", err, last, tc.want)
			}
			c, rerr := sample.ReadFile(out)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if g := c.Gaps(); g == nil || !g.AtEnd || len(c.Records) == 0 {
				t.Errorf("%d records, missing %v: want the first records and the rest missing at the end", len(c.Records), c.Missing)
			}
			for _, r := range c.Records {
				if !reflect.DeepEqual(r, d.Record(r.Index)) {
					t.Fatalf("record %d = %+v, device sent %+v", r.Index, r, d.Record(r.Index))
				}
			}
		})
	}
}

// Two captures on one port: the second is refused at once, naming the
// process that has the port, while the first goes on undisturbed.
func TestCapturePortInUse(t *testing.T) {
	dir := t.TempDir()
	c := startDraining(t, 2000, 2*time.Second, filepath.Join(dir, "first.raw"), "-o", filepath.Join(dir, "first.tcmcap"))
	first, firstErr, d, port := c.proc, c.stderr, c.device, c.port
	for _, args := range [][]string{
		{"capture", "--port", port, "-o", filepath.Join(dir, "second.tcmcap")},
		{"capture", "--port", port, "--attach", "-o", filepath.Join(dir, "second.tcmcap")},
	} {
		code, _, stderr := tcmprof(args...)
		want := fmt.Sprintf("tcmprof: opening %s: the port is in use by PID %d (", port, first.Process.Pid)
		if code != 1 || !strings.HasPrefix(stderr, want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v while another capture drains: exit %d\n%s\nwant %q...", args, code, stderr, want)
		}
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("the first capture: %v\n%s", err, firstErr)
	}
	checkCaptureFile(t, d, filepath.Join(dir, "first.tcmcap"), 4096)
	// The port is free again.
	if code, _, stderr := tcmprof("capture", "--port", port, "--samples", "100", "-o", filepath.Join(dir, "third.tcmcap")); code != 0 {
		t.Errorf("capture after the first ended: exit %d\n%s", code, stderr)
	}
}

// A port where no sampler answers (the console beside it, a device
// without the sampler) is given up on in one line that says so and asks
// whether it is the right port.
func TestCaptureNoSamplerOnPort(t *testing.T) {
	for _, tc := range []struct {
		name   string
		output string // what the other end writes once
		want   string
		absent string
	}{
		{"silent", "", "no answer to STATUS after 2 tries, and no sampler frame at all (0 bytes received, 0 log lines): is this the sampler's port, not the console", ""},
		// The tty's input processing decides how many bytes and lines.
		{"a console", "uart:~$ hello\r\n", "no sampler frame at all (", "(0 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			master, tty, err := pty.Open()
			if err != nil {
				t.Skip(err)
			}
			defer master.Close()
			defer tty.Close()
			go io.Copy(io.Discard, master) // the commands, unanswered
			if tc.output != "" {
				master.WriteString(tc.output)
			}
			code, _, stderr := tcmprof("capture", "--port", tty.Name(), "--timeout", "100ms", "--retries", "1", "--quiet",
				"-o", filepath.Join(t.TempDir(), "none.tcmcap"))
			if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) || tc.absent != "" && strings.Contains(stderr, tc.absent) {
				t.Errorf("exit %d, stderr %q; want exit 1 and one line with %q (and not %q)", code, stderr, tc.want, tc.absent)
			}
		})
	}
}

// A rate the host takes but the device was built not to (its own
// maximum, 100 kHz here) is refused by the device, and the error names
// the rate rather than every setting of START.
func TestCaptureRateAboveTheDevicesLimit(t *testing.T) {
	d := scriptedDevice(4096, devicetest.Faults{})
	port, _, _ := devicetest.ServePty(t, d)
	out := filepath.Join(t.TempDir(), "run.tcmcap")
	code, _, stderr := tcmprof("capture", "--port", port, "--rate", "200000", "-o", out)
	want := "tcmprof: the sampler refused START (BAD_ARG): rate 200000 Hz with jitter 25 % is outside the intervals it was built for (a Zephyr build takes at most CONFIG_TCMPROF_SAMPLER_MAX_RATE_HZ, 100000 Hz unless configured)\n"
	if code != 1 || stderr != want {
		t.Errorf("exit %d, stderr %q; want exit 1 and %q", code, stderr, want)
	}
}
