// SPDX-License-Identifier: Apache-2.0

package qemu

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	tcelf "github.com/tcmprof/tcmprof/elf"
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
}

type gdbFrame struct {
	PC       uint32 `json:"pc"`
	SP       uint32 `json:"sp"`
	Kind     string `json:"kind"` // normal, inline, tailcall, signal
	Function string `json:"function"`
	File     string `json:"file"`
	Line     int    `json:"line"`
}

// needGDB returns gdb-multiarch's path or skips the test.
func needGDB(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("gdb-multiarch")
	if err != nil {
		t.Skip("gdb-multiarch not found in PATH (run `make deps`)")
	}
	return path
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

// gdbStops boots the image with QEMU's gdbstub and lets gdb_stops.py stop
// it n times at random moments, reading up to words stack words each time.
func gdbStops(t *testing.T, elfPath string, n, seed, words int) []gdbStop {
	t.Helper()
	port := freeTCPPort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	opts := testOptions()
	opts.GDB = fmt.Sprintf("tcp:127.0.0.1:%d", port)
	inst, err := StartWith(ctx, elfPath, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
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

// unwindNames unwinds a stop's snapshot of k words and symbolizes each
// frame into its inline chain; inner is how many of the names are the
// first frame's.
func unwindNames(img *tcelf.Image, u *tcelf.Unwinder, s gdbStop, k int) (names []frameName, inner int, stop tcelf.UnwindStop) {
	n := min(k, len(s.Words))
	snap := tcelf.StackSnapshot{PC: s.PC, SP: s.SP, LR: s.LR, Words: s.Words[:n], AtTop: s.AtTop && len(s.Words) <= k}
	frames, stop := u.Unwind(snap)
	for i, f := range frames {
		for _, fr := range img.Symbolize(f.PC) {
			names = append(names, frameName{fr.Function, fr.Line})
		}
		if i == 0 {
			inner = len(names)
		}
	}
	return names, inner, stop
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
// firmware at random points; every frame gdb shows whose return address
// lies inside the snapshot (and any further frame the unwinder gives) is
// compared by function and call-site line, inline frames and tail calls
// included; the innermost by function (its line is the sampled PC's).
func TestUnwindAgreesWithGDB(t *testing.T) {
	elfPath, _ := defaultImage(t)
	needGDB(t)
	stops := gdbStops(t, elfPath, 300, 1, 64)
	img, err := tcelf.Open(elfPath)
	if err != nil {
		t.Fatal(err)
	}
	u, err := tcelf.NewUnwinder(img)
	if err != nil || !u.HasCFI() {
		t.Fatalf("no CFI: %v", err)
	}
	for _, k := range []int{32, 64} {
		t.Run(fmt.Sprintf("K=%d", k), func(t *testing.T) {
			var compared, agreed, deep, skipped, pcLines int
			stopKinds := map[tcelf.UnwindStop]int{}
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
				got, inner, stop := unwindNames(img, u, s, k)
				if g, ok := gdbSkipsInline(got, inner, valid); ok {
					got = g
					skipped++
				}
				stopKinds[stop]++
				if len(want) > 3 {
					deep++
				}
				n := max(len(want), len(got))
				bad := false
				for j := 0; j < n; j++ {
					compared++
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
					default:
						bad = true
					}
				}
				if bad && len(report) < 20 {
					report = append(report, fmt.Sprintf("stop %d pc %#x sp %#x lr %#x (%d words, %v):\n    gdb    %v\n    within %v\n    tcmprof %v",
						i, s.PC, s.SP, s.LR, min(k, len(s.Words)), stop, valid, want, got))
				}
			}
			share := float64(agreed) / float64(compared)
			t.Logf("%d stops, %d of %d frames agree (%.2f %%); %d stops with more than 3 frames in depth; "+
				"%d stops on an inlined block's first instruction; %d sampled PCs on another line than gdb's; unwinds ended: %v",
				len(stops), agreed, compared, 100*share, deep, skipped, pcLines, stopKinds)
			if len(report) > 0 {
				t.Logf("disagreements:\n  %s", strings.Join(report, "\n  "))
			}
			if share < 0.99 {
				t.Errorf("%.2f %% of the frames agree with gdb, want at least 99 %%", 100*share)
			}
			if compared < 3*len(stops) {
				t.Errorf("only %d frames compared in %d stops: the stops did not reach into call stacks", compared, len(stops))
			}
		})
	}
}
