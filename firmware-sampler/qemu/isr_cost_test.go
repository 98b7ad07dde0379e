// SPDX-License-Identifier: Apache-2.0

package qemu

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tcmprof/tcmprof/sample"
)

// The sampler's interrupt, counted in executed instructions from QEMU's
// execution log: every translated block in ITCM and every execution of
// one, from the vector entry (tcmp_sample_isr) to the exception return.
func TestISRInstructionCount(t *testing.T) {
	elfPath, _ := defaultImage(t)
	f, _ := loadSymbols(t, elfPath)
	entry := symbol(t, f, "tcmp_sample_isr").Value &^ 1
	for _, tc := range []struct {
		name   string
		fields sample.Fields
		// Instructions per stored sample that the image may not exceed:
		// what it takes today (docs/qemu.md), so that a change to the
		// sample path that makes it longer fails here. The project's
		// targets are 40 and 60 cycles on the Cortex-M7.
		max int
	}{
		{"pc", sample.FieldPC, 42},
		{"pc_lr_exc_thread", sample.FieldPC | sample.FieldLR | sample.FieldExc | sample.FieldThread, 53},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "exec.log")
			// No -icount here: with it QEMU retranslates blocks that do I/O,
			// and a block's start no longer names one instruction count.
			h := boot(t, elfPath, StartOptions{ExecLog: logPath, ExecLogRange: [2]uint64{itcmStart, itcmEnd}})
			const count = 200
			start := sample.Start{RateHz: 10000, Fields: tc.fields, Count: count, Mode: sample.ModeSnapshot}
			if r := h.command(&start); r.Status != sample.StatusOK {
				t.Fatalf("START: %v", r.Status)
			}
			h.waitHolding(30 * time.Second)
			h.stop()
			perSample := isrInstructionCounts(t, logPath, entry)
			// The run's path is the common one; a few interrupts after the
			// last sample (before the thread stops the timer) take the short
			// path that stores nothing.
			hist := map[int]int{}
			for _, n := range perSample {
				hist[n]++
			}
			mode, modeCount := 0, 0
			for n, c := range hist {
				if c > modeCount {
					mode, modeCount = n, c
				}
			}
			t.Logf("%s: %d interrupts, instructions per interrupt: %v; a stored sample takes %d", tc.name, len(perSample), hist, mode)
			if modeCount < count-1 {
				t.Errorf("only %d of %d samples took the same path", modeCount, count)
			}
			if mode > tc.max {
				t.Errorf("a sample takes %d instructions, budget %d", mode, tc.max)
			}
		})
	}
}

// isrInstructionCounts returns the instructions of each execution of the
// interrupt entry and everything in ITCM it ran until the next entry.
func isrInstructionCounts(t *testing.T, logPath string, entry uint64) []int {
	t.Helper()
	var counts []int
	current := -1
	for _, b := range execLogBlocks(t, logPath) {
		if b.start == entry {
			if current >= 0 {
				counts = append(counts, current)
			}
			current = 0
		}
		if current >= 0 {
			current += len(b.insns)
		}
	}
	if current >= 0 {
		counts = append(counts, current)
	}
	if len(counts) == 0 {
		t.Fatal("no sampler interrupt in the execution log")
	}
	return counts
}

var (
	// "0x00000098:  f01e 0f04  tst.w    lr, #4" inside an IN: block.
	asmLine = regexp.MustCompile(`^0x([0-9a-f]{8}):\s`)
	// "Trace 0: 0x7f5c... [00000000/00000098/00000000/ff200000] tcmp_sample_isr"
	traceLine = regexp.MustCompile(`^Trace \d+: 0x[0-9a-f]+ \[[0-9a-f]+/([0-9a-f]+)/`)
)

// execBlock is one block execution of QEMU's execution log.
type execBlock struct {
	start uint64
	insns []uint64 // instruction addresses, from the block's latest translation
}

// execLogBlocks reads a "-d in_asm,exec,nochain" log: each translated
// block's instructions once ("IN:"), and a "Trace" line for every
// execution of a block. A block QEMU logged but then did not start
// ("Stopped execution of TB chain before", e.g. an interrupt pending at
// its start) is taken back.
func execLogBlocks(t *testing.T, logPath string) []execBlock {
	t.Helper()
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	translated := map[uint64][]uint64{} // block start -> instruction addresses
	var block []uint64
	inBlock := false
	var out []execBlock
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "IN:") {
			inBlock, block = true, nil
			continue
		}
		if m := asmLine.FindStringSubmatch(line); m != nil && inBlock {
			pc, _ := strconv.ParseUint(m[1], 16, 32)
			block = append(block, pc)
			// A block may be translated again (other CPU state): its
			// latest translation is the one that runs next.
			translated[block[0]] = block
			continue
		}
		inBlock = false
		if m := traceLine.FindStringSubmatch(line); m != nil {
			pc, _ := strconv.ParseUint(m[1], 16, 32)
			insns, ok := translated[pc]
			if !ok {
				t.Fatalf("block at %#x executed but never translated", pc)
			}
			out = append(out, execBlock{pc, insns})
			continue
		}
		if strings.HasPrefix(line, "Stopped execution of TB chain before") && len(out) > 0 {
			out = out[:len(out)-1]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
