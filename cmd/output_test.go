// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	pprof "github.com/google/pprof/profile"

	"github.com/tcmprof/tcmprof/linker"
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
	plan, err := linker.ReadPlanJSON(strings.NewReader(stdout))
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
