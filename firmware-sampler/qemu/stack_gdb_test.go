// SPDX-License-Identifier: Apache-2.0

package qemu

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tcmprof/tcmprof/sample"
	"github.com/tcmprof/tcmprof/sample/device"
)

// stackRecordStop is one line of testdata/gdb_stack_records.py's output.
type stackRecordStop struct {
	Frame     uint32   `json:"frame"`
	ExcReturn uint32   `json:"exc_return"`
	Current   uint32   `json:"current"`
	ThreadLo  uint32   `json:"thread_lo"`
	ThreadHi  uint32   `json:"thread_hi"`
	ISRLo     uint32   `json:"isr_lo"`
	ISRHi     uint32   `json:"isr_hi"`
	Record    []uint32 `json:"record"`
	Memory    []uint32 `json:"memory"` // from the frame on
}

// runGDBScript runs one of testdata's gdb scripts against the gdbstub on
// port and returns its JSON lines.
func runGDBScript(t *testing.T, elfPath, script string, port int, env ...string) [][]byte {
	t.Helper()
	gdbPath := needGDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "gdb.jsonl")
	cmd := exec.CommandContext(ctx, gdbPath, "-q", "-batch", "-nx", elfPath, "-x", filepath.Join(SourceDir(), "testdata", script))
	cmd.Env = append(append(os.Environ(), fmt.Sprintf("TCMPROF_GDB_TARGET=127.0.0.1:%d", port), "TCMPROF_GDB_OUT="+out), env...)
	// Its own process group: a script may signal gdb, and a time-out must
	// end gdb without touching the test binary.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	log, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gdb %s: %v\n%s", script, err, tail(log, 30))
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	return lines
}

// The STACK copy as the firmware makes it in its sampling interrupt,
// against what gdb reads at that moment: the record holds the stacked LR,
// PC and xPSR, the current thread, the SP just above the exception frame
// (aligner word included), and exactly the words there, K of them or up
// to the top of the thread's stack (or of the interrupt stack). K = 29 and
// 30 make the copy's last n % 8 words take every block of the rest (4, 2,
// 1); K = 64 meets stacks shallower than K.
func TestStackRecordsMatchMemory(t *testing.T) {
	needQEMU(t) // before its subtests, which boot it
	elfPath, _ := defaultImage(t)
	needGDB(t)
	const stops = 40
	restBits, short, handler := 0, 0, 0
	for _, k := range []int{29, 30, 64} {
		t.Run(fmt.Sprintf("K=%d", k), func(t *testing.T) {
			port := freeTCPPort(t)
			opts := testOptions()
			opts.GDB = fmt.Sprintf("tcp:127.0.0.1:%d", port)
			h := boot(t, elfPath, opts)
			start := device.Start{RateHz: 2000, Fields: sample.FieldPC | sample.FieldLR | sample.FieldExc | sample.FieldThread | sample.FieldStack,
				Mode: sample.ModeStream, StackWords: uint8(k)}
			if r := h.command(&start); r.Status != device.StatusOK {
				t.Fatalf("START: %v", r.Status)
			}
			lines := runGDBScript(t, elfPath, "gdb_stack_records.py", port,
				fmt.Sprintf("TCMPROF_GDB_STOPS=%d", stops), fmt.Sprintf("TCMPROF_GDB_WORDS=%d", k))
			if len(lines) != stops {
				t.Fatalf("%d stops, want %d", len(lines), stops)
			}
			for i, line := range lines {
				var s stackRecordStop
				if err := json.Unmarshal(line, &s); err != nil {
					t.Fatal(err)
				}
				if err := checkStackRecord(s, k); err != nil {
					t.Errorf("stop %d: %v", i, err)
				}
				n := int(s.Record[5])
				restBits |= n % 8
				if n < k {
					short++
				}
				if s.ExcReturn&4 == 0 {
					handler++
				}
			}
		})
	}
	t.Logf("%d records checked: %d copied fewer than K words (the stack's top came first), %d interrupted a handler (MSP); the rest's blocks used: %03b",
		3*stops, short, handler, restBits)
	if restBits != 7 {
		t.Errorf("the copies of the last n %% 8 words used the blocks %03b, want all three", restBits)
	}
}

// checkStackRecord compares one record with the memory gdb read.
func checkStackRecord(s stackRecordStop, k int) error {
	if len(s.Record) != 6+k || len(s.Memory) != 27+k {
		return fmt.Errorf("%d record words and %d of memory", len(s.Record), len(s.Memory))
	}
	lr, pc, xpsr := s.Memory[5], s.Memory[6], s.Memory[7]
	frameWords := uint32(8)
	if s.ExcReturn&0x10 == 0 {
		frameWords = 26 // FP-extended
	}
	if xpsr&(1<<9) != 0 {
		frameWords++ // the aligner word
	}
	sp := s.Frame + 4*frameWords
	lo, hi := s.ISRLo, s.ISRHi
	if s.ExcReturn&4 != 0 {
		lo, hi = s.ThreadLo, s.ThreadHi
	}
	n := uint32(0)
	if sp >= lo && sp <= hi {
		n = min(uint32(k), (hi-sp)/4)
	}
	head := []uint32{lr, pc, xpsr, s.Current, sp, n}
	for i, want := range head {
		if s.Record[i] != want {
			return fmt.Errorf("record word %d = %#x, want %#x (record head %#x, frame at %#x, EXC_RETURN %#x)",
				i, s.Record[i], want, s.Record[:6], s.Frame, s.ExcReturn)
		}
	}
	for i := uint32(0); i < n; i++ {
		if got, want := s.Record[6+i], s.Memory[frameWords+i]; got != want {
			return fmt.Errorf("stack word %d of %d = %#x, memory at %#x holds %#x", i, n, got, sp+4*i, want)
		}
	}
	return nil
}
