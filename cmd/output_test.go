// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	pprof "github.com/google/pprof/profile"

	"github.com/tcmprof/tcmprof/place"
)

// -o - is standard output for every command with -o; what the command
// would print there then goes to standard error.
func TestOutputToStdout(t *testing.T) {
	fx := newProfileFixture(t)
	build := []string{"--elf", fx.fw.ELF, "--map", fx.fw.MapPath, "--board", "qemu-demo"}
	dir := t.TempDir()
	t.Chdir(dir) // a file named "-" would land here

	code, stdout, stderr := tcmprof(append([]string{"profile", fx.capture, "-o", "-"}, build...)...)
	if p, err := pprof.ParseData([]byte(stdout)); code != 0 || err != nil || len(p.Sample) == 0 ||
		!strings.Contains(stderr, "wrote standard output") {
		t.Errorf("profile -o -: exit %d, %v, stderr %s", code, err, stderr)
	}

	code, stdout, stderr = tcmprof(append([]string{"diff", fx.capture, fx.capture, "-o", "-"}, build...)...)
	if _, err := pprof.ParseData([]byte(stdout)); code != 0 || err != nil || !strings.Contains(stderr, "by function") {
		t.Errorf("diff -o -: exit %d, %v: want the base profile on stdout and the table on stderr; stderr %s", code, err, stderr)
	}

	code, stdout, stderr = tcmprof(append([]string{"plan", fx.capture, "--format", "json", "-o", "-"}, build...)...)
	plan, err := place.ReadPlanJSON(strings.NewReader(stdout))
	if code != 0 || err != nil || len(plan.Entries) != 2 ||
		!strings.Contains(stderr, "busy samples covered: 300 of 300") {
		t.Errorf("plan --format json -o -: exit %d, %v: want the plan on stdout and the summary on stderr\n%s%s", code, err, stdout, stderr)
	}

	// Without --format, plan prints its summary.
	code, stdout, stderr = tcmprof(append([]string{"plan", fx.capture}, build...)...)
	if code != 0 || !strings.HasPrefix(stdout, "plan (ld layout): 2 functions") || !strings.Contains(stdout, "benefit by budget:") {
		t.Errorf("plan without --format: exit %d\n%s%s", code, stdout, stderr)
	}

	if _, err := os.Stat(filepath.Join(dir, "-")); err == nil {
		t.Error(`-o - wrote a file named "-"`)
	}
	flagErrors(t, newPlanCmd, []flagError{{[]string{"c", "--format", "zephyr", "-o", "-"}, "zephyr writes two files"}})
	flagErrors(t, newTopCmd, []flagError{{[]string{"-o", "-"}, "top's screen is on standard output"}})
}

// plan checks that it has a map before it reads the capture: a build
// directory without zephyr.map is refused before a garbage capture is
// even opened.
func TestPlanNeedsTheMapFirst(t *testing.T) {
	fx := newProfileFixture(t)
	bd := t.TempDir()
	z := filepath.Join(bd, "zephyr")
	if err := os.MkdirAll(z, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fx.fw.ELF)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(z, "zephyr.elf"), string(b))
	garbage := filepath.Join(bd, "garbage.tcmcap")
	write(t, garbage, "not a capture")
	code, stdout, stderr := tcmprof("plan", "--build-dir", bd, garbage)
	want := "tcmprof: plan needs the link map (input sections and objects): --build-dir " + bd + " has no zephyr/zephyr.map; give --map\n"
	if code != 1 || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and %q", code, stdout, stderr, want)
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// No command writes over a file it reads, nor one output over another:
// each is refused in one line before anything is read or written, by the
// same file name, another name of it, or a hard link to it, and the input
// stays as it was.
func TestOutputNeverOverwritesAnInput(t *testing.T) {
	fx := newProfileFixture(t)
	dir := t.TempDir()
	t.Chdir(dir)
	copyFile := func(from, to string) string {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		write(t, to, string(b))
		return to
	}
	// Copies, so that a command that did overwrite them spoils no other test.
	elfPath := copyFile(fx.fw.ELF, filepath.Join(dir, "fw.elf"))
	mapPath := copyFile(fx.fw.MapPath, filepath.Join(dir, "fw.map"))
	capture := copyFile(fx.capture, filepath.Join(dir, "run.tcmcap"))
	conf := copyFile(fx.capture, filepath.Join(dir, "itcm.conf")) // a capture named as plan's Kconfig fragment
	link := filepath.Join(dir, "link.tcmcap")
	if err := os.Link(capture, link); err != nil {
		t.Fatal(err)
	}
	trace := copyFile(newSimFixture(t, fx.fw, fx.fw.BuildID(t)).trace, filepath.Join(dir, "run.trace"))
	runJSON := filepath.Join(dir, "stock.json")
	write(t, runJSON, "{}")
	build := []string{"--elf", elfPath, "--map", mapPath, "--board", "qemu-demo"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"profile", capture, "-o", capture}, "-o " + capture + " would overwrite the capture " + capture + ": give another output file"},
		{[]string{"profile", capture, "-o", "sub/../run.tcmcap"}, "-o sub/../run.tcmcap would overwrite the capture " + capture},
		{[]string{"profile", capture, "-o", link}, "-o " + link + " would overwrite the capture " + capture + " (another name of the same file)"},
		{[]string{"profile", capture, "-o", mapPath}, "would overwrite the map file " + mapPath},
		{[]string{"plan", capture, "--format", "json", "-o", elfPath}, "-o " + elfPath + " would overwrite the ELF " + elfPath},
		{[]string{"plan", capture, "--format", "ld", "-o", "run.tcmcap"}, "-o run.tcmcap would overwrite the capture " + capture},
		{[]string{"plan", capture, "--svg", capture}, "--svg " + capture + " would overwrite the capture"},
		{[]string{"plan", conf, "--format", "zephyr", "-o", "itcm.cmake"}, "-o itcm.cmake's Kconfig fragment itcm.conf would overwrite the capture " + conf},
		{[]string{"plan", capture, "--format", "json", "-o", "p.json", "--svg", "p.json"}, "-o p.json and --svg p.json are the same file: give each its own"},
		{[]string{"plan", capture, "--format", "json", "-o", "p.json", "--svg", "./p.json"}, "-o p.json and --svg ./p.json are the same file"},
		{[]string{"diff", capture, conf, "-o", conf}, "-o " + conf + " would overwrite AFTER " + conf + ": give another output file"},
		{[]string{"diff", capture, link, "-o", elfPath}, "would overwrite the ELF " + elfPath},
		{[]string{"sim", "--unit", "nonleaf", trace, "--capture", trace}, "--capture " + trace + " would overwrite the trace " + trace},
		{[]string{"capture", "--port", filepath.Join(dir, "no-such-port"), "-o", "x.tcmcap", "--raw", "x.tcmcap"}, "-o x.tcmcap and --raw x.tcmcap are the same file: give each its own"},
		{[]string{"capture", "--port", filepath.Join(dir, "no-such-port"), "--resume", capture, "--raw", link}, "--raw " + link + " would overwrite the --resume capture " + capture},
		{[]string{"top", "--port", filepath.Join(dir, "no-such-port"), "-o", elfPath}, "-o " + elfPath + " would overwrite the ELF"},
		{[]string{"bench", "udp-echo", "127.0.0.1", "--steps", "1:1:1", "--json", "r.json", "--csv", "r.json"}, "--json r.json and --csv r.json are the same file"},
		{[]string{"bench", "compare", runJSON, capture, "--svg", runJSON}, "--svg " + runJSON + " would overwrite BEFORE " + runJSON},
	} {
		args := tc.args
		if args[0] != "capture" && args[0] != "bench" {
			args = append(args, build...)
		}
		if args[0] == "sim" || args[0] == "top" {
			args = append(args, "--force") // the trace's build-id is the original ELF's; its copy has the same
		}
		before := map[string]string{}
		for _, in := range []string{elfPath, mapPath, capture, conf, trace, runJSON} {
			b, _ := os.ReadFile(in)
			before[in] = string(b)
		}
		code, stdout, stderr := tcmprof(args...)
		if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and one line with %q", tc.args, code, stdout, stderr, tc.want)
		}
		for in, was := range before {
			if b, _ := os.ReadFile(in); string(b) != was {
				t.Errorf("%v changed %s", tc.args, in)
			}
		}
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"fw.elf", "fw.map", "itcm.conf", "link.tcmcap", "run.tcmcap", "run.trace", "stock.json"}) {
		t.Errorf("the refused commands left %v", names)
	}
}
