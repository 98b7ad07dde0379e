// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"bufio"
	"encoding/json"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tcmprof/tcmprof/profile/profiletest"
	"github.com/tcmprof/tcmprof/sample"
	"github.com/tcmprof/tcmprof/sample/device"
	"github.com/tcmprof/tcmprof/sample/device/devicetest"
)

func TestTopFlags(t *testing.T) {
	o, err := parseFlags(newTopCmd, "--port", "/dev/ttyACM0", "--elf", "z.elf", "--fields", "pc,lr", "--rate", "20000",
		"--interval", "500ms", "--window", "5s", "--sort", "density", "--json", "-n", "3", "--inline", "-o", "run.tcmcap")
	if err != nil {
		t.Fatal(err)
	}
	want := device.Start{Mode: sample.ModeStream, Fields: sample.FieldPC | sample.FieldLR, RateHz: 20000, JitterPct: 25}
	if o.request != want || o.device.port != "/dev/ttyACM0" || o.input.elfPath != "z.elf" || o.interval != 500*time.Millisecond ||
		o.window != 5*time.Second || o.sortKey != 1 || !o.batch || o.iterations != 3 || !o.inline || o.out != "run.tcmcap" {
		t.Errorf("%+v", o)
	}
	// The defaults: a 1 s refresh over a 10 s window, by share, interactive.
	o, err = parseFlags(newTopCmd, "--build-dir", "build")
	if err != nil {
		t.Fatal(err)
	}
	if o.request != (device.Start{Mode: sample.ModeStream, Fields: sample.FieldPC, JitterPct: 25}) || o.device.port != "auto" || o.interval != time.Second ||
		o.window != 10*time.Second || o.sortKey != 0 || o.batch || o.cumulative || o.table.top != 30 {
		t.Errorf("defaults: %+v", o)
	}
	flagErrors(t, newTopCmd, []flagError{
		{[]string{"--sort", "name"}, `--sort "name"`},
		{[]string{"--interval", "0s"}, "--interval must be positive"},
		{[]string{"--window", "500ms"}, "--window must be at least one --interval"},
		{[]string{"-n", "-1"}, "--iterations"},
		{[]string{"--fields", "pc,sp"}, `unknown field "sp"`},
		{[]string{"--top", "-2"}, "--top"},
		{[]string{"--jitter", "60"}, "--jitter 60: want 0 to 50"},
		{[]string{"--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"extra"}, "unknown command"},
	})
}

// topDevice is a scripted sampler that replays records at the functions
// of the profile test firmware (profile/testdata), with its build-id, so
// that top can symbolize what it streams: inlined code, a leaf, a library
// function, ITCM code, an interrupt and the WFI idle loop; thread 1 is
// "main", 2 "idle".
func topDevice(t *testing.T) (*devicetest.Device, *profiletest.Firmware) {
	fw := profiletest.Build(t)
	groups := []struct {
		n      int
		pc     uint32
		exc    uint16
		thread uint32
	}{
		{8, fw.Find(t, "hash_buf", `^eor`, 0), 0, 1},
		{5, fw.Entry(t, "leaf_add") + 4, 0, 1},
		{1, fw.Entry(t, "leaf_add") + 4, 24, 1},
		{2, fw.Entry(t, "net_checksum") + 4, 0, 1},
		{1, fw.Entry(t, "fast_scale") + 4, 0, 1},
		{3, fw.Next(t, "idle_loop", fw.Find(t, "idle_loop", `^wfi`, 0)), 0, 2},
	}
	// Interleaved, so that every stretch of the stream has the same mix.
	var replay []sample.Record
	for round := 0; round < 8; round++ {
		for _, g := range groups {
			if round < g.n {
				replay = append(replay, sample.Record{PC: g.pc, LR: fw.Entry(t, "main") | 1, Exc: g.exc, Thread: g.thread})
			}
		}
	}
	d := scriptedDevice(1024, devicetest.Faults{})
	d.BuildID = fw.BuildID(t)
	d.Threads = []device.Thread{{ID: 1, Name: "main"}, {ID: 2, Name: "idle"}}
	d.Replay = replay
	d.StreamRing = 4096
	d.StreamBatch, d.StreamPeriod = 20, 2*time.Millisecond // 10 kHz
	return d, fw
}

// topBlock is one line of top --json.
type topBlock struct {
	Elapsed   float64 `json:"elapsed_s"`
	Mode      string
	Samples   int
	Rate      float64 `json:"samples_per_s"`
	Busy      struct{ Count, Total int }
	Lost      struct{ Device, Link uint64 }
	Regions   []topRow
	Contexts  []topRow
	Functions []topRow
}

type topRow struct {
	Name    string
	Samples int
	Share   struct{ Count, Total int }
}

func (b *topBlock) function(name string) topRow {
	for _, f := range b.Functions {
		if f.Name == name {
			return f
		}
	}
	return topRow{}
}

func parseTopJSON(t *testing.T, out string) []topBlock {
	t.Helper()
	var blocks []topBlock
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var b topBlock
		if err := json.Unmarshal(sc.Bytes(), &b); err != nil {
			t.Fatalf("top --json line %q: %v", sc.Text(), err)
		}
		blocks = append(blocks, b)
	}
	return blocks
}

// reportDoc is what the tests of top read from report --json.
type reportDoc struct {
	Samples   int
	Busy      struct{ Count int }
	Functions []struct {
		Name    string
		Samples int
	}
}

// reportOf runs report --json --top 0 on a capture with the input flags.
func reportOf(t *testing.T, capture string, input ...string) reportDoc {
	t.Helper()
	args := append(append([]string{"report"}, input...), "--json", "--top", "0", capture)
	code, stdout, stderr := tcmprof(args...)
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	var doc reportDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// withinBinomial reports whether the fraction a (of n samples) agrees with
// want within four standard errors of a binomial proportion.
func withinBinomial(a float64, n int, want float64) bool {
	se := math.Sqrt(want * (1 - want) / float64(n))
	return math.Abs(a-want) <= 4*se+1e-9
}

// Batch mode against the scripted device: a JSON line per interval, the
// same figures as report on the capture top writes with -o, thread names
// (read before the stream starts), and every record in the file.
func TestTopBatchJSON(t *testing.T) {
	d, fw := topDevice(t)
	port, _, _ := devicetest.ServePty(t, d)
	out := filepath.Join(t.TempDir(), "top.tcmcap")
	code, stdout, stderr := tcmprof("top", "--port", port, "--elf", fw.ELF, "--map", fw.MapPath, "--fields", "pc,lr,ctx",
		"--json", "-n", "3", "--interval", "300ms", "--cumulative", "--inline", "--top", "0", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	blocks := parseTopJSON(t, stdout)
	if len(blocks) != 3 {
		t.Fatalf("%d JSON lines, want 3:\n%s", len(blocks), stdout)
	}
	last := blocks[2]
	if last.Mode != "cumulative" || last.Samples < blocks[0].Samples || last.Samples < 500 || last.Lost.Device+last.Lost.Link != 0 {
		t.Errorf("last block: %+v", last)
	}
	c := checkCaptureFile(t, d, out, int(d.Stored()))
	if c.Header.Mode != sample.ModeStream || c.Threads[1] != "main" {
		t.Errorf("capture header %+v threads %v", c.Header, c.Threads)
	}
	rep := reportOf(t, out, "--elf", fw.ELF, "--map", fw.MapPath)
	busy := rep.Busy.Count
	if p := float64(busy) / float64(rep.Samples); !withinBinomial(float64(last.Busy.Count)/float64(last.Samples), last.Samples, p) {
		t.Errorf("busy %d of %d; report %d of %d", last.Busy.Count, last.Samples, busy, rep.Samples)
	}
	for _, rf := range rep.Functions {
		want := float64(rf.Samples) / float64(busy)
		if f := last.function(rf.Name); !withinBinomial(float64(f.Samples)/float64(last.Busy.Count), last.Busy.Count, want) {
			t.Errorf("%s: %d of %d busy; report %d of %d", rf.Name, f.Samples, last.Busy.Count, rf.Samples, busy)
		}
	}
	if last.Functions[0].Name != "hash_buf" {
		t.Errorf("hottest %+v", last.Functions[0])
	}
	names := map[string]bool{}
	for _, ctx := range last.Contexts {
		names[ctx.Name] = true
	}
	if !names["main"] || !names["irq 8"] {
		t.Errorf("contexts %+v", last.Contexts)
	}
}

// Loss accounting: a device whose ring overflows, on a line that corrupts
// frames. Drops show as device loss, damaged frames as link loss; top
// warns about the records the file misses but exits 0.
func TestTopLoss(t *testing.T) {
	d, fw := topDevice(t)
	d.StreamRing, d.StreamBatch, d.StreamPeriod = 100, 200, 2*time.Millisecond
	d.Faults = devicetest.Faults{Seed: 5, CorruptOut: 0.0005}
	port, _, _ := devicetest.ServePty(t, d)
	out := filepath.Join(t.TempDir(), "loss.tcmcap")
	code, stdout, stderr := tcmprof("top", "--port", port, "--elf", fw.ELF, "--json", "-n", "4", "--interval", "250ms", "--window", "250ms", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	blocks := parseTopJSON(t, stdout)
	var device, link uint64
	for _, b := range blocks {
		device += b.Lost.Device
		link += b.Lost.Link
	}
	c, err := sample.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("top: %d dropped, %d lost on the link; the capture: %d dropped, %d missing of %d", device, link, c.Header.Dropped, c.MissingCount(), c.Header.Stored)
	if device == 0 || device > uint64(c.Header.Dropped) || link == 0 || link > c.MissingCount() {
		t.Errorf("top: %d dropped, %d lost on the link; the capture: %d dropped, %d missing", device, link, c.Header.Dropped, c.MissingCount())
	}
	if !strings.Contains(stderr, "tcmprof: warning: ") || !strings.Contains(stderr, "records missing") {
		t.Errorf("stderr:\n%s", stderr)
	}
}

// The device hangs up in the middle of the stream: one line says so, the
// capture keeps what arrived, the exit status is not 0.
func TestTopHangUp(t *testing.T) {
	d, fw := topDevice(t)
	d.Faults = devicetest.Faults{Seed: 3, HangUpAfter: 20000}
	port, _, _ := devicetest.ServePty(t, d)
	dir := t.TempDir()
	out := filepath.Join(dir, "cut.tcmcap")
	code, stdout, stderr := tcmprof("top", "--port", port, "--elf", fw.ELF, "-b", "--interval", "100ms", "--timeout", "200ms", "-o", out)
	if code == 0 {
		t.Fatal("exit 0 after a hang-up")
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if msg := lines[len(lines)-1]; !strings.HasPrefix(msg, "tcmprof: device disconnected") || !strings.Contains(msg, out+" holds the ") {
		t.Errorf("stderr:\n%s", stderr)
	}
	if !strings.Contains(stdout, "innermost function, by share") {
		t.Errorf("no block before the hang-up:\n%s", stdout)
	}
	c, err := sample.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Records) == 0 || c.Header.Stored < uint32(len(c.Records)) {
		t.Errorf("%d records, header %+v", len(c.Records), c.Header)
	}
	for _, r := range c.Records {
		if !reflect.DeepEqual(r, d.Record(r.Index)) {
			t.Fatalf("record %d = %+v, device sent %+v", r.Index, r, d.Record(r.Index))
		}
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("directory holds %v", names)
	}
}

// SIGTERM ends a batch run like Ctrl-C: STOP, the rest of the stream, the
// whole capture written, exit 0, and the device is idle (it takes a new
// run).
func TestTopSIGTERM(t *testing.T) {
	d, fw := topDevice(t)
	port, _, _ := devicetest.ServePty(t, d)
	out := filepath.Join(t.TempDir(), "term.tcmcap")
	p, stderr := startTcmprof(t, "top", "--port", port, "--elf", fw.ELF, "-b", "--interval", "100ms", "-o", out)
	waitFor(t, "streamed records", func() bool { return d.Stored() > 3000 })
	p.Process.Signal(syscall.SIGTERM)
	if err := p.Wait(); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	c := checkCaptureFile(t, d, out, int(d.Stored()))
	if c.Header.Stored != uint32(len(c.Records)) || c.Header.State != sample.StateIdle {
		t.Errorf("header %+v", c.Header)
	}
	if code, _, stderr := tcmprof("capture", "--port", port, "--samples", "100", "-o", filepath.Join(t.TempDir(), "next.tcmcap")); code != 0 {
		t.Errorf("the device takes no new run after top: %s", stderr)
	}
}

// top with --fields stack: the view is the same, and the capture written
// with -o keeps the stacks and K for report.
func TestTopStack(t *testing.T) {
	d, fw := topDevice(t)
	for i := range d.Replay {
		r := &d.Replay[i]
		r.SP = 0x20001000 - 4*uint32(i%20)
		for w := range 24 {
			r.Stack = append(r.Stack, uint32(i*100+w))
		}
	}
	port, _, _ := devicetest.ServePty(t, d)
	out := filepath.Join(t.TempDir(), "stack.tcmcap")
	code, stdout, stderr := tcmprof("top", "--port", port, "--elf", fw.ELF, "--fields", "pc,lr,stack", "--stack-words", "16",
		"-b", "-n", "1", "--interval", "300ms", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "leaf_add") {
		t.Errorf("stdout:\n%s", stdout)
	}
	c := checkCaptureFile(t, d, out, int(d.Stored()))
	if c.Header.StackWords != 16 || c.Header.Fields&sample.FieldStack == 0 || len(c.Records) == 0 || len(c.Records[0].Stack) != 16 {
		t.Errorf("header %+v, first record %+v", c.Header, c.Records[0])
	}
}

// top refuses a device that runs another build.
func TestTopBuildIDMismatch(t *testing.T) {
	d, fw := topDevice(t)
	d.BuildID = []byte{1, 2, 3, 4}
	port, _, _ := devicetest.ServePty(t, d)
	code, _, stderr := tcmprof("top", "--port", port, "--elf", fw.ELF, "-b", "-n", "1")
	// It names the device, not a capture, and says what to give instead.
	if code == 0 || !strings.Contains(stderr, "device build-id 01020304 differs from ELF build-id") ||
		!strings.Contains(stderr, "the device's image is another build; give that build's ELF or --build-dir") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if d.Stored() != 0 {
		t.Errorf("the device ran %d samples", d.Stored())
	}
}
