// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/tcmprof/tcmprof/loadtest/echotest"
	"github.com/tcmprof/tcmprof/sample/device/devicetest"
)

// tcmprofOn runs tcmprof in this process with standard output and error
// in buffers that Streams says are terminals (or not, tty false), and
// top's screen scr (nil: none given).
func tcmprofOn(tty bool, scr tcell.Screen, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	s := Streams{In: strings.NewReader(""), Out: &out, Err: &errb, OutTTY: tty, ErrTTY: tty}
	if scr != nil {
		s.Screen = func() (tcell.Screen, error) { return scr, nil }
	}
	code = Main(s, args)
	return code, out.String(), errb.String()
}

// Streams.ErrTTY alone decides the progress display: bars redrawn in
// place (cursor movements) on a terminal, whatever is behind it, plain
// lines otherwise. The bars are drawn at the default width: a test's
// buffer has no size.
func TestProgressFollowsStreamsTTY(t *testing.T) {
	for _, tty := range []bool{false, true} {
		d := scriptedDevice(4096, devicetest.Faults{})
		port, _, _ := devicetest.ServePty(t, d)
		code, _, stderr := tcmprofOn(tty, nil, "capture", "--port", port, "-o", filepath.Join(t.TempDir(), "run.tcmcap"))
		if code != 0 {
			t.Fatalf("tty %v: exit %d: %s", tty, code, stderr)
		}
		bars := strings.Contains(stderr, "records 4096 / 4096") && strings.Contains(stderr, "\x1b[")
		plain := regexp.MustCompile(`(?m)^records: 4096 of 4096 \(100\.0 %\)$`).MatchString(stderr)
		if bars != tty || plain == tty {
			t.Errorf("tty %v: bars %v, plain lines %v:\n%q", tty, bars, plain, stderr)
		}
	}
	// bench udp-echo: its steps bar, against a local echo.
	echo := echotest.StartEcho(t, false, false)
	code, stdout, stderr := tcmprofOn(true, nil, "bench", "udp-echo", echo.String(), "--steps", "100:100:200",
		"--step-time", "300ms", "--window", "0.1s:0.3s", "--passes", "1")
	if code != 0 || !strings.Contains(stderr, "steps 2 / 2") || !strings.Contains(stdout, "lossless rate") {
		t.Errorf("bench on a terminal: exit %d\n%s%q", code, stdout, stderr)
	}
}

// shownScreen is a simulated terminal that keeps the text of the last
// frame shown, read on the drawing goroutine (tcell's simulation hands out
// its cells without a copy).
type shownScreen struct {
	tcell.SimulationScreen
	mu    sync.Mutex
	frame string
}

func (s *shownScreen) Show() {
	s.SimulationScreen.Show()
	cells, w, h := s.GetContents()
	var b strings.Builder
	for y := range h {
		for x := range w {
			b.WriteString(string(cells[y*w+x].Runes))
		}
		b.WriteString("\n")
	}
	s.mu.Lock()
	s.frame = b.String()
	s.mu.Unlock()
}

func (s *shownScreen) shown() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.frame
}

// top draws its interactive screen when standard output is a terminal
// (Streams.OutTTY) and -b is not given, and prints text blocks otherwise;
// on the screen a typed q ends it. The screen is tcell's simulation: the
// real terminal's handling (raw mode, restoring it) is
// TestTopScreenRestoresTerminal's, on a pty.
func TestTopChoosesItsScreenOnATerminal(t *testing.T) {
	for _, tc := range []struct {
		tty    bool
		args   []string
		screen bool
	}{
		{false, []string{"-n", "2"}, false},
		{true, []string{"-b", "-n", "2"}, false},
		{true, nil, true},
	} {
		d, fw := topDevice(t)
		port, _, _ := devicetest.ServePty(t, d)
		scr := &shownScreen{SimulationScreen: tcell.NewSimulationScreen("UTF-8")}
		args := append([]string{"top", "--port", port, "--elf", fw.ELF, "--interval", "200ms"}, tc.args...)
		type result struct {
			code           int
			stdout, stderr string
		}
		done := make(chan result, 1)
		go func() {
			code, stdout, stderr := tcmprofOn(tc.tty, scr, args...)
			done <- result{code, stdout, stderr}
		}()
		if tc.screen {
			waitFor(t, "the function table on the screen", func() bool { return strings.Contains(scr.shown(), "leaf_add") })
			scr.InjectKey(tcell.KeyRune, 'q', tcell.ModNone)
		}
		var r result
		select {
		case r = <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("tty %v %v: top still runs; screen:\n%s", tc.tty, tc.args, scr.shown())
		}
		frame := scr.shown()
		if r.code != 0 {
			t.Fatalf("tty %v %v: exit %d: %s", tc.tty, tc.args, r.code, r.stderr)
		}
		if got := frame != ""; got != tc.screen || tc.screen == strings.Contains(r.stdout, "innermost function") {
			t.Errorf("tty %v %v: screen drawn %v, want %v; stdout:\n%s", tc.tty, tc.args, got, tc.screen, r.stdout)
		}
		if tc.screen && (!strings.Contains(frame, "tcmprof top  "+port) || !strings.Contains(frame, "q quit")) {
			t.Errorf("screen without its title or keys:\n%s", frame)
		}
	}
}
