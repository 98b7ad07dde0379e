// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlansJudgedByTheModel is scripts/judge.sh on a smaller window: the
// demo is traced and modelled, the capture the board would take is written
// from the model (samples every N modelled cycles), and plans made from it
// with each objective are relinked, traced and modelled again. It asserts
// issue 11's bar: the stalls plan, made from samples only, is no worse than
// density-greedy (the Teensy report's method) at 4, 8, 16 and 32 KB
// (scripts/judge.sh also judges the full ITCM), within 5 % of the reference
// ranked by the model's own misses per byte at 4 and 8 KB, and at 32 KB
// within 5 % of the image with all hot code in ITCM; and §4's shape:
// density-greedy's 8, 16 and 32 KB plans clearly apart, with stalls left
// at 16 KB. QEMU runs with -icount and sleep=off, so every run models the
// same trace.
func TestPlansJudgedByTheModel(t *testing.T) {
	skipWithoutQEMU(t)
	dir := t.TempDir()
	stock := buildDemo(t, filepath.Join(dir, "stock"), "-Os", "")
	// The capture spans echoes 200..1200 (1,000 after 100 of warm-up), at
	// 40 kHz of the 600 MHz model clock: about 8,000 samples. Every image
	// is judged on echoes 200..800.
	const from, warmup, captureUnits, units = 100, 100, 1000, 600
	trace := filepath.Join(dir, "stock.trace")
	traceDemo(t, stock, trace, from, from+warmup+captureUnits)
	capture := filepath.Join(dir, "stock.tcmcap")
	stockSim := filepath.Join(dir, "stock.json")
	code, out, stderr := tcmprof("sim", "--elf", stock.elf, "--map", stock.mapFile, "--board", "qemu-demo",
		"--warmup", fmt.Sprint(warmup), "--units", fmt.Sprint(captureUnits), "--json", "--capture", capture, "--rate", "40000", trace)
	if code != 0 {
		t.Fatalf("sim --capture: exit %d: %s", code, stderr)
	}
	if err := os.WriteFile(stockSim, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}

	// judge models units echoes of b.
	judge := func(name string, b demoBuild) simJSON {
		t.Helper()
		tr := filepath.Join(dir, name+".trace")
		traceDemo(t, b, tr, from, from+warmup+units)
		code, out, stderr := tcmprof("sim", "--elf", b.elf, "--map", b.mapFile, "--board", "qemu-demo",
			"--warmup", fmt.Sprint(warmup), "--units", fmt.Sprint(units), "--json", tr)
		if code != 0 {
			t.Fatalf("sim of %s: exit %d: %s", name, code, stderr)
		}
		var doc simJSON
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		return doc
	}
	// planned plans from the capture, relinks and judges.
	planned := func(name string, args ...string) (simJSON, int64) {
		t.Helper()
		frag := filepath.Join(dir, name+".ld")
		planJSON := filepath.Join(dir, name+".plan.json")
		args = append([]string{"plan", "--elf", stock.elf, "--map", stock.mapFile, "--board", "qemu-demo", capture,
			"--format", "ld", "-o", frag, "--format", "json", "-o", planJSON}, args...)
		if code, _, stderr := tcmprof(args...); code != 0 {
			t.Fatalf("plan %s: exit %d: %s", name, code, stderr)
		}
		p, err := readPlan(planJSON)
		if err != nil {
			t.Fatal(err)
		}
		return judge(name, relinkDemo(t, stock, filepath.Join(dir, name), frag)), p.Prediction.Bytes
	}

	base := judge("stock", stock)
	allHot, hotBytes := planned("allhot", "--min-samples", "1")
	var table strings.Builder
	fmt.Fprintf(&table, "stock %.0f cycles per echo; all hot code in ITCM (%d B) %.0f\n", base.CyclesPerUnit, hotBytes, allHot.CyclesPerUnit)
	fmt.Fprintf(&table, "budget  density-greedy  stalls  reference (misses)\n")
	density := map[string]simJSON{}
	for _, budget := range []string{"4K", "8K", "16K", "32K"} {
		cycles := map[string]float64{}
		for _, obj := range []string{"density", "stalls", "misses"} {
			args := []string{"--objective", obj, "--budget", budget}
			if obj == "misses" {
				args = append(args, "--sim-json", stockSim)
			}
			res, _ := planned(obj+"-"+budget, args...)
			cycles[obj] = res.CyclesPerUnit
			if obj == "density" {
				density[budget] = res
			}
		}
		fmt.Fprintf(&table, "%6s  %14.0f  %6.0f  %18.0f\n", budget, cycles["density"], cycles["stalls"], cycles["misses"])
		if s, d := cycles["stalls"], cycles["density"]; s > d {
			t.Errorf("%s: the stalls plan takes %.0f cycles per echo, density-greedy %.0f (%+.1f %%)", budget, s, d, 100*(s/d-1))
		}
		switch s, m, h := cycles["stalls"], cycles["misses"], allHot.CyclesPerUnit; budget {
		case "4K", "8K":
			if s > 1.05*m {
				t.Errorf("%s: the stalls plan takes %.0f cycles per echo, the reference %.0f (%+.1f %%, over 5 %%)", budget, s, m, 100*(s/m-1))
			}
		case "32K":
			fmt.Fprintf(&table, "32K stalls plan vs all hot code in ITCM: %+.1f %%\n", 100*(s/h-1))
			if s > 1.05*h {
				t.Errorf("32K: the stalls plan takes %.0f cycles per echo, all hot code in ITCM %.0f (%+.1f %%, over 5 %%)", s, h, 100*(s/h-1))
			}
		}
	}
	t.Logf("modelled cycles per echo:\n%s", table.String())
	// Issue 11 §4: density-greedy's plans at 8, 16 and 32 KB give clearly
	// different cycle counts (each step at least 10 % fewer), and stalls
	// remain below 32 KB.
	for _, step := range [][2]string{{"8K", "16K"}, {"16K", "32K"}} {
		if a, b := density[step[0]].CyclesPerUnit, density[step[1]].CyclesPerUnit; b > 0.9*a {
			t.Errorf("density-greedy at %s takes %.0f cycles per echo, at %s %.0f: not clearly fewer", step[1], b, step[0], a)
		}
	}
	if share := density["16K"].StallShare; share < 0.1 {
		t.Errorf("density-greedy at 16K leaves %.1f %% of the cycles in stalls: the demo saturates before 32 KB", 100*share)
	}
}
