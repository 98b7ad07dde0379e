// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"bytes"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tcmprof/tcmprof/firmware-sampler/qemu"
	"github.com/tcmprof/tcmprof/internal/qemutest"
	"github.com/tcmprof/tcmprof/loadtest"
)

// TestBenchUDPEchoOnQEMU: `tcmprof bench udp-echo` against the demo
// firmware built with its LAN9118 driver, through QEMU's user-mode network.
// QEMU is slow and has no cache, so the test asserts what the run shows,
// not a speed: the firmware's driver came up, it answered the probe, and
// every step's echoes were matched to what was sent, unaltered and once.
// (How many came back inside a step's window depends on how the busy host
// runs QEMU; loadtest's model tests check the window counts exactly.)
func TestBenchUDPEchoOnQEMU(t *testing.T) {
	qemutest.Need(t)
	dir := t.TempDir()
	demo := qemutest.Demo(t, qemu.BuildOptions{NIC: "lan9118"})
	port := freeForwardPort(t)
	inst := qemutest.Boot(t, demo.ELF, qemu.StartOptions{Icount: 3, EchoForward: fmt.Sprintf("127.0.0.2:%d", port)}, 2*time.Minute)
	sp, err := inst.OpenSerial()
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if err := sp.SetReadTimeout(200 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if line := waitForLine(t, sp, "lan9118: up as 10.0.2.15", 30*time.Second); !strings.Contains(line, "echo on UDP port 7") {
		t.Fatalf("driver line %q", line)
	}

	out := filepath.Join(dir, "qemu.json")
	code, stdout, stderr := tcmprof("bench", "udp-echo", fmt.Sprintf("127.0.0.2:%d", port), "--local", fmt.Sprintf("127.0.0.1:%d", port),
		"--steps", "20:20:60", "--step-time", "1s", "--window", "0.25s:1s", "--passes", "2", "--drain", "0.5s",
		"--probe-timeout", "20s", "--json", out)
	t.Logf("QEMU demo:\n%s%s", stdout, stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	run, err := loadtest.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Steps) != 6 || run.Unmatched != 0 {
		t.Fatalf("%d steps (want 6), %d unmatched datagrams", len(run.Steps), run.Unmatched)
	}
	for i, st := range run.Steps {
		// Every step but the last has later steps' time for its echoes.
		answered := st.Echoes > 0 && st.RTTP50 > 0 || i == len(run.Steps)-1
		if st.Sent == 0 || !answered || st.Echoes > st.Sent || st.InWindow > st.Echoes || st.Duplicates != 0 {
			t.Errorf("pass %d, %v/s: %+v", st.Pass, st.Offered, st)
		}
	}
	select {
	case <-inst.Done():
		t.Fatal("QEMU exited during the run")
	default:
	}
}

// freeForwardPort returns a UDP port free on both 127.0.0.1 (where the tool
// sends from and slirp answers to) and 127.0.0.2 (where QEMU listens).
func freeForwardPort(t *testing.T) int {
	t.Helper()
	for i := 0; i < 20; i++ {
		a, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		port := a.LocalAddr().(*net.UDPAddr).Port
		b, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2), Port: port})
		a.Close()
		if err == nil {
			b.Close()
			return port
		}
	}
	t.Fatal("no UDP port free on both 127.0.0.1 and 127.0.0.2")
	return 0
}

// waitForLine reads the firmware's UART until a line contains want. It
// gives up when the firmware has said nothing for timeout: a boot that
// goes on printing is waited for, however slowly QEMU runs on a busy host
// (and at most until the test's deadline stops QEMU).
func waitForLine(t *testing.T, r interface{ Read([]byte) (int, error) }, want string, timeout time.Duration) string {
	t.Helper()
	var seen bytes.Buffer
	buf := make([]byte, 256)
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		n, err := r.Read(buf) // 0 bytes after the read timeout
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			deadline = time.Now().Add(timeout)
		}
		seen.Write(buf[:n])
		if i := strings.Index(seen.String(), want); i >= 0 {
			rest := seen.String()[i:]
			if j := strings.IndexByte(rest, '\n'); j >= 0 {
				return rest[:j]
			}
		}
	}
	t.Fatalf("no %q from the firmware, which then said nothing for %v; it said:\n%s", want, timeout, seen.String())
	return ""
}
