// SPDX-License-Identifier: Apache-2.0

package qemu

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tcmprof/tcmprof/elf/board"
	"github.com/tcmprof/tcmprof/sim"
)

// tracedRun is what a trace holds, flattened.
type tracedRun struct {
	insns []uint32 // executed instruction addresses, cuts applied
	stats sim.ReaderStats
}

// readTrace flattens the trace at path.
func readTrace(t *testing.T, path string) tracedRun {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := sim.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var run tracedRun
	for {
		b, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Len() {
			run.insns = append(run.insns, b.Addr(i))
		}
	}
	run.stats = r.Stats()
	return run
}

// traceToFile boots the image with the plugin writing path and waits for
// QEMU to end itself after the window.
func traceToFile(t *testing.T, elfPath string, opts StartOptions, trace TraceOptions) {
	t.Helper()
	needQEMU(t)
	opts.Trace = &trace
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := TraceToFile(ctx, elfPath, opts); err != nil {
		t.Fatal(err)
	}
}

func zsockSendto(t *testing.T, elfPath string) uint32 {
	t.Helper()
	f, _ := loadSymbols(t, elfPath)
	return uint32(symbol(t, f, "zsock_sendto").Value &^ 1)
}

// The plugin's trace and QEMU's own execution log of the same run show
// the same instructions in the same order: from reset to the second echo
// (about 100,000 blocks), without -icount, where no block is cut.
func TestTraceMatchesExecLog(t *testing.T) {
	elfPath, _ := defaultImage(t)
	dir := t.TempDir()
	tracePath, logPath := filepath.Join(dir, "run.trace"), filepath.Join(dir, "exec.log")
	traceToFile(t, elfPath, StartOptions{ExecLog: logPath}, TraceOptions{Path: tracePath, Marker: zsockSendto(t, elfPath), To: 2})
	run := readTrace(t, tracePath)
	var logged []uint32
	for _, b := range execLogBlocks(t, logPath) {
		for _, a := range b.insns {
			logged = append(logged, uint32(a))
		}
	}
	t.Logf("trace: %d instructions, %+v; execution log: %d instructions", len(run.insns), run.stats, len(logged))
	if run.stats.Cuts != 0 {
		t.Errorf("%d cuts without -icount", run.stats.Cuts)
	}
	if len(run.insns) < 100000 || len(logged) < len(run.insns) {
		t.Fatalf("trace of %d instructions, log of %d: want the log to hold the whole trace", len(run.insns), len(logged))
	}
	// QEMU goes on logging until it has shut down: the trace is a prefix.
	for i, a := range run.insns {
		if logged[i] != a {
			t.Fatalf("instruction %d: trace 0x%08x, execution log 0x%08x", i, a, logged[i])
		}
	}
}

// Under -icount, blocks that touch I/O before their last instruction are
// cut short and the plugin says so; with -singlestep no block can be cut.
// Both runs execute the same instructions (icount makes them
// deterministic), and the traces agree instruction by instruction.
func TestTraceMatchesSingleStep(t *testing.T) {
	elfPath, _ := defaultImage(t)
	marker := zsockSendto(t, elfPath)
	dir := t.TempDir()
	runs := map[bool]tracedRun{}
	for _, single := range []bool{false, true} {
		path := filepath.Join(dir, "run.trace")
		traceToFile(t, elfPath, StartOptions{Icount: 3, OneInsnPerTB: single},
			TraceOptions{Path: path, Marker: marker, From: 70, To: 80})
		runs[single] = readTrace(t, path)
	}
	blocks, single := runs[false], runs[true]
	// Both traces end with the block that holds the last entry: a whole
	// block, or the marker instruction alone. Compare up to the entry.
	blocks.insns, single.insns = upToLast(blocks.insns, marker), upToLast(single.insns, marker)
	// What the cuts correct: without them each cut execution would count
	// the instructions after its I/O instruction twice.
	t.Logf("blocks: %d instructions, %+v (%d instructions re-counted without the cuts); single-step: %d instructions, %+v",
		len(blocks.insns), blocks.stats, blocks.stats.CutInstructions-blocks.stats.Cuts, len(single.insns), single.stats)
	if blocks.stats.Cuts == 0 {
		t.Error("no cut under -icount: the I/O corner case was not exercised")
	}
	// Single-stepped, an I/O instruction's own one-instruction block is
	// abandoned before it runs and the instruction runs again as a
	// memory-only block: a cut of nothing, which the reader drops.
	if single.stats.Cuts != blocks.stats.Cuts || single.stats.CutInstructions != single.stats.Cuts {
		t.Errorf("single-stepped: %+v; want one empty cut per I/O instruction (%d)", single.stats, blocks.stats.Cuts)
	}
	if len(blocks.insns) != len(single.insns) {
		t.Fatalf("%d instructions in blocks, %d single-stepped", len(blocks.insns), len(single.insns))
	}
	for i := range blocks.insns {
		if blocks.insns[i] != single.insns[i] {
			t.Fatalf("instruction %d: 0x%08x in blocks, 0x%08x single-stepped", i, blocks.insns[i], single.insns[i])
		}
	}
}

// Under -icount with sleep=off a traced window is the same on every run,
// byte for byte: idle time no longer follows the host.
func TestTraceIsReproducible(t *testing.T) {
	elfPath, _ := defaultImage(t)
	marker := zsockSendto(t, elfPath)
	dir := t.TempDir()
	var traces [2][]byte
	for i := range traces {
		path := filepath.Join(dir, "run.trace")
		traceToFile(t, elfPath, StartOptions{Icount: 3}, TraceOptions{Path: path, Marker: marker, From: 100, To: 150})
		var err error
		if traces[i], err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(traces[0], traces[1]) {
		t.Errorf("two runs of one window give different traces (%d and %d bytes)", len(traces[0]), len(traces[1]))
	}
}

// upToLast is insns up to (without) the last execution of addr.
func upToLast(insns []uint32, addr uint32) []uint32 {
	for i := len(insns) - 1; i >= 0; i-- {
		if insns[i] == addr {
			return insns[:i]
		}
	}
	return nil
}

// Through a FIFO the model reads the trace as QEMU writes it: the window
// holds exactly the units asked for and QEMU ends itself.
func TestStartTraceFIFO(t *testing.T) {
	needQEMU(t)
	elfPath, _ := defaultImage(t)
	marker := zsockSendto(t, elfPath)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inst, trace, err := StartTrace(ctx, elfPath, StartOptions{Icount: 3,
		Trace: &TraceOptions{Marker: marker, From: 100, To: 120, Exit: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	defer trace.Close()
	r, err := sim.NewReader(trace)
	if err != nil {
		t.Fatal(err)
	}
	board, err := board.ByName("qemu-demo")
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.BoardConfig(board)
	cfg.Unit = &sim.Unit{Addr: marker}
	res, err := sim.Run(r, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Entries 100..120 are in the trace: 20 whole units.
	if res.Units != 20 || res.TailInstructions > 20 {
		t.Errorf("%d units, %d instructions after the last entry; want 20 and the rest of one block", res.Units, res.TailInstructions)
	}
	select {
	case <-inst.Done():
	case <-ctx.Done():
		t.Error("QEMU did not end after the window")
	}
}
