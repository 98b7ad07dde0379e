// SPDX-License-Identifier: Apache-2.0

package qemu

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"

	tcelf "github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/elf/unwind"
	"github.com/tcmprof/tcmprof/internal/armtest"
	"github.com/tcmprof/tcmprof/sample"
	"github.com/tcmprof/tcmprof/sample/device"
)

// gdbStop is one line of testdata/gdb_stops.py's output.
type gdbStop struct {
	PC       uint32     `json:"pc"`
	SP       uint32     `json:"sp"`
	LR       uint32     `json:"lr"`
	XPSR     uint32     `json:"xpsr"`
	Words    []uint32   `json:"words"`
	AtTop    bool       `json:"at_top"`
	StackTop uint32     `json:"stack_top"`
	Frames   []gdbFrame `json:"frames"`
	// The current thread, the top of its stack and the words below it
	// (absent before the first thread runs).
	Thread    uint32   `json:"thread"`
	ThreadTop uint32   `json:"thread_top"`
	Root      []uint32 `json:"root"`
}

type gdbFrame struct {
	PC       uint32 `json:"pc"`
	SP       uint32 `json:"sp"`
	Kind     string `json:"kind"` // normal, inline, tailcall, signal
	Function string `json:"function"`
	File     string `json:"file"`
	Line     int    `json:"line"`
}

// needGDB skips the test without gdb-multiarch, or returns the command.
func needGDB(t *testing.T) string {
	t.Helper()
	armtest.NeedTools(t, "gdb-multiarch")
	return "gdb-multiarch"
}

// freeTCPPort is a loopback port nobody listened on a moment ago.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// gdbStops boots the image with QEMU's gdbstub, starts a stream run as
// `tcmprof capture --fields pc,ctx,stack --mode stream --rate 2000` does
// (so that the sampler's interrupt and its encoder, in the console thread,
// run as in a capture, and are stopped in like the rest), and lets
// gdb_stops.py stop it n times at random moments, reading up to words
// stack words each time.
func gdbStops(t *testing.T, elfPath string, n, seed, words int) []gdbStop {
	t.Helper()
	needQEMU(t)
	port := freeTCPPort(t)
	opts := testOptions()
	opts.GDB = fmt.Sprintf("tcp:127.0.0.1:%d", port)
	h := boot(t, elfPath, opts)
	defer h.stop()
	start := device.Start{RateHz: 2000, Mode: sample.ModeStream, Coding: sample.CodingV14,
		Fields: sample.FieldPC | sample.FieldLR | sample.FieldExc | sample.FieldThread | sample.FieldStack}
	if r := h.command(&start); r.Status != device.StatusOK {
		t.Fatalf("START: %v", r.Status)
	}
	go func() {
		for range h.events { // the records: read, so that the link never stalls the firmware
		}
	}()
	lines := runGDBScript(t, elfPath, "gdb_stops.py", port, fmt.Sprintf("TCMPROF_GDB_STOPS=%d", n),
		fmt.Sprintf("TCMPROF_GDB_SEED=%d", seed), fmt.Sprintf("TCMPROF_GDB_WORDS=%d", words))
	var stops []gdbStop
	for _, line := range lines {
		var s gdbStop
		if err := json.Unmarshal(line, &s); err != nil {
			t.Fatal(err)
		}
		stops = append(stops, s)
	}
	if len(stops) != n {
		t.Fatalf("gdb stopped the firmware %d times, want %d", len(stops), n)
	}
	return stops
}

// gdbFrameName is how a frame is compared: function and line (for a
// caller, the line of the call).
type frameName struct {
	Function string
	Line     int
}

func (f frameName) String() string { return fmt.Sprintf("%s:%d", f.Function, f.Line) }

// gdbPhysical is one frame of the machine's stack in gdb's backtrace: its
// inline frames and itself, innermost first, and its stack pointer. A
// function that left the stack by a tail call (gdb's tailcall frame) goes
// with the frame of its caller, which the same return address reveals.
type gdbPhysical struct {
	names []frameName
	sp    uint32
}

// physicalFrames groups gdb's backtrace into the machine's frames, up to
// the first frame gdb could not name, and up to an exception entry whose
// interrupted context ran on the process stack: QEMU 7.2's gdbstub has no
// PSP, so gdb reads that frame from the wrong stack.
func physicalFrames(frames []gdbFrame) []gdbPhysical {
	var out []gdbPhysical
	var cur gdbPhysical
	for _, f := range frames {
		if f.Kind == "signal" {
			if f.PC&4 != 0 { // EXC_RETURN: the frame is on PSP
				break
			}
			continue
		}
		if f.Function == "" {
			break
		}
		cur.names = append(cur.names, frameName{f.Function, f.Line})
		if f.Kind == "normal" {
			cur.sp = f.SP
			out = append(out, cur)
			cur = gdbPhysical{}
		}
	}
	return out
}

// snapshot is what a sample of s with k stack words holds.
func snapshot(s gdbStop, k int) unwind.Snapshot {
	n := min(k, len(s.Words))
	return unwind.Snapshot{PC: s.PC, SP: s.SP, LR: s.LR, Words: s.Words[:n], AtTop: s.AtTop && len(s.Words) <= k}
}

// frameNames symbolizes each frame into its inline chain; inner is how
// many of the names are the first frame's.
func frameNames(img *tcelf.Image, frames []unwind.Frame) (names []frameName, inner int) {
	for i, f := range frames {
		for _, fr := range img.Symbolize(f.PC) {
			names = append(names, frameName{fr.Function, fr.Line})
		}
		if i == 0 {
			inner = len(names)
		}
	}
	return names, inner
}

// gdbSkipsInline drops the innermost inline frames of the first frame that
// gdb leaves out: stopped on the first instruction of an inlined block,
// gdb shows the code it was inlined into, at the line of the inlined call
// (so that "step" enters it), where the DWARF and llvm-symbolizer already
// place the PC inside the inlined function.
func gdbSkipsInline(got []frameName, inner int, gdb []frameName) ([]frameName, bool) {
	if len(gdb) == 0 || len(got) == 0 || got[0] == gdb[0] {
		return got, false
	}
	for d := 1; d < inner; d++ {
		if got[d].Function == gdb[0].Function {
			return got[d:], true
		}
	}
	return got, false
}

// The host's unwinder, from the PC, SP, LR and stack words a sample
// carries, against gdb's backtrace of the same moment: gdb stops the demo
// firmware at random points while it streams a stack capture at the
// default settings (gdbStops); every frame gdb shows whose return address
// lies inside the snapshot (and any further frame the unwinder gives) is
// compared by function and call-site line, inline frames and tail calls
// included; the innermost by function (its line is the sampled PC's).
//
// At K = 32 the stops' stacks are then completed as the profile completes
// a capture's (unwind.Unwinder.UnwindThread and CompleteStacks): from the
// other stops of the same thread that saw the same activation (function
// and CFA), and with the words below the top of the thread's stack that
// the sampler sends at the end of a run (STACK_TOP, taken from a real run
// of the same image). Every completed frame is compared with gdb's like
// the others, and a stack that claims to be complete must hold all of
// gdb's frames. Under the stream many of the stops fall in the
// console thread's encoder, whose 22- and 24-word frames (send_data,
// tcmp_data_add) leave most of them short of the root at K = 32.
func TestUnwindAgreesWithGDB(t *testing.T) {
	elfPath, _ := defaultImage(t)
	needGDB(t)
	stops := gdbStops(t, elfPath, 300, 1, 64)
	img, err := tcelf.Open(elfPath)
	if err != nil {
		t.Fatal(err)
	}
	u, err := unwind.New(img)
	if err != nil || !u.HasCFI() {
		t.Fatalf("no CFI: %v", err)
	}
	tops := sentStackTops(t, elfPath, stops)
	for _, c := range []struct {
		name            string
		k               int
		complete, roots bool
		// The share of stops whose stack must reach its root (the
		// thread's entry or the exception entry); 0: not asserted.
		wantComplete float64
	}{
		{"K=32", 32, false, false, 0},
		{"K=64", 64, false, false, 0},
		{"K=32,completed", 32, true, false, 0},
		{"K=32,completed,roots", 32, true, true, 0.95},
	} {
		t.Run(c.name, func(t *testing.T) {
			unwound := make([]unwind.Stack, len(stops))
			for i, s := range stops {
				snap := snapshot(s, c.k)
				if r, ok := tops[s.Thread]; c.roots && ok {
					snap.Root, snap.Top = r.Words, r.Top
				}
				unwound[i] = u.UnwindThread(snap, s.Thread)
			}
			if c.complete {
				u.CompleteStacks(unwound)
			}
			if complete := compareWithGDB(t, img, stops, c.k, unwound); complete < c.wantComplete {
				t.Errorf("%.1f %% of the stacks are complete, want at least %.0f %%", 100*complete, 100*c.wantComplete)
			}
		})
	}
}

// sentStackTops are the STACK_TOP frames the sampler sends at the end of
// a run of the same image, in another boot, by thread: the words the
// profile unwinds with. Each thread's top must be the one gdb read from
// its k_thread; the words may differ from those gdb read at the thread's
// last stop where the entry function keeps live locals (which the
// unwinder never reads), not in the saved registers: the oracle's
// agreement checks that.
func sentStackTops(t *testing.T, elfPath string, stops []gdbStop) map[uint32]sample.StackTop {
	t.Helper()
	h := boot(t, elfPath, testOptions())
	defer h.stop()
	c := h.snapshot(device.Start{RateHz: 2000, Count: 200, StackWords: 32,
		Fields: sample.FieldPC | sample.FieldLR | sample.FieldExc | sample.FieldThread | sample.FieldStack})
	if c.header.ProtoMinor < 3 || len(c.tops) == 0 || len(c.tops) != len(c.threads) {
		t.Fatalf("protocol 1.%d sampler sent %d stack tops for %d threads", c.header.ProtoMinor, len(c.tops), len(c.threads))
	}
	tops := map[uint32]sample.StackTop{}
	for _, top := range c.tops {
		if len(top.Words) != sample.MaxStackTopWords {
			t.Errorf("thread %#x: %d words below its stack top, want %d", top.Thread, len(top.Words), sample.MaxStackTopWords)
		}
		tops[top.Thread] = top
	}
	last := map[uint32]gdbStop{}
	for _, s := range stops {
		if s.Thread != 0 {
			last[s.Thread] = s
		}
	}
	for id, s := range last {
		top, ok := tops[id]
		if !ok || top.Top != s.ThreadTop {
			t.Fatalf("thread %#x: the sampler sent stack top %+v, gdb read top %#x", id, top, s.ThreadTop)
		}
		differ := 0
		for i := range min(len(top.Words), len(s.Root)) {
			if top.Words[i] != s.Root[i] {
				differ++
			}
		}
		t.Logf("thread %#x: top %#x, %d of %d words differ from gdb's at the thread's last stop", id, top.Top, differ, len(top.Words))
	}
	return tops
}

// gdbTailCalls are the functions of the tail-call frames in gdb's
// backtrace. gdb puts back a function that left the stack by a tail call
// only where the DWARF's call sites name the whole path: on the demo it
// shows tcmp_port_write's tail call to port_uart_write, but not
// console_main → sampler_port_service → (tail call) tcmp_poll → (tail
// call) stream_out, which the unwinder puts back from the code's B.W
// instructions (unwind.Unwinder.Unwind); the profile's call edges, tail
// calls included, are checked against the code by cmd's
// TestStackProfileOnQEMUDemo.
func gdbTailCalls(frames []gdbFrame) map[string]bool {
	out := map[string]bool{}
	for _, f := range frames {
		if f.Kind == "tailcall" {
			out[f.Function] = true
		}
	}
	return out
}

// withoutUnshownTailCalls is frames less the tail-call frames of
// functions not in shown: what gdb shows.
func withoutUnshownTailCalls(img *tcelf.Image, frames []unwind.Frame, shown map[string]bool) []unwind.Frame {
	var out []unwind.Frame
	for _, f := range frames {
		if fn := img.FunctionAt(f.PC); f.TailCall && (fn == nil || !shown[fn.Name]) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// compareWithGDB counts the frames of unwound (one per stop, unwound
// from k words) that agree with gdb's backtrace, and the stacks that are
// complete (it returns their share), and fails below 99 % agreement.
func compareWithGDB(t *testing.T, img *tcelf.Image, stops []gdbStop, k int, unwound []unwind.Stack) float64 {
	t.Helper()
	var compared, agreed, deep, skipped, pcLines, complete, completedFrames, completedAgreed, unshownTails int
	stopKinds := map[unwind.Stop]int{}
	var report []string
	for i, s := range stops {
		phys := physicalFrames(s.Frames)
		if len(phys) == 0 {
			continue
		}
		end := uint64(s.SP) + 4*uint64(min(k, len(s.Words)))
		var want []frameName // the frames within the snapshot's depth
		var valid []frameName
		for j, p := range phys {
			valid = append(valid, p.names...)
			if j == 0 || uint64(p.sp) <= end && len(want) == len(valid)-len(p.names) {
				want = append(want, p.names...)
			}
		}
		uw := unwound[i]
		ownFrames, borrowedFrames := uw.Frames[:len(uw.Frames)-uw.Completed], uw.Frames[len(uw.Frames)-uw.Completed:]
		shown := gdbTailCalls(s.Frames)
		ownFrames, borrowedFrames = withoutUnshownTailCalls(img, ownFrames, shown), withoutUnshownTailCalls(img, borrowedFrames, shown)
		unshownTails += len(uw.Frames) - len(ownFrames) - len(borrowedFrames)
		got, inner := frameNames(img, append(ownFrames[:len(ownFrames):len(ownFrames)], borrowedFrames...))
		// The names of the frames that did not come from the stop's own
		// words: completed from other stops, or unwound through the root
		// words.
		ownNames, _ := frameNames(img, ownFrames)
		borrowed := len(got) - len(ownNames)
		if g, ok := gdbSkipsInline(got, inner, valid); ok {
			got = g
			skipped++
		}
		stopKinds[uw.Stop]++
		if uw.Stop.Complete() {
			complete++
		}
		if len(want) > 3 {
			deep++
		}
		n := max(len(want), len(got))
		if uw.Stop.Complete() && s.XPSR&0x1FF == 0 {
			// Complete in thread mode: gdb has nothing above it either
			// (in a handler, gdb's frames above the exception entry on
			// the thread's stack are cut: physicalFrames).
			n = max(n, len(valid))
		}
		bad := false
		for j := 0; j < n; j++ {
			compared++
			isBorrowed := j >= len(got)-borrowed && j < len(got)
			if isBorrowed {
				completedFrames++
			}
			switch {
			case j >= len(got) || j >= len(valid):
				bad = true
			case j == 0 && got[0].Function == valid[0].Function:
				// The sampled PC's own line is the symbolizer's
				// (checked against llvm-symbolizer in elf/);
				// gdb takes the line of the nearest is_stmt row.
				agreed++
				if got[0].Line != valid[0].Line {
					pcLines++
				}
			case got[j] == valid[j]:
				agreed++
				if isBorrowed {
					completedAgreed++
				}
			default:
				bad = true
			}
		}
		if bad && len(report) < 20 {
			report = append(report, fmt.Sprintf("stop %d pc %#x sp %#x lr %#x thread %#x (%d words, %v, %d names borrowed):\n    gdb    %v\n    within %v\n    tcmprof %v",
				i, s.PC, s.SP, s.LR, s.Thread, min(k, len(s.Words)), uw.Stop, borrowed, valid, want, got))
		}
	}
	share := float64(agreed) / float64(compared)
	t.Logf("%d stops, %d complete (%.1f %%); %d of %d frames agree (%.2f %%), %d of %d completed frames; %d stops with more than 3 frames in depth; "+
		"%d stops on an inlined block's first instruction; %d sampled PCs on another line than gdb's; %d tail-call frames where gdb shows none; unwinds ended: %v",
		len(stops), complete, 100*float64(complete)/float64(len(stops)), agreed, compared, 100*share, completedAgreed, completedFrames,
		deep, skipped, pcLines, unshownTails, stopKinds)
	if len(report) > 0 {
		t.Logf("disagreements:\n  %s", strings.Join(report, "\n  "))
	}
	if share < 0.99 {
		t.Errorf("%.2f %% of the frames agree with gdb, want at least 99 %%", 100*share)
	}
	if compared < 3*len(stops) {
		t.Errorf("only %d frames compared in %d stops: the stops did not reach into call stacks", compared, len(stops))
	}
	return float64(complete) / float64(len(stops))
}
