// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/tcmprof/tcmprof/internal/armtest"
	"github.com/tcmprof/tcmprof/sample"
	"github.com/tcmprof/tcmprof/sample/device/devicetest"
)

// ptyScreen is tcmprof running on a pseudo-terminal of the test's own, as
// on a user's terminal: the test types on the master side, reads what the
// program draws, and reads the terminal's termios on the slave side.
type ptyScreen struct {
	t      *testing.T
	cmd    *exec.Cmd
	master *os.File
	slave  *os.File
	mu     sync.Mutex
	out    bytes.Buffer
	exited chan error
}

func startOnPty(t *testing.T, args ...string) *ptyScreen {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	if err := pty.Setsize(master, &pty.Winsize{Rows: 30, Cols: 110}); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ps := &ptyScreen{t: t, master: master, slave: slave, exited: make(chan error, 1)}
	ps.cmd = exec.Command(exe)
	ps.cmd.Env = append(os.Environ(), "TERM=xterm", helperEnv+"="+strings.Join(args, "\x1f"))
	ps.cmd.Stdin, ps.cmd.Stdout, ps.cmd.Stderr = slave, slave, slave
	// Its own session with the pty as controlling terminal, so that
	// /dev/tty is the pty, as in a terminal emulator.
	ps.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			ps.mu.Lock()
			ps.out.Write(buf[:n])
			ps.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		if ps.cmd.Process != nil && ps.cmd.ProcessState == nil {
			ps.cmd.Process.Kill()
			<-ps.exited
		}
		master.Close()
		slave.Close()
	})
	return ps
}

func (ps *ptyScreen) start() {
	if err := ps.cmd.Start(); err != nil {
		ps.t.Fatal(err)
	}
	go func() { ps.exited <- ps.cmd.Wait() }()
}

func (ps *ptyScreen) output() string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.out.String()
}

// waitOutput waits until the program has drawn want (since mark bytes of
// output), and returns the output's length then.
func (ps *ptyScreen) waitOutput(mark int, want string) int {
	ps.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		out := ps.output()
		if i := strings.Index(out[mark:], want); i >= 0 {
			return len(out)
		}
		if time.Now().After(deadline) {
			ps.t.Fatalf("%q never drawn; output:\n%q", want, out[mark:])
		}
	}
}

func (ps *ptyScreen) termios() *unix.Termios {
	ps.t.Helper()
	tio, err := unix.IoctlGetTermios(int(ps.slave.Fd()), unix.TCGETS)
	if err != nil {
		ps.t.Fatal(err)
	}
	return tio
}

func (ps *ptyScreen) wait() {
	ps.t.Helper()
	select {
	case err := <-ps.exited:
		if err != nil {
			ps.t.Fatalf("%v; output:\n%q", err, ps.output())
		}
	case <-time.After(20 * time.Second):
		ps.t.Fatalf("still running; output:\n%q", ps.output())
	}
}

// The interactive view on a terminal: it takes the terminal over (raw
// mode, the alternate screen), draws the table, reacts to keys, and
// whichever way it ends (q, Ctrl-C typed, SIGTERM) it restores the
// terminal exactly, stops the run on the device and writes the capture.
func TestTopScreenRestoresTerminal(t *testing.T) {
	for _, quit := range []string{"q", "ctrl-c", "SIGTERM"} {
		t.Run(quit, func(t *testing.T) {
			d, fw := topDevice(t)
			port, _, _ := devicetest.ServePty(t, d)
			out := filepath.Join(t.TempDir(), "screen.tcmcap")
			ps := startOnPty(t, "top", "--port", port, "--elf", fw.ELF, "--interval", "200ms", "-o", out)
			before := ps.termios()
			if before.Lflag&unix.ICANON == 0 || before.Lflag&unix.ECHO == 0 {
				t.Fatalf("a new pty is not in canonical mode with echo: lflag %#x", before.Lflag)
			}
			ps.start()
			mark := ps.waitOutput(0, "innermost function, by share")
			if lflag := ps.termios().Lflag; lflag&(unix.ICANON|unix.ECHO) != 0 {
				t.Errorf("while top runs the terminal is not raw: lflag %#x", lflag)
			}
			if !strings.Contains(ps.output(), "tcmprof top  "+port) {
				t.Errorf("no title: %q", ps.output())
			}
			ps.master.Write([]byte("c"))
			mark = ps.waitOutput(mark, "since start")
			ps.master.Write([]byte("s"))
			ps.waitOutput(mark, "amples/B") // "sort: share" becomes "sort: samples/B": tcell redraws the cells that change
			switch quit {
			case "q":
				ps.master.Write([]byte("q"))
			case "ctrl-c":
				ps.master.Write([]byte{0x03})
			case "SIGTERM":
				ps.cmd.Process.Signal(syscall.SIGTERM)
			}
			ps.wait()
			after := ps.termios()
			if after.Iflag != before.Iflag || after.Oflag != before.Oflag || after.Lflag != before.Lflag || after.Cflag != before.Cflag || after.Cc != before.Cc {
				t.Errorf("terminal not restored:\nbefore %+v\nafter  %+v", before, after)
			}
			// The main screen is back, with the cursor.
			if tail := ps.output()[mark:]; !strings.Contains(tail, "\x1b[?1049l") || !strings.Contains(tail, "\x1b[?25h") {
				t.Errorf("no return to the main screen with the cursor shown: %q", tail)
			}
			c := checkCaptureFile(t, d, out, int(d.Stored()))
			if c.Header.Stored != uint32(len(c.Records)) {
				t.Errorf("header %+v, %d records", c.Header, len(c.Records))
			}
			if code, _, stderr := tcmprof("capture", "--port", port, "--samples", "10", "-o", filepath.Join(t.TempDir(), "next.tcmcap")); code != 0 {
				t.Errorf("the device takes no new run after top: %s", stderr)
			}
		})
	}
}

// tmuxPane runs a shell command in a detached tmux session on a server of
// its own, and reads the screen back as tmux renders it: tmux is the
// terminal emulator here, an oracle for what a user would see.
type tmuxPane struct {
	t      *testing.T
	socket string
}

func newTmuxPane(t *testing.T, width, height int, env, command string) *tmuxPane {
	t.Helper()
	armtest.NeedTools(t, "tmux")
	p := &tmuxPane{t: t, socket: fmt.Sprintf("tcmprof-test-%d", os.Getpid())}
	p.run("-f", "/dev/null", "new-session", "-d", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), "-e", env, command)
	t.Cleanup(func() { exec.Command("tmux", "-L", p.socket, "kill-server").Run() })
	return p
}

func (p *tmuxPane) run(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", p.socket}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (p *tmuxPane) screen() string { return p.run("capture-pane", "-p") }

func (p *tmuxPane) keys(keys ...string) { p.run(append([]string{"send-keys"}, keys...)...) }

// waitScreen waits until the screen shows every one of want.
func (p *tmuxPane) waitScreen(want ...string) string {
	p.t.Helper()
	return p.waitScreenFor(fmt.Sprintf("%q", want), func(s string) bool {
		for _, w := range want {
			if !strings.Contains(s, w) {
				return false
			}
		}
		return true
	})
}

// waitScreenFor polls the pane until ok holds for its screen; what names
// the condition in the failure.
func (p *tmuxPane) waitScreenFor(what string, ok func(screen string) bool) string {
	p.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		s := p.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the screen never showed %s:\n%s", what, s)
		}
	}
}

// The interactive view as a user sees it, in tmux: the table, every key,
// a resize to a narrow terminal, and a terminal left as it was (stty).
func TestTopScreenInTmux(t *testing.T) {
	d, fw := topDevice(t)
	port, _, _ := devicetest.ServePty(t, d)
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join([]string{"top", "--port", port, "--elf", fw.ELF, "--map", fw.MapPath, "--fields", "pc,lr,ctx", "--interval", "200ms"}, "\x1f")
	script := fmt.Sprintf(`cd %s && stty -g > before && %s; echo $? > code; stty -g > after; sleep 120`, dir, exe)
	p := newTmuxPane(t, 110, 30, helperEnv+"="+args, script)

	s := p.waitScreen("tcmprof top  "+port, "innermost function, by share", "q quit")
	lines := strings.Split(s, "\n")
	if !strings.HasPrefix(lines[1], "busy ") || !strings.Contains(s, "context   main ") || !strings.Contains(s, "flash   mix") {
		t.Errorf("screen:\n%s", s)
	}
	p.keys("s")
	p.waitScreen("sort: samples/B", "innermost function, by samples/B")
	p.keys("c")
	p.waitScreen("since start  sort: samples/B", "since start ")
	p.keys("Space")
	s = p.waitScreen("[paused]")
	time.Sleep(600 * time.Millisecond) // three intervals: the figures stay
	if p.screen() != s {
		t.Errorf("paused screen changed:\n%s\nthen:\n%s", s, p.screen())
	}
	// Reset while paused: the emptied figures stay until the display goes on.
	p.keys("r")
	p.waitScreen("since start 0.0 s: 0 samples", "[paused]")
	p.keys("Space")
	p.keys("w")
	p.waitScreen("wrote top-")

	// Narrow: names cut, columns dropped, the shares kept.
	p.run("resize-window", "-x", "40", "-y", "16")
	// Right after the resize tmux shows the old frame cut at 40 columns;
	// the redrawn one has dropped the interval column.
	s = p.waitScreenFor("the table redrawn without its interval column on 40 columns", func(s string) bool {
		return strings.Contains(s, "share  ") && !strings.Contains(s, "95 % interval")
	})
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if n := len([]rune(l)); n > 40 {
			t.Errorf("line %q is %d wide on a 40-column terminal", l, n)
		}
	}

	p.keys("q")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(dir, "after")); err == nil && len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("top did not end:\n%s", p.screen())
		}
	}
	before, _ := os.ReadFile(filepath.Join(dir, "before"))
	after, _ := os.ReadFile(filepath.Join(dir, "after"))
	code, _ := os.ReadFile(filepath.Join(dir, "code"))
	if string(before) != string(after) || strings.TrimSpace(string(code)) != "0" {
		t.Errorf("exit %s; stty -g before %q, after %q", code, before, after)
	}
	written, _ := filepath.Glob(filepath.Join(dir, "top-*.tcmcap"))
	if len(written) != 1 {
		t.Fatalf("w wrote %v", written)
	}
	c, err := sample.ReadFile(written[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Records) == 0 {
		t.Error("w wrote no records")
	}
	for _, r := range c.Records {
		if !reflect.DeepEqual(r, d.Record(r.Index)) {
			t.Fatalf("record %d = %+v, device sent %+v", r.Index, r, d.Record(r.Index))
		}
	}
}
