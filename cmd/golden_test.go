// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	pprof "github.com/google/pprof/profile"

	"github.com/tcmprof/tcmprof/internal/golden"
	"github.com/tcmprof/tcmprof/profile/profiletest"
	"github.com/tcmprof/tcmprof/sample"
)

// goldenRuns are two captures of the profile package's test firmware, as
// checked in (profiletest.CheckedIn: the bytes its sources build with the
// toolchain it records, which profiletest's TestCheckedInFirmware checks,
// so the goldens need no toolchain and hold whichever one a machine has),
// "before" and "after" some change: busy samples
// in flash (hash_buf, leaf_add, and net_checksum in libnet.a), in ITCM
// (fast_scale) and on a veneer, and idle ones.
type goldenRuns struct {
	fw            *profiletest.Firmware
	before, after string
}

func newGoldenRuns(t *testing.T) goldenRuns {
	fw := profiletest.CheckedIn(t)
	dir := t.TempDir()
	write := func(name string, hash, leaf, checksum, scale, idle int) string {
		c := fw.Capture(t, sample.FieldPC|sample.FieldThread,
			profiletest.Group{N: hash, PC: fw.Find(t, "hash_buf", `^eor`, 0), Thread: 1},
			profiletest.Group{N: leaf, PC: fw.Entry(t, "leaf_add"), Thread: 1},
			profiletest.Group{N: checksum, PC: fw.Entry(t, "net_checksum"), Thread: 1},
			profiletest.Group{N: scale, PC: fw.Entry(t, "fast_scale"), Thread: 1},
			profiletest.Group{N: idle, PC: fw.Entry(t, "idle_loop"), Thread: 2},
		)
		path := filepath.Join(dir, name)
		if err := sample.WriteFile(path, c); err != nil {
			t.Fatal(err)
		}
		return path
	}
	return goldenRuns{fw,
		write("before.tcmcap", 200, 100, 50, 0, 100),
		write("after.tcmcap", 120, 150, 60, 40, 70)}
}

// writeGroups writes a capture of fw's groups into dir.
func writeGroups(t *testing.T, fw *profiletest.Firmware, dir, name string, groups ...profiletest.Group) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := sample.WriteFile(path, fw.Capture(t, sample.FieldPC|sample.FieldThread, groups...)); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGoldenOutputs pins the text and JSON that users read, diff and
// script against (report, rank, plan and its output files, diff, info,
// symbolize, sim) to the files in testdata/golden. After a deliberate change,
// rewrite them with
//
//	go test ./cmd -run TestGoldenOutputs -update
//
// and review the diff. Nothing is normalised: the firmware is the
// checked-in copy, the same on every machine, and the captures are made
// from it here. It needs no toolchain, so it runs everywhere (issue 27
// §5); when the firmware's sources change, refresh the copy first (see
// profiletest's TestCheckedInFirmware).
func TestGoldenOutputs(t *testing.T) {
	r := newGoldenRuns(t)
	build := []string{"--elf", r.fw.ELF, "--map", r.fw.MapPath, "--board", "qemu-demo"}
	out := t.TempDir()
	outFile := func(name string) string { return filepath.Join(out, name) }
	// sim: the hand-made trace of sim_test.go over the same firmware, in a
	// cache of two lines so that its functions evict each other.
	simArgs := slices.Clip(append([]string{"sim", "--unit", "nonleaf", "--warmup", "1", "--units", "20", "--icache-size", "64",
		"--icache-ways", "1", newSimFixture(t, r.fw, r.fw.BuildID(t)).trace}, build...))
	// The capture the board would take, as sim models it, at a clock slow
	// enough for the short trace to hold samples; the time it was modelled
	// at is set to a fixed one (the only figure of it that varies).
	model := outFile("model.tcmcap")
	if code, _, stderr := tcmprof(append(simArgs, "--capture", model, "--clock", "6000000", "--rate", "100000")...); code != 0 {
		t.Fatalf("sim --capture: exit %d: %s", code, stderr)
	}
	modelled, err := sample.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	modelled.Host.Time = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	if err := sample.WriteFile(model, modelled); err != nil {
		t.Fatal(err)
	}
	// Captures whose figures mean nothing as they stand (issue 26): no
	// samples; all of them outside the image although the build-ids
	// agree; some in code the board has no memory region for (remapped.dts
	// moves ITCM away from fast_scale).
	empty := writeGroups(t, r.fw, out, "empty.tcmcap")
	outside := writeGroups(t, r.fw, out, "outside.tcmcap", profiletest.Group{N: 5000, PC: 0x70000000, Thread: 1})
	unmapped := writeGroups(t, r.fw, out, "unmapped.tcmcap", profiletest.Group{N: 30, PC: r.fw.Entry(t, "fast_scale"), Thread: 1},
		profiletest.Group{N: 70, PC: r.fw.Entry(t, "leaf_add"), Thread: 1})
	remapped := []string{"--elf", r.fw.ELF, "--map", r.fw.MapPath, "--dts", filepath.Join("..", "profile", "testdata", "remapped.dts")}
	// Two workloads of one image (issue 24 §5): an echo capture of 1,000
	// samples and a bulk one of 3,000, mixed 3:1 by time, so echo's
	// functions take 75 % of the mix whatever the captures' lengths.
	echo := writeGroups(t, r.fw, out, "echo.tcmcap", profiletest.Group{N: 600, PC: r.fw.Entry(t, "hash_buf"), Thread: 1},
		profiletest.Group{N: 400, PC: r.fw.Entry(t, "net_checksum"), Thread: 1})
	bulk := writeGroups(t, r.fw, out, "bulk.tcmcap", profiletest.Group{N: 2000, PC: r.fw.Entry(t, "leaf_add"), Thread: 1},
		profiletest.Group{N: 1000, PC: r.fw.Entry(t, "fast_scale"), Thread: 1})
	for _, tc := range []struct {
		golden string   // "": run the command for the files it writes
		args   []string // the command line, or nil for a file an earlier one wrote
		file   string   // the golden is this file, not the command's stdout
		code   int      // the exit code
		stderr bool     // the golden is stderr, then stdout
	}{
		{"report.txt", append([]string{"report", r.before}, build...), "", 0, false},
		{"report.json", append([]string{"report", "--json", r.before}, build...), "", 0, false},
		{"report-icache.txt", append([]string{"report", "--icache-size", "1024", "--icache-ways", "1", "--top", "2", r.after}, build...), "", 0, false},
		{"rank.txt", append([]string{"rank", r.before}, build...), "", 0, false},
		{"rank.json", append([]string{"rank", "--json", r.before}, build...), "", 0, false},
		{"plan.txt", append([]string{"plan", r.before, "--budget", "4K", "--format", "json", "-o", outFile("plan.json"),
			"--format", "ld", "-o", outFile("itcm.ld"), "--format", "list", "-o", outFile("plan.list"),
			"--format", "curve", "-o", outFile("curve.txt"), "--svg", outFile("curve.svg")}, build...), "", 0, false},
		{"plan.curve", nil, outFile("curve.txt"), 0, false},
		{"plan-curve.svg", nil, outFile("curve.svg"), 0, false},
		{"plan.json", nil, outFile("plan.json"), 0, false},
		{"plan.ld", nil, outFile("itcm.ld"), 0, false},
		{"plan.list", nil, outFile("plan.list"), 0, false},
		// The image the plan was made from does not meet it: nothing moved.
		{"verify.txt", []string{"verify", "--elf", r.fw.ELF, "--map", r.fw.MapPath, "--plan", outFile("plan.json")}, "", exitVerifyFailed, false},
		{"plan-zephyr.txt", append([]string{"plan", r.before, "--format", "zephyr", "-o", outFile("itcm.cmake")}, build...), "", 0, false},
		{"plan.cmake", nil, outFile("itcm.cmake"), 0, false},
		{"plan.conf", nil, outFile("itcm.conf"), 0, false},
		{"diff.txt", append([]string{"diff", r.before, r.after}, build...), "", 0, false},
		{"diff.json", append([]string{"diff", "--json", r.before, r.after}, build...), "", 0, false},
		{"", append([]string{"profile", r.before, "-o", outFile("run.pb.gz")}, build...), "", 0, false}, // says only on stderr what it wrote
		{"profile.txt", nil, outFile("run.pb.gz"), 0, false},
		{"symbolize.txt", []string{"symbolize", "--elf", r.fw.ELF, hexAddr(r.fw.Find(t, "hash_buf", `^eor`, 0)), hexAddr(r.fw.Entry(t, "leaf_add")), "0x70000000"}, "", 0, false},
		{"symbolize.json", []string{"symbolize", "--json", "--elf", r.fw.ELF, hexAddr(r.fw.Find(t, "hash_buf", `^eor`, 0)), "0x70000000"}, "", 0, false},
		{"sim.txt", simArgs, "", 0, false},
		{"sim.json", append(simArgs, "--json"), "", 0, false},
		{"sim-model.tcmcap", nil, model, 0, false},
		{"sim-model-info.txt", []string{"info", model}, "", 0, false},
		{"sim-model-report.txt", append([]string{"report", model}, build...), "", 0, false},
		{"report-empty.txt", append([]string{"report", empty}, build...), "", 0, true},
		{"report-outside.txt", append([]string{"report", outside}, build...), "", 0, true},
		{"report-empty.json", append([]string{"report", "--json", empty}, build...), "", 0, false},
		{"diff-empty.json", append([]string{"diff", "--json", empty, empty}, build...), "", 0, false},
		{"plan-empty.txt", append([]string{"plan", empty}, build...), "", 1, true},
		{"plan-outside.txt", append([]string{"plan", outside, "--format", "json", "-o", outFile("outside.json")}, build...), "", 1, true},
		{"report-unmapped.txt", append([]string{"report", unmapped}, remapped...), "", 0, true},
		{"report-mix.txt", append([]string{"report", echo + ":3", bulk + ":1"}, build...), "", 0, true},
		{"plan-mix.txt", append([]string{"plan", echo + ":3", bulk + ":1", "--budget", "256", "--min-samples", "1"}, build...), "", 0, true},
		{"rank-mix.txt", append([]string{"rank", echo + ":3", bulk + ":1"}, build...), "", 0, false},
		// --wide: every column, names with their source paths, one line
		// per sentence (what the 80-column text leaves out).
		{"report-wide.txt", append([]string{"report", "--wide", r.before}, build...), "", 0, false},
		{"rank-wide.txt", append([]string{"rank", "--wide", r.before}, build...), "", 0, false},
		{"plan-wide.txt", append([]string{"plan", "--wide", r.before, "--budget", "4K"}, build...), "", 0, false},
		{"plan-mix-wide.txt", append([]string{"plan", "--wide", echo + ":3", bulk + ":1", "--budget", "256", "--min-samples", "1"}, build...), "", 0, false},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			var got []byte
			if tc.args != nil {
				code, stdout, stderr := tcmprof(tc.args...)
				if code != tc.code {
					t.Fatalf("%s: exit %d, want %d\n%s", strings.Join(tc.args, " "), code, tc.code, stderr)
				}
				got = []byte(strings.ReplaceAll(stdout, out, "$OUT"))
				// Standard output only: warnings and errors on standard
				// error are one line each, for a terminal to wrap.
				if fitsEighty(tc.args) {
					checkFits(t, strings.Join(tc.args[:1], " "), stdout)
				}
				if tc.stderr {
					got = []byte(strings.ReplaceAll(stderr+stdout, out, "$OUT"))
				}
			} else {
				var err error
				if got, err = os.ReadFile(tc.file); err != nil {
					t.Fatal(err)
				}
			}
			if tc.golden == "plan.curve" {
				checkFits(t, "plan --format curve", string(got))
			}
			if strings.HasSuffix(tc.file, ".pb.gz") {
				got = profileText(t, got, r.fw.Dir)
			}
			if tc.golden != "" {
				golden.Check(t, filepath.Join("testdata", "golden", tc.golden), got)
			}
			// A list with nothing in it is [] for a script, not null.
			if strings.HasSuffix(tc.golden, ".json") && bytes.Contains(got, []byte("null")) {
				t.Errorf("%s has a null:\n%s", tc.golden, got)
			}
		})
	}
}

// TestGoldenOutputsWithoutAToolchain pins what reads no firmware at all
// (TestGoldenOutputs reads the checked-in copy of one; neither needs
// arm-none-eabi-gcc, issue 27 §5): info reads the checked-in capture of sample/testdata,
// and bench compare the two udp-echo runs of loadtest/testdata (whose
// table, CSV and SVG loadtest's TestRunOutputs pins).
func TestGoldenOutputsWithoutAToolchain(t *testing.T) {
	demo := filepath.Join("..", "sample", "testdata", "v1.0-qemu-demo.tcmcap")
	stock, itcm := filepath.Join("..", "loadtest", "testdata", "stock.json"), filepath.Join("..", "loadtest", "testdata", "itcm.json")
	compareSVG := filepath.Join(t.TempDir(), "compare.svg")
	for _, tc := range []struct {
		golden string
		args   []string // nil: the file an earlier command wrote
		file   string
	}{
		{"info.txt", []string{"info", demo}, ""},
		{"info.json", []string{"info", "--json", demo}, ""},
		{"bench-compare.txt", []string{"bench", "compare", stock, itcm, "--svg", compareSVG}, ""},
		{"bench-compare.svg", nil, compareSVG},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			got, err := os.ReadFile(tc.file)
			if tc.args != nil {
				var code int
				var stdout, stderr string
				if code, stdout, stderr = tcmprof(tc.args...); code != 0 {
					t.Fatalf("%s: exit %d\n%s", strings.Join(tc.args, " "), code, stderr)
				}
				got, err = []byte(stdout), nil
			}
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "golden", tc.golden), got)
		})
	}
}

func hexAddr(a uint32) string { return fmt.Sprintf("0x%x", a) }

// profileText is a pprof profile as text, by the pprof version go.mod pins
// (what "go tool pprof -raw" prints). The mapping records the ELF's path,
// which is in the test firmware's fresh temporary directory: fwDir becomes
// $FW.
func profileText(t *testing.T, data []byte, fwDir string) []byte {
	t.Helper()
	p, err := pprof.ParseData(data)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(strings.ReplaceAll(p.String(), fwDir, "$FW"))
}
