// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/firmware-sampler/qemu"
	"github.com/tcmprof/tcmprof/internal/qemutest"
	"github.com/tcmprof/tcmprof/profile/profiletest"
	"github.com/tcmprof/tcmprof/sample"
)

// traceDemo traces echoes from..to of the demo image into out (with its
// bench switch: bulk transfer's datagrams are counted as echoes).
func traceDemo(t *testing.T, b demoBuild, out string, from, to uint64) {
	t.Helper()
	img, err := image.Open(b.elf)
	if err != nil {
		t.Fatal(err)
	}
	marker, err := functionEntry(img, "zsock_sendto")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := qemu.TraceToFile(ctx, b.elf, qemu.StartOptions{Icount: 3, BenchSwitch: b.benchSwitch, Trace: &qemu.TraceOptions{
		Path: out, Marker: marker, From: from, To: to, BuildID: profiletest.ReadelfBuildID(t, b.elf)}}); err != nil {
		t.Fatal(err)
	}
}

// The model on the real demo: a window of 200 echoes after 20 of warm-up.
// Every unit is counted; the same trace modelled twice gives the same
// result; the modelled capture's samples fall on functions in proportion
// to their modelled cycles; and the image with every hot function in ITCM
// (planned from that capture, relinked, traced again) fills far fewer
// lines per echo.
func TestSimOnQEMUDemo(t *testing.T) {
	qemutest.Need(t)
	dir := t.TempDir()
	stock := buildDemo(t, "-Os")
	trace := filepath.Join(dir, "stock.trace")
	// Entries 100 to 320 (past the calibration's 68 echoes): 220 units.
	const from, warmup, units = 100, 20, 200
	traceDemo(t, stock, trace, from, from+warmup+units)
	args := []string{"sim", "--elf", stock.elf, "--map", stock.mapFile, "--board", "qemu-demo", "--warmup", "20", "--json", trace}

	code, first, stderr := tcmprof(args...)
	if code != 0 {
		t.Fatalf("sim: exit %d: %s", code, stderr)
	}
	if _, again, _ := tcmprof(args...); again != first {
		t.Error("the same trace modelled twice gives two results")
	}
	var doc simJSON
	var tail struct {
		TailInstructions uint64 `json:"tail_instructions"`
	}
	if err := json.Unmarshal([]byte(first), &doc); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal([]byte(first), &tail)
	// To the end of the trace, the window holds every echo after the
	// warm-up, and only the rest of the last marker's block after it.
	if doc.Units != units || tail.TailInstructions > 64 {
		t.Errorf("%d units, %d instructions after the last entry; want %d and the rest of one block", doc.Units, tail.TailInstructions, units)
	}
	t.Logf("stock -Os: %.0f instructions, %.1f fills, %.0f cycles per echo; %.1f %% stalls; %d distinct lines",
		float64(doc.Instructions)/units, float64(doc.Misses)/units, doc.CyclesPerUnit, 100*doc.StallShare, doc.DistinctLines)
	// Issue 11 §4: shaped like the Teensy report's echo path, the stock
	// image touches at least 1,500 lines in at least 200 functions, none
	// with more than 20 % of the cycles (a board's busy samples), and
	// spends at least 70 % of its cycles in stalls.
	functions, largest, largestName := 0, uint64(0), ""
	for _, f := range doc.Functions {
		if f.Cycles == 0 {
			continue
		}
		functions++
		if f.Cycles > largest {
			largest, largestName = f.Cycles, f.Name
		}
	}
	t.Logf("%d functions; the largest, %s, has %.1f %% of the cycles", functions, largestName, 100*float64(largest)/float64(doc.Cycles))
	if doc.StallShare < 0.7 || doc.DistinctLines < 1500 || functions < 200 || largest*5 > doc.Cycles {
		t.Errorf("stall share %.2f, %d lines, %d functions, %s with %d of %d cycles: want the report's shape (at least 0.7, 1,500, 200; at most 20 %%)",
			doc.StallShare, doc.DistinctLines, functions, largestName, largest, doc.Cycles)
	}

	// The modelled capture: about one sample per 1,200 cycles.
	capture := filepath.Join(dir, "modelled.tcmcap")
	if code, _, stderr := tcmprof(append([]string{"sim", "--capture", capture, "--rate", "500000"}, args[1:]...)...); code != 0 {
		t.Fatalf("sim --capture: exit %d: %s", code, stderr)
	}
	checkSamplesFollowCycles(t, stock.elf, capture, doc)

	// Every function with samples in ITCM: the plan's default budget is
	// all the ITCM the image leaves free.
	frag := filepath.Join(dir, "itcm.ld")
	if code, _, stderr := tcmprof("plan", "--elf", stock.elf, "--map", stock.mapFile, "--board", "qemu-demo", capture,
		"--min-samples", "1", "--format", "ld", "-o", frag); code != 0 {
		t.Fatalf("plan: exit %d: %s", code, stderr)
	}
	hot := relinkDemo(t, stock, filepath.Join(dir, "itcm"), frag, "")
	hotTrace := filepath.Join(dir, "itcm.trace")
	traceDemo(t, hot, hotTrace, from, from+warmup+units)
	code, out, stderr := tcmprof("sim", "--elf", hot.elf, "--map", hot.mapFile, "--board", "qemu-demo", "--warmup", "20", "--json", hotTrace)
	if code != 0 {
		t.Fatalf("sim of the ITCM image: exit %d: %s", code, stderr)
	}
	var inITCM simJSON
	if err := json.Unmarshal([]byte(out), &inITCM); err != nil {
		t.Fatal(err)
	}
	t.Logf("all hot code in ITCM: %.0f instructions, %.1f fills, %.0f cycles per echo; %.1f %% stalls; %d distinct lines (%.2fx faster)",
		float64(inITCM.Instructions)/units, float64(inITCM.Misses)/units, inITCM.CyclesPerUnit, 100*inITCM.StallShare,
		inITCM.DistinctLines, doc.CyclesPerUnit/inITCM.CyclesPerUnit)
	if inITCM.Units != units || inITCM.Misses*4 > doc.Misses || inITCM.CyclesPerUnit >= doc.CyclesPerUnit {
		t.Errorf("ITCM image: %d units, %d fills, %.0f cycles per echo; stock %d fills, %.0f: want a quarter of the fills or fewer",
			inITCM.Units, inITCM.Misses, inITCM.CyclesPerUnit, doc.Misses, doc.CyclesPerUnit)
	}
}

// checkSamplesFollowCycles tests that the modelled capture's samples fall
// on each function in proportion to its modelled cycles: for n samples and
// a function with share p of the cycles, an exact two-sided binomial test
// of its count at level 0.1 % / F for each of F functions (Bonferroni), so
// that if the samples were independent draws the whole check would fail
// with probability at most 0.1 %. Jittered periodic samples vary less than
// independent ones, so the bound is conservative.
func checkSamplesFollowCycles(t *testing.T, elfPath, capture string, doc simJSON) {
	t.Helper()
	c, err := sample.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	img, err := image.Open(elfPath)
	if err != nil {
		t.Fatal(err)
	}
	got := map[uint32]int{} // samples per function start (same-named statics stay apart)
	for _, r := range c.Records {
		addr := r.PC
		if f := img.FunctionAt(r.PC); f != nil {
			addr = f.Addr
		}
		got[addr]++
	}
	n := len(c.Records)
	if want := float64(doc.Cycles) * 500000 / 600e6; math.Abs(float64(n)-want) > 0.01*want {
		t.Errorf("%d samples over %d cycles at 500 kHz of 600 MHz, want about %.0f", n, doc.Cycles, want)
	}
	const alpha = 0.001
	level := alpha / float64(len(doc.Functions))
	least, leastName := 1.0, ""
	for _, f := range doc.Functions {
		p := float64(f.Cycles) / float64(doc.Cycles)
		k := got[f.Addr]
		delete(got, f.Addr)
		pv := binomialTest(k, n, p)
		if pv < least {
			least, leastName = pv, f.Name
		}
		if pv < level {
			t.Errorf("%s: %d samples of %d, expected %.1f from its %.3f %% of the cycles (p = %.2g < %.2g)", f.Name, k, n, float64(n)*p, 100*p, pv, level)
		}
	}
	for addr, k := range got {
		t.Errorf("%d samples in the function at 0x%08x, which has no modelled cycles", k, addr)
	}
	t.Logf("%d samples over %d functions; least p-value %.3g (%s), level %.2g", n, len(doc.Functions), least, leastName, level)
}

// binomialTest is the two-sided p-value of k successes in n trials of
// probability p: twice the smaller tail, at most 1.
func binomialTest(k, n int, p float64) float64 {
	if p <= 0 {
		if k == 0 {
			return 1
		}
		return 0
	}
	logPMF := func(i int) float64 {
		a, _ := math.Lgamma(float64(n + 1))
		b, _ := math.Lgamma(float64(i + 1))
		c, _ := math.Lgamma(float64(n - i + 1))
		return a - b - c + float64(i)*math.Log(p) + float64(n-i)*math.Log1p(-p)
	}
	var lower, upper float64
	for i := 0; i <= n; i++ {
		pmf := math.Exp(logPMF(i))
		if i <= k {
			lower += pmf
		}
		if i >= k {
			upper += pmf
		}
	}
	return math.Min(1, 2*math.Min(lower, upper))
}
