// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tcmprof/tcmprof/profile/profiletest"
	"github.com/tcmprof/tcmprof/sample"
)

// TestIncompleteCaptureOnQEMUDemo takes the capture of issue 18: the demo
// firmware in QEMU, a PC+LR snapshot whose drain is cut by killing the
// emulator (frozen first, so that the cut falls mid-drain however loaded
// the machine is). report, profile and plan still read it, and each says
// how many records are missing, which, and that the run's end is among
// them; the profile has no context label, as a PC+LR capture has no
// context.
func TestIncompleteCaptureOnQEMUDemo(t *testing.T) {
	dir := t.TempDir()
	elfPath, mapPath, inst := bootDemo(t)
	capture, raw := filepath.Join(dir, "cut.tcmcap"), filepath.Join(dir, "cut.raw")
	p, capErr := startTcmprof(t, "capture", "--port", inst.PTY, "--rate", "10000", "--fields", "pc,lr", "--samples", "20000",
		"--raw", raw, "-o", capture)
	// A full PC+LR buffer is about 28 KB on the wire; the sampling phase
	// brings a few hundred bytes of STATUS answers and log lines.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(2 * time.Millisecond) {
		if fi, err := os.Stat(raw); err == nil && fi.Size() > 10000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the drain did not start within a minute")
		}
	}
	if err := inst.Freeze(); err != nil {
		t.Fatal(err)
	}
	inst.Kill()
	if err := p.Wait(); err == nil {
		t.Fatalf("capture exit 0 though QEMU was killed mid-drain:\n%s", capErr)
	}
	c, err := sample.ReadFile(capture)
	if err != nil {
		t.Fatalf("%v\n%s", err, capErr)
	}
	total := int(c.Header.Stored - c.Header.HeldFrom)
	missing := total - len(c.Records)
	t.Logf("%d of %d records arrived; missing %v", len(c.Records), total, c.Missing)
	if len(c.Records) == 0 || missing == 0 || c.Missing[len(c.Missing)-1].End != c.Header.Stored {
		t.Fatalf("want the drain cut: %d of %d records, missing %v", len(c.Records), total, c.Missing)
	}
	lines := strings.Split(strings.TrimSpace(capErr.String()), "\n")
	if want := fmt.Sprintf("tcmprof: warning: --samples 20000 is more than the device's buffer holds with --fields pc,lr (%d records)", c.Header.Capacity); !strings.Contains(capErr.String(), want) {
		t.Errorf("capture's stderr lacks %q:\n%s", want, capErr)
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "device disconnected") || !strings.Contains(last, "if the device still holds the run, fetch the rest with") {
		t.Errorf("capture's error line: %s", last)
	}

	// The warning, as every command gives it.
	wantWarning := regexp.MustCompile(fmt.Sprintf(`^%d of %d records missing \(\d+\.\d %%\), indices .*\(at the end of the run\): the figures are of the %d that arrived$`,
		missing, total, len(c.Records)))
	checkWarned := func(what, stderr string) {
		t.Helper()
		prefix := "tcmprof: warning: " + capture + ": "
		for _, line := range strings.Split(stderr, "\n") {
			if strings.HasPrefix(line, prefix) && wantWarning.MatchString(strings.TrimPrefix(line, prefix)) {
				return
			}
		}
		t.Errorf("%s: no warning about the missing records on stderr:\n%s", what, stderr)
	}
	image := []string{"--elf", elfPath, "--map", mapPath, "--board", "qemu-demo"}

	code, stdout, stderr := tcmprof(append([]string{"report", capture}, image...)...)
	if code != 0 {
		t.Fatalf("report: exit %d\n%s", code, stderr)
	}
	checkWarned("report", stderr)
	// The report's first paragraph is its first sentence and then the
	// warning, each wrapped to 80 columns (continuation lines indented).
	head, _, _ := strings.Cut(stdout, "\n\n")
	t.Logf("report:\n%s", head)
	sentences := strings.Split(strings.ReplaceAll(head, "\n  ", " "), "\n")
	if len(sentences) != 2 || !strings.HasPrefix(sentences[1], "warning: ") || !wantWarning.MatchString(strings.TrimPrefix(sentences[1], "warning: ")) {
		t.Errorf("the report's second sentence is not the warning:\n%s", stdout)
	}
	code, stdout, stderr = tcmprof(append([]string{"report", "--json", capture}, image...)...)
	var doc struct{ Missing *sample.Gaps }
	if code != 0 || json.Unmarshal([]byte(stdout), &doc) != nil || doc.Missing == nil {
		t.Fatalf("report --json: exit %d\n%s%s", code, stdout, stderr)
	}
	if m := doc.Missing; m.Records != uint64(missing) || m.Of != uint64(total) || !m.AtEnd || !reflect.DeepEqual(m.Ranges, c.Missing) {
		t.Errorf("report --json missing %+v; want %d of %d, ranges %v, at the end", m, missing, total, c.Missing)
	}

	pb := filepath.Join(dir, "cut.pb.gz")
	code, _, stderr = tcmprof(append([]string{"profile", capture, "-o", pb}, image...)...)
	if code != 0 {
		t.Fatalf("profile: exit %d\n%s", code, stderr)
	}
	checkWarned("profile", stderr)
	if tags := profiletest.Pprof(t, "-tags", pb); strings.Contains(tags, "context") || !strings.Contains(tags, "region") {
		t.Errorf("pprof -tags of a PC+LR profile (no context recorded, so no context label):\n%s", tags)
	}

	code, _, stderr = tcmprof(append([]string{"plan", capture, "--format", "json", "-o", filepath.Join(dir, "plan.json")}, image...)...)
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s", code, stderr)
	}
	checkWarned("plan", stderr)
	// A budget no function fits is refused, naming the smallest candidate.
	for _, budget := range []string{"0", "1"} {
		code, _, stderr = tcmprof(append([]string{"plan", capture, "--budget", budget, "--format", "json", "-o", filepath.Join(dir, "none.json")}, image...)...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 1 || !regexp.MustCompile(`^tcmprof: a budget of `+budget+` bytes fits no function: the smallest candidate, \S+, needs (\d+) bytes of ITCM; give --budget (\d+) or more$`).MatchString(lines[len(lines)-1]) {
			t.Errorf("plan --budget %s: exit %d\n%s", budget, code, stderr)
		}
	}
}
