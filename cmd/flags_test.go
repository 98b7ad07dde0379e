// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/tcmprof/tcmprof/place"
	"github.com/tcmprof/tcmprof/sample"
	"github.com/tcmprof/tcmprof/sample/device"
	"github.com/tcmprof/tcmprof/sim"
)

// The flag tests run each command with a runF that keeps its options: what
// the command line parses and validates to, with no firmware, capture or
// device behind it.

func TestCaptureFlags(t *testing.T) {
	o, err := parseFlags(newCaptureCmd, "--port", "/dev/ttyACM0", "--rate", "20000", "--jitter", "10",
		"--fields", "pc,lr,ctx", "--mode", "stream", "--samples", "5000", "--duration", "2s", "-o", "run.tcmcap")
	if err != nil {
		t.Fatal(err)
	}
	want := device.Start{Mode: sample.ModeStream, Fields: sample.FieldPC | sample.FieldLR | sample.FieldExc | sample.FieldThread,
		RateHz: 20000, JitterPct: 10, Count: 5000, DurationMS: 2000}
	if o.request != want || o.device.port != "/dev/ttyACM0" || o.out != "run.tcmcap" || o.duration != 2*time.Second {
		t.Errorf("request %+v, port %q, out %q; want %+v", o.request, o.device.port, o.out, want)
	}
	// The defaults: a snapshot of PCs, jittered as the sampler's own
	// default, from the port found by USB id.
	o, err = parseFlags(newCaptureCmd, "-o", "x.tcmcap")
	if err != nil {
		t.Fatal(err)
	}
	if o.request != (device.Start{Mode: sample.ModeSnapshot, Fields: sample.FieldPC, JitterPct: 25}) || o.device.port != "auto" ||
		o.device.match.VID != device.DefaultVID || o.device.timeout != device.DefaultTimeouts().Reply {
		t.Errorf("defaults: %+v", o)
	}
	// Stacks bring LR with them; K goes with them.
	o, err = parseFlags(newCaptureCmd, "--fields", "pc,stack", "--stack-words", "48", "-o", "s.tcmcap")
	if err != nil {
		t.Fatal(err)
	}
	if want := (device.Start{Mode: sample.ModeSnapshot, Fields: sample.FieldPC | sample.FieldLR | sample.FieldStack, JitterPct: 25, StackWords: 48}); o.request != want {
		t.Errorf("stacks: %+v, want %+v", o.request, want)
	}
	// USB ids are written as the system lists them: four lower-case digits.
	if o, err := parseFlags(newCaptureCmd, "--vid", "0x16C0", "--pid", "483", "-o", "x"); err != nil || o.device.match.VID != "16c0" || o.device.match.PID != "0483" {
		t.Errorf("--vid 0x16C0 --pid 483: %+v, %v", o, err)
	}
	// --resume without -o writes the resumed file back.
	if o, err := parseFlags(newCaptureCmd, "--resume", "held.tcmcap"); err != nil || o.out != "held.tcmcap" {
		t.Errorf("--resume alone: %+v, %v", o, err)
	}
	flagErrors(t, newCaptureCmd, []flagError{
		{[]string{"--port", "/dev/null"}, "no output file"},
		{[]string{"--mode", "burst", "-o", "x"}, `--mode "burst"`},
		{[]string{"--fields", "pc,sp", "-o", "x"}, `unknown field "sp"`},
		{[]string{"--attach", "--resume", "x", "-o", "x"}, "exclude each other"},
		{[]string{"--duration", "-1s", "-o", "x"}, "out of range"},
		{[]string{"--stack-words", "32", "-o", "x"}, "--stack-words needs --fields with stack"},
		{[]string{"--fields", "stack", "--stack-words", "7", "-o", "x"}, "--stack-words 7: want 8 to 64"},
		{[]string{"--fields", "stack", "--stack-words", "65", "-o", "x"}, "--stack-words 65: want 8 to 64"},
		{[]string{"--timeout", "0s", "-o", "x"}, "--timeout must be positive"},
		{[]string{"--retries", "-1", "-o", "x"}, "--retries not negative"},
		{[]string{"--jitter", "200", "-o", "x"}, "--jitter 200: want 0 to 50"},
		{[]string{"--jitter", "-1", "-o", "x"}, "--jitter -1: want 0 to 50"},
		{[]string{"--baud", "-9600", "-o", "x"}, "--baud -9600: want a positive rate in bits per second"},
		{[]string{"--baud", "0", "-o", "x"}, "--baud 0: want a positive rate"},
		{[]string{"--vid", "zz", "-o", "x"}, "--vid zz: want a USB id of up to four hex digits"},
		{[]string{"--pid", "12345", "-o", "x"}, "--pid 12345: want a USB id"},
		{[]string{"--pid", "+1", "-o", "x"}, "--pid +1: want a USB id"},
		{[]string{"--rate", "1000000000", "-o", "x"}, "--rate 1000000000: want 1 to 1000000 Hz, or 0 for the device's default"},
		{[]string{"-o", "x", "extra"}, "unknown command"},
	})
}

func TestPlanFlags(t *testing.T) {
	o, err := parseFlags(newPlanCmd, "--build-dir", "build", "run.tcmcap", "--budget", "32K", "--exclude", "z_impl_*",
		"--exclude", "net_*.c", "--format", "zephyr", "-o", "itcm.cmake", "--format", "json", "-o", "plan.json")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(o.captures, []captureArg{{"run.tcmcap", 1}}) || o.input.buildDir != "build" || o.budgetBytes != 32<<10 || o.layout != place.LayoutZephyr ||
		!reflect.DeepEqual(o.formats, []string{"zephyr", "json"}) || !reflect.DeepEqual(o.outputs, []string{"itcm.cmake", "plan.json"}) ||
		!reflect.DeepEqual(o.excludes, []string{"z_impl_*", "net_*.c"}) || o.minSamples != place.DefaultMinSamples {
		t.Errorf("%+v", o)
	}
	// No budget is all the free ITCM; json alone lays out as ld does, or
	// as Zephyr does for a west build.
	if o, err := parseFlags(newPlanCmd, "c.tcmcap", "--format", "json", "-o", "p.json"); err != nil || o.budgetBytes != -1 || o.layout != place.LayoutLD {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	if o, err := parseFlags(newPlanCmd, "--build-dir", "build", "c.tcmcap", "--format", "list", "-o", "itcm.txt"); err != nil || o.layout != place.LayoutZephyr {
		t.Errorf("a west build's list: %+v, %v", o, err)
	}
	if o, err := parseFlags(newPlanCmd, "--build-dir", "build", "c.tcmcap", "--format", "ld", "-o", "itcm.ld"); err != nil || o.layout != place.LayoutLD {
		t.Errorf("a west build's ld fragment: %+v, %v", o, err)
	}
	flagErrors(t, newPlanCmd, []flagError{
		{[]string{"c", "--format", "json", "--format", "ld", "-o", "a"}, "2 --format but 1 -o"},
		{[]string{"c", "--format", "yaml", "-o", "a"}, `unknown --format "yaml"`},
		{[]string{"c", "--format", "ld", "-o", "a", "--format", "zephyr", "-o", "b.cmake"}, "make one plan for each"},
		{[]string{"c", "--format", "json", "-o", "a", "--format", "list", "-o", "a"}, "given twice"},
		{[]string{"c", "--format", "zephyr", "-o", "a.cmake", "--format", "list", "-o", "a.conf"}, "given twice"},
		{[]string{"c", "--budget", "12Q", "--format", "json", "-o", "a"}, "--budget"},
		{[]string{"c", "--budget", "-4", "--format", "json", "-o", "a"}, "--budget"},
		{[]string{"c", "--min-samples", "0", "--format", "json", "-o", "a"}, "--min-samples must be"},
		{[]string{"--format", "json", "-o", "a"}, "requires at least 1 arg"},
		{[]string{"c:x", "--format", "json", "-o", "a"}, `c:x: the weight after the last colon, "x", is not a positive number`},
		{[]string{"c:0", "--format", "json", "-o", "a"}, `c:0: the weight after the last colon, "0", is not a positive number`},
	})
}

func TestListingFlags(t *testing.T) {
	if o, err := parseFlags(newRankCmd, "--elf", "fw.elf", "c.tcmcap", "--top", "5", "--json"); err != nil ||
		!reflect.DeepEqual(o.captures, []captureArg{{"c.tcmcap", 1}}) || o.input.elfPath != "fw.elf" || o.top != 5 || !o.json || o.minSamples != place.DefaultMinSamples {
		t.Errorf("rank: %+v, %v", o, err)
	}
	if o, err := parseFlags(newReportCmd, "--elf", "fw.elf", "c.tcmcap", "--icache-size", "16384", "--idle-func", "spin_*",
		"--no-default-idle"); err != nil || o.icache.size != 16384 || !reflect.DeepEqual(o.input.idleFuncs, []string{"spin_*"}) || !o.input.noDefaultIdle {
		t.Errorf("report: %+v, %v", o, err)
	}
	if o, err := parseFlags(newDiffCmd, "--build-dir", "b", "--after-build-dir", "a", "before.tcmcap", "after.tcmcap", "-o", "base.pb.gz"); err != nil ||
		o.before != "before.tcmcap" || o.after != "after.tcmcap" || o.afterBuildDir != "a" || o.out != "base.pb.gz" || o.top != 30 {
		t.Errorf("diff: %+v, %v", o, err)
	}
	if o, err := parseFlags(newSymbolizeCmd, "--elf", "fw.elf", "0x60001234", "60001A3D"); err != nil ||
		!reflect.DeepEqual(o.addrs, []uint32{0x60001234, 0x60001a3d}) {
		t.Errorf("symbolize: %+v, %v", o, err)
	}
	if o, err := parseFlags(newViewCmd, "p.pb.gz", "--http", ":8080", "--no-browser"); err != nil ||
		o.path != "p.pb.gz" || o.addr != ":8080" || !o.noBrowser || o.ctx == nil {
		t.Errorf("view: %+v, %v", o, err)
	}
	if o, err := parseFlags(newVerifyCmd, "--build-dir", "b", "--plan", "p.json"); err != nil || o.input.buildDir != "b" || o.plan != "p.json" {
		t.Errorf("verify: %+v, %v", o, err)
	}
	if o, err := parseFlags(newInfoCmd, "c.tcmcap", "--json"); err != nil || o.capture != "c.tcmcap" || !o.json {
		t.Errorf("info: %+v, %v", o, err)
	}
	if o, err := parseFlags(newProfileCmd, "c.tcmcap", "--elf", "fw.elf", "-o", "p.pb.gz"); err != nil || o.out != "p.pb.gz" {
		t.Errorf("profile: %+v, %v", o, err)
	}
	flagErrors(t, newRankCmd, []flagError{
		{[]string{"c", "--top", "-1"}, "--top must be"},
		{[]string{"c", "--min-samples", "0"}, "--min-samples must be"},
	})
	flagErrors(t, newReportCmd, []flagError{{[]string{"c", "--top", "-1"}, "--top must be"}})
	flagErrors(t, newDiffCmd, []flagError{{[]string{"a", "b", "--top", "-2"}, "--top must be"}, {[]string{"a"}, "accepts 2 arg"}})
	flagErrors(t, newSymbolizeCmd, []flagError{
		{[]string{"--elf", "e", "0x60000000", "0xzz"}, `bad address "0xzz"`},
		{[]string{"--elf", "e", "0x100000000"}, "wider than 32 bits"},
		{[]string{"0x0"}, `required flag(s) "elf" not set`},
	})
	flagErrors(t, newVerifyCmd, []flagError{{[]string{"--elf", "e"}, `required flag(s) "plan" not set`}})
	flagErrors(t, newProfileCmd, []flagError{{[]string{"c", "--elf", "e"}, "no output file: pass -o OUT.pb.gz"}})
}

func TestSimFlags(t *testing.T) {
	o, err := parseFlags(newSimCmd, "--elf", "fw.elf", "--map", "fw.map", "--board", "qemu-demo", "run.trace",
		"--warmup", "300", "--units", "2000", "--policy", "round-robin", "--penalty", "400", "--exclude", "0x60800000-0x60900000",
		"--exclude", "10+20", "--capture", "m.tcmcap", "--rate", "20000", "--jitter", "10", "--clock", "528000000", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if o.trace != "run.trace" || o.input.elfPath != "fw.elf" || o.input.board != "qemu-demo" || o.unit != "zsock_sendto" ||
		o.warmup != 300 || o.units != 2000 || o.cachePolicy != sim.RoundRobin || o.penalty != 400 || !o.json ||
		!reflect.DeepEqual(o.excluded, []sim.Range{{Start: 0x60800000, End: 0x60900000}, {Start: 0x10, End: 0x30}}) ||
		!reflect.DeepEqual(o.sampling, &sim.Sampling{ClockHz: 528000000, RateHz: 20000, JitterPct: 10}) {
		t.Errorf("%+v", o)
	}
	// The defaults: LRU, the report's 500-cycle fill, a unit per zsock_sendto, no capture.
	if o, err := parseFlags(newSimCmd, "--elf", "fw.elf", "-"); err != nil || o.cachePolicy != sim.LRU || o.penalty != 500 ||
		o.sampling != nil || o.trace != "-" || o.top != 30 {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	flagErrors(t, newSimCmd, []flagError{
		{[]string{"t", "--unit", "", "--warmup", "3"}, "--warmup and --units count entries of --unit"},
		{[]string{"t", "--policy", "mru"}, "unknown replacement policy"},
		{[]string{"t", "--exclude", "0x100"}, "want START-END or START+SIZE"},
		{[]string{"t", "--exclude", "0x100-0x100"}, "empty"},
		{[]string{"t", "--exclude", "0x100-0xzz"}, "want START-END or START+SIZE"},
		{[]string{"t", "--capture", "x.tcmcap", "--rate", "0"}, "sampling at 0 Hz"},
		{[]string{"t", "--capture", "x.tcmcap", "--jitter", "100"}, "jitter 100"},
		{[]string{"t", "--top", "-1"}, "--top must be"},
		{[]string{}, "accepts 1 arg"},
	})
}

// A flag value that does not parse is named with what the flag wants, in
// one line, by every command (the root command's flag error rule).
func TestFlagValueErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"capture", "--rate", "-5", "-o", "x"}, "tcmprof: --rate -5: want a whole number from 0 to 4294967295\n"},
		{[]string{"top", "--rate", "fast", "--elf", "x"}, "tcmprof: --rate fast: want a whole number from 0 to 4294967295\n"},
		{[]string{"top", "--jitter", "51", "--elf", "x"}, "tcmprof: --jitter 51: want 0 to 50 (percent)\n"},
		{[]string{"top", "--rate", "1000001", "--elf", "x"}, "tcmprof: --rate 1000001: want 1 to 1000000 Hz, or 0 for the device's default\n"},
		{[]string{"top", "--vid", "zz", "--elf", "x"}, "tcmprof: --vid zz: want a USB id of up to four hex digits, e.g. 2fe3\n"},
		{[]string{"capture", "--stack-words", "300", "-o", "x"}, "tcmprof: --stack-words 300: want a whole number from 0 to 255\n"},
		{[]string{"capture", "--duration", "3", "-o", "x"}, "tcmprof: --duration 3: want a duration such as 500ms, 2s or 1m30s\n"},
		{[]string{"rank", "--top", "x", "c"}, "tcmprof: --top x: want a whole number\n"},
		{[]string{"sim", "--clock", "-1", "t"}, "tcmprof: --clock -1: want a whole number from 0 to 4294967295\n"},
	} {
		code, stdout, stderr := tcmprof(tc.args...)
		if code != 1 || stdout != "" || stderr != tc.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

// A command given the wrong number of arguments (the capture forgotten, a
// file where a flag was meant) says so in one line with its usage.
func TestArgCountErrorsShowUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "--build-dir", "build"}, "requires at least 1 arg(s), only received 0; usage: tcmprof report (--elf FILE | --build-dir DIR) CAPTURE[:WEIGHT]... [flags]"},
		{[]string{"rank"}, "requires at least 1 arg(s), only received 0; usage: tcmprof rank "},
		{[]string{"plan", "--build-dir", "build"}, "received 0; usage: tcmprof plan "},
		{[]string{"profile", "-o", "p.pb.gz"}, "received 0; usage: tcmprof profile "},
		{[]string{"view"}, "received 0; usage: tcmprof view "},
		{[]string{"info"}, "received 0; usage: tcmprof info FILE.tcmcap"},
		{[]string{"sim", "--elf", "x"}, "received 0; usage: tcmprof sim "},
		{[]string{"diff", "before.tcmcap"}, "accepts 2 arg(s), received 1; usage: tcmprof diff BEFORE AFTER"},
		{[]string{"capture", "before.tcmcap"}, `unknown command "before.tcmcap" for "tcmprof capture"; usage: tcmprof capture -o FILE.tcmcap`},
		{[]string{"top", "build"}, `unknown command "build" for "tcmprof top"; usage: tcmprof top `},
		{[]string{"verify", "plan.json"}, `unknown command "plan.json" for "tcmprof verify"; usage: tcmprof verify `},
		{[]string{"bench", "udp-echo"}, "received 0; usage: tcmprof bench udp-echo HOST[:PORT]"},
		{[]string{"bench", "compare", "stock.json"}, "received 1; usage: tcmprof bench compare BEFORE.json AFTER.json"},
	} {
		code, stdout, stderr := tcmprof(tc.args...)
		if code != 1 || stdout != "" || !strings.HasPrefix(stderr, "tcmprof: ") || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and one line with %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

type flagError struct {
	args []string
	want string
}

// flagErrors checks that each command line fails before running, with an
// error that names the problem.
func flagErrors[O any](t *testing.T, newCmd func(Streams, func(*O, Streams) error) *cobra.Command, cases []flagError) {
	t.Helper()
	for _, tc := range cases {
		o, err := parseFlags(newCmd, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: options %+v, error %v; want an error with %q", tc.args, o, err, tc.want)
		}
	}
}
