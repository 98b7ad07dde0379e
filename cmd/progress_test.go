// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/tcmprof/tcmprof/sample/device/devicetest"
)

// With stderr not a terminal (a log, a pipe), a capture says in plain
// lines that the device samples (time, and samples taken from its STATUS
// answers, the last with the run's total) and how many records arrived.
func TestCaptureProgressPlainLines(t *testing.T) {
	d := scriptedDevice(4096, devicetest.Faults{})
	d.RunTime = time.Second
	port, _, _ := devicetest.ServePty(t, d)
	out := filepath.Join(t.TempDir(), "run.tcmcap")
	code, _, stderr := tcmprof("capture", "--port", port, "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// The last sampling line has the run's count, not that of the moment
	// the first line was written (the lines are seconds apart).
	for _, want := range []string{`(?m)^sampling: \d+s, 4096 samples taken$`, `(?m)^records: 4096 of 4096 \(100\.0 %\)$`} {
		if !regexp.MustCompile(want).MatchString(stderr) {
			t.Errorf("no line matching %s in stderr:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "\x1b[") {
		t.Errorf("escape sequences in plain-line progress:\n%q", stderr)
	}
}

// On a terminal that reports 0 columns (a pty nobody sized), the bars are
// drawn at a default width instead of not at all: the sampling line, then
// the records.
func TestCaptureProgressOnUnsizedTerminal(t *testing.T) {
	d := scriptedDevice(4096, devicetest.Faults{})
	d.RunTime = time.Second
	port, _, _ := devicetest.ServePty(t, d)
	master, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer master.Close()
	if cols, rows, err := pty.Getsize(tty); err != nil || cols != 0 || rows != 0 {
		t.Fatalf("a new pty is %dx%d (%v), want 0x0", cols, rows, err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(exe)
	c.Env = append(os.Environ(), helperEnv+"="+strings.Join([]string{"capture", "--port", port, "-o", filepath.Join(t.TempDir(), "run.tcmcap")}, "\x1f"))
	c.Stderr = tty
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	screen := make(chan string)
	go func() {
		b, _ := io.ReadAll(master) // until the child closes the pty (EIO)
		screen <- string(b)
	}()
	if err := c.Wait(); err != nil {
		t.Fatalf("capture: %v", err)
	}
	got := <-screen
	for _, want := range []string{"sampling", "samples taken", "records 4096 / 4096"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q on the terminal:\n%q", want, got)
		}
	}
}

// withoutProgress is stderr without its plain progress lines.
func withoutProgress(stderr string) string {
	return regexp.MustCompile(`(?m)^(sampling|records|steps): .*\n`).ReplaceAllString(stderr, "")
}
