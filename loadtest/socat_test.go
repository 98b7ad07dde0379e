// SPDX-License-Identifier: Apache-2.0

package loadtest

import (
	"fmt"
	"math"
	"net"
	"os/exec"
	"testing"
	"time"
)

// freeUDPPort returns a loopback UDP port that was free a moment ago.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// TestSocatEcho measures a UDP echo nobody here wrote: socat, without a
// fork per datagram. UDP4-LISTEN answers the first peer's datagrams through
// the second address, a UDP socket that sends to itself, so every datagram
// stays one datagram (a PIPE would merge datagrams that queue up). Well
// below socat's limit (about 5000/s on the development VM, see
// bench/README.md) every pass must get every echo back, unaltered, and the
// three passes must agree: sd within 2 % of the mean goodput, which is
// within 2 % of the offered rate.
func TestSocatEcho(t *testing.T) {
	if _, err := exec.LookPath("socat"); err != nil {
		t.Skip("socat not found (run `make deps`)")
	}
	listen, loop := freeUDPPort(t), freeUDPPort(t)
	cmd := exec.Command("socat", fmt.Sprintf("UDP4-LISTEN:%d,bind=127.0.0.1", listen),
		fmt.Sprintf("UDP4-DATAGRAM:127.0.0.1:%d,bind=127.0.0.1:%d", loop, loop))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	o := shortOptions([]float64{500, 1000, 2000}, 3)
	o.ProbeTimeout = 3 * time.Second // socat may take a moment to bind
	judge(t, fmt.Sprintf("127.0.0.1:%d", listen), o, func(run *Run) (problems []string) {
		if run.Unmatched != 0 {
			problems = append(problems, fmt.Sprintf("%d echoes that match nothing sent: socat altered, merged or cut datagrams", run.Unmatched))
		}
		for _, st := range run.Steps {
			if st.Duplicates != 0 || st.LossPct > 1 {
				problems = append(problems, fmt.Sprintf("pass %d, %v/s: %d duplicates, %.2f %% lost", st.Pass, st.Offered, st.Duplicates, st.LossPct))
			}
		}
		for _, p := range run.Summary.Curve {
			if p.Passes != 3 || p.GoodputSD > 0.02*p.Goodput || math.Abs(p.Goodput-p.Offered) > 0.02*p.Offered {
				problems = append(problems, fmt.Sprintf("%v/s: goodput %.1f ± %.1f/s over %d passes", p.Offered, p.Goodput, p.GoodputSD, p.Passes))
			}
		}
		return problems
	})
}
