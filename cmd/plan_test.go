// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/place"
)

// The profile package's test firmware (hash_buf 200 busy samples,
// leaf_add 100, idle_loop 100 idle) serves rank, plan and verify: a real
// ELF, map and objects, small enough for table tests.

func TestRankCommand(t *testing.T) {
	fx := newProfileFixture(t)
	code, stdout, stderr := tcmprof("rank", "--elf", fx.fw.ELF, "--map", fx.fw.MapPath, fx.capture, "--json")
	if code != 0 {
		t.Fatalf("rank --json: exit %d: %s", code, stderr)
	}
	var rows []rankJSON
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	got := make(map[string]rankJSON)
	for i, r := range rows {
		got[r.Function] = r
		if i > 0 && r.Density > rows[i-1].Density {
			t.Errorf("row %d (%s, %.4f/B) is denser than the one before it", i, r.Function, r.Density)
		}
	}
	// Idle samples are not ranked: the busy total is 300, as report says.
	for name, want := range map[string]int{"hash_buf": 200, "leaf_add": 100} {
		r, ok := got[name]
		if !ok || r.Samples != want || r.Share != float64(want)/300 || !r.Ranked || r.Size == 0 ||
			r.Density != float64(want)/float64(r.Size) || r.ShareCI.Lo > r.Share || r.ShareCI.Hi < r.Share || r.Section == "" {
			t.Errorf("%s: %+v, want %d samples of 300 busy", name, r, want)
		}
	}
	if _, ok := got["idle_loop"]; ok || len(rows) != 2 {
		t.Errorf("rank lists %d functions (idle_loop idle, so only hash_buf and leaf_add): %s", len(rows), stdout)
	}

	code, stdout, _ = tcmprof("rank", "--elf", fx.fw.ELF, fx.capture, "--top", "1")
	if code != 0 || !strings.Contains(stdout, "300 busy samples") || strings.Count(stdout, "\n") != 4 {
		t.Errorf("rank --top 1: exit %d\n%s", code, stdout)
	}
}

func TestPlanAndVerifyCommands(t *testing.T) {
	fx := newProfileFixture(t)
	dir := t.TempDir()
	planPath, list, svg := filepath.Join(dir, "plan.json"), filepath.Join(dir, "plan.txt"), filepath.Join(dir, "curve.svg")
	code, _, stderr := tcmprof("plan", "--elf", fx.fw.ELF, "--map", fx.fw.MapPath, fx.capture, "--budget", "1K",
		"--format", "json", "-o", planPath, "--format", "list", "-o", list, "--svg", svg)
	if code != 0 {
		t.Fatalf("plan: exit %d: %s", code, stderr)
	}
	plan, err := readPlan(planPath)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range plan.Entries {
		names = append(names, e.Symbol)
	}
	// leaf_add is called from ITCM code, hash_buf only from flash: both fit
	// in 1 KiB and are the only functions with samples.
	if strings.Join(names, " ") != "hash_buf leaf_add" && strings.Join(names, " ") != "leaf_add hash_buf" {
		t.Errorf("planned %v, want hash_buf and leaf_add", names)
	}
	if plan.Budget != 1024 || plan.Prediction.Samples != 300 || plan.BusySamples != 300 {
		t.Errorf("budget %d, %d of %d busy samples covered", plan.Budget, plan.Prediction.Samples, plan.BusySamples)
	}
	// The summary and the list's format are pinned by TestGoldenOutputs.
	if data, err := os.ReadFile(list); err != nil || strings.Count(string(data), "\n") != 2 {
		t.Errorf("list output: %q, %v", data, err)
	}
	if data, err := os.ReadFile(svg); err != nil || !strings.Contains(string(data), `class="exact"`) {
		t.Errorf("svg output: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp*")); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}

	// The image the plan was made from does not meet it: nothing moved.
	code, stdout, stderr := tcmprof("verify", "--elf", fx.fw.ELF, "--plan", planPath)
	if code != exitVerifyFailed || strings.Count(stdout, "VIOLATION not in ITCM") != 2 ||
		!strings.Contains(stderr, "hash_buf") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("verify of the unchanged image: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "it is the image the plan was made from") {
		t.Errorf("verify of the unchanged image does not say it is the planned one: %s", stderr)
	}
	// A plan made from another image (so another build-id) that this one
	// did not follow at all: was the output left out of the build?
	data, err := os.ReadFile(planPath)
	if err != nil {
		t.Fatal(err)
	}
	otherPlan := filepath.Join(dir, "other-plan.json")
	write(t, otherPlan, strings.Replace(string(data), `"build_id": "`, `"build_id": "00`, 1))
	code, _, stderr = tcmprof("verify", "--elf", fx.fw.ELF, "--plan", otherPlan)
	if code != exitVerifyFailed || !strings.Contains(stderr, "none of the 2 planned functions is in ITCM") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("verify of an image built without the plan: exit %d, stderr:\n%s", code, stderr)
	}

	// A zephyr output also writes its Kconfig fragment beside it.
	cmake := filepath.Join(dir, "itcm.cmake")
	if code, _, stderr := tcmprof("plan", "--elf", fx.fw.ELF, "--map", fx.fw.MapPath, fx.capture, "--format", "zephyr", "-o", cmake); code != 0 {
		t.Fatalf("plan --format zephyr: exit %d: %s", code, stderr)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "itcm.conf")); err != nil || string(data) != "CONFIG_CODE_DATA_RELOCATION=y\n" {
		t.Errorf("itcm.conf: %q, %v", data, err)
	}
	if data, _ := os.ReadFile(cmake); strings.Count(string(data), "zephyr_code_relocate(") != 1 {
		t.Errorf("itcm.cmake (hash_buf and leaf_add come from one source):\n%s", data)
	}
}

// TestPlacementCommandErrors feeds each command bad files (bad flags are
// TestPlanFlags'): every one must fail with exit 1 and one line on stderr
// naming the problem.
func TestPlacementCommandErrors(t *testing.T) {
	fx := newProfileFixture(t)
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.json")
	os.WriteFile(garbage, []byte(`{"version": 1, "nonsense": true}`), 0o644)
	empty, notPlan := filepath.Join(dir, "empty.json"), filepath.Join(dir, "other.json")
	write(t, empty, "")
	write(t, notPlan, `{"entries": []}`)
	out := filepath.Join(dir, "out.json")
	unbuilt := filepath.Join(dir, "unbuilt")
	if err := os.MkdirAll(filepath.Join(unbuilt, "zephyr"), 0o755); err != nil {
		t.Fatal(err)
	}
	elfArgs := []string{"--elf", fx.fw.ELF, "--map", fx.fw.MapPath, fx.capture}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"rank without elf", []string{"rank", fx.capture}, "give --elf or --build-dir"},
		{"rank build dir missing", []string{"rank", "--build-dir", filepath.Join(dir, "build"), fx.capture}, "no zephyr/ directory, so not a west build directory: give the one west build wrote"},
		{"rank build dir without ELF", []string{"rank", "--build-dir", unbuilt, fx.capture}, "has no zephyr/zephyr.elf: did west build finish? (or give --elf)"},
		{"rank missing capture", []string{"rank", "--elf", fx.fw.ELF, filepath.Join(dir, "none.tcmcap")}, "no such file"},
		{"rank not a capture", []string{"rank", "--elf", fx.fw.ELF, fx.fw.ELF}, ""},
		{"plan budget over ITCM", append([]string{"plan", "--budget", "1M", "--format", "json", "-o", out}, elfArgs...), "exceeds the "},
		{"plan budget over ITCM advice", append([]string{"plan", "--budget", "1M", "--format", "json", "-o", out}, elfArgs...), " bytes of free ITCM; give --budget "},
		{"plan without map", []string{"plan", "--elf", fx.fw.ELF, fx.capture, "--format", "json", "-o", out}, "needs the link map"},
		{"plan bad exclude", append([]string{"plan", "--exclude", "[", "--format", "json", "-o", out}, elfArgs...), "bad exclude pattern"},
		{"plan runner-up of density", append([]string{"plan", "--objective", "density", "--runner-up"}, elfArgs...), "the runner-up is the stalls objective's second plan"},
		{"plan runner-up where all fits", append([]string{"plan", "--runner-up", "--format", "json", "-o", out}, elfArgs...), "no runner-up: every plan the stalls objective weighs"},
		{"plan unwritable", append([]string{"plan", "--format", "json", "-o", filepath.Join(dir, "no", "dir", "p.json")}, elfArgs...), "no such file"},
		{"verify missing plan", []string{"verify", "--elf", fx.fw.ELF, "--plan", filepath.Join(dir, "none.json")}, "no such file"},
		{"verify garbage plan", []string{"verify", "--elf", fx.fw.ELF, "--plan", garbage}, "not a plan file (tcmprof plan --format json writes one): json: unknown field"},
		{"verify plan is an ELF", []string{"verify", "--elf", fx.fw.ELF, "--plan", fx.fw.ELF}, "not a plan file (tcmprof plan --format json writes one): invalid character"},
		{"verify empty plan", []string{"verify", "--elf", fx.fw.ELF, "--plan", empty}, "not a plan file (tcmprof plan --format json writes one): the file is empty"},
		{"verify JSON not a plan", []string{"verify", "--elf", fx.fw.ELF, "--plan", notPlan}, "not a plan file (tcmprof plan --format json writes one): no plan version"},
		{"verify without elf", []string{"verify", "--plan", garbage}, ""},
		{"verify elf is not an ELF", []string{"verify", "--elf", garbage, "--plan", garbage}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := tcmprof(tc.args...)
			// Warnings may come first (this firmware has none of the
			// teensy41 board's boot symbols); the error is one line.
			var errs []string
			for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
				if !strings.HasPrefix(line, "tcmprof: warning: ") {
					errs = append(errs, line)
				}
			}
			if code != 1 || len(errs) != 1 || !strings.HasPrefix(errs[0], "tcmprof: ") || !strings.Contains(errs[0], tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 1 and one error line containing %q", code, stderr, tc.want)
			}
			// Messages are the user's words, not the code's: no
			// package names ("place: ", "linker: ").
			if len(errs) == 1 && packagePrefix.MatchString(errs[0]) {
				t.Errorf("error line %q names a Go package", errs[0])
			}
		})
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed plan left an output file")
	}
}

var packagePrefix = regexp.MustCompile(`^tcmprof: (place|linker|profile|live|diff|elf|sample|sim|loadtest): `)

// A budget the plan can not use comes with the --budget that would do.
// (A budget that fits nothing is refused on the demo, in
// TestIncompleteCaptureOnQEMUDemo: in this firmware the smallest candidate
// saves a veneer and fits any budget.)
func TestBudgetAdvice(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{&place.BudgetError{Budget: 8, Need: 12, Smallest: "k_uptime_ticks"},
			"a budget of 8 bytes fits no function: the smallest candidate, k_uptime_ticks, needs 12 bytes of ITCM; give --budget 12 or more"},
		{&place.BudgetError{Budget: 204800, Free: 130648},
			"budget 204800 bytes exceeds the 130648 bytes of free ITCM; give --budget 130648 or less, or none for all of it"},
		{fmt.Errorf("wrapped: %w", &place.BudgetError{Budget: 1, Need: 4, Smallest: "f"}), "; give --budget 4 or more"},
		{errors.New("unknown objective"), "unknown objective"},
	} {
		if got := budgetAdvice(tt.err).Error(); !strings.HasSuffix(got, tt.want) {
			t.Errorf("%v: %q, want it to end in %q", tt.err, got, tt.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "4096": 4096, "0x1000": 4096, "32K": 32 << 10, "32KiB": 32 << 10, "32 KiB": 32 << 10,
		"32KB": 32 << 10, "1M": 1 << 20, "1MiB": 1 << 20, "2k": 2048,
	} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "K", "-1", "1.5K", "12Q", "5G", "4097M", "0x"} {
		if got, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", bad, got)
		}
	}
}

// TestPlanJSONIsThePlan: the json format is exactly what linker reads
// back, so verify and the renderers see the same plan.
func TestPlanJSONIsThePlan(t *testing.T) {
	fx := newProfileFixture(t)
	path := filepath.Join(t.TempDir(), "p.json")
	if code, _, stderr := tcmprof("plan", "--elf", fx.fw.ELF, "--map", fx.fw.MapPath, fx.capture, "--format", "json", "-o", path); code != 0 {
		t.Fatal(stderr)
	}
	p, err := readPlan(path)
	if err != nil {
		t.Fatal(err)
	}
	if p.Version != place.PlanVersion || p.Budget != p.ITCMSize-p.ITCMUsed {
		t.Errorf("default budget %d, want the free ITCM %d", p.Budget, p.ITCMSize-p.ITCMUsed)
	}
}

// Several --format/-o pairs are written all or none: when a later output
// cannot be written, the earlier ones keep their old content, no
// temporary file is left and nothing goes to standard output (-o -).
func TestPlanWritesAllOrNone(t *testing.T) {
	fx := newProfileFixture(t)
	dir := t.TempDir()
	first := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(first, []byte("old plan\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, second := range map[string]string{
		"missing directory": filepath.Join(dir, "no", "such", "plan.txt"),
		"a directory":       dir,
	} {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := tcmprof("plan", "--elf", fx.fw.ELF, "--map", fx.fw.MapPath, fx.capture,
				"--format", "ld", "-o", "-", "--format", "json", "-o", first, "--format", "list", "-o", second, "--svg", filepath.Join(dir, "curve.svg"))
			if code != 1 || !strings.Contains(stderr, "tcmprof: writing "+second+": ") {
				t.Errorf("exit %d\n%s", code, stderr)
			}
			if stdout != "" { // standard output can not be taken back: it waits for the files
				t.Errorf("-o - written though the files failed:\n%.200s", stdout)
			}
			if data, _ := os.ReadFile(first); string(data) != "old plan\n" {
				t.Errorf("%s was replaced by a plan whose other outputs failed:\n%.200s", first, data)
			}
			if names := dirNames(t, dir); len(names) != 1 {
				t.Errorf("directory holds %v, want only plan.json", names)
			}
		})
	}
}
