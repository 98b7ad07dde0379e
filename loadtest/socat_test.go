// SPDX-License-Identifier: Apache-2.0

package loadtest

import (
	"fmt"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/tcmprof/tcmprof/internal/armtest"
	"github.com/tcmprof/tcmprof/loadtest/echotest"
)

// startSocat runs a UDP echo nobody here wrote: socat, without a fork per
// datagram. UDP4-LISTEN answers the first peer's datagrams through the
// second address, a UDP socket that sends to itself, so every datagram
// stays one datagram (a PIPE would merge datagrams that queue up). It
// returns the address to measure.
func startSocat(t testing.TB) string {
	t.Helper()
	armtest.NeedTools(t, "socat")
	listen, loop := echotest.FreeUDPPort(t), echotest.FreeUDPPort(t)
	cmd := exec.Command("socat", fmt.Sprintf("UDP4-LISTEN:%d,bind=127.0.0.1", listen),
		fmt.Sprintf("UDP4-DATAGRAM:127.0.0.1:%d,bind=127.0.0.1:%d", loop, loop))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return fmt.Sprintf("127.0.0.1:%d", listen)
}

// socatOptions: three passes well below socat's limit (about 5000/s on the
// development VM, see bench/README.md).
func socatOptions() Options {
	o := shortOptions([]float64{500, 1000, 2000}, 3)
	o.ProbeTimeout = 3 * time.Second // socat may take a moment to bind
	return o
}

// TestSocatEcho measures socat's echo. Whatever came back must be what was
// sent, unaltered, once, in every step of every pass. How much comes back
// in time (socat's share of two busy cores) is BenchmarkSocatEcho's.
func TestSocatEcho(t *testing.T) {
	run := measure(t, startSocat(t), socatOptions())
	if run.Unmatched != 0 {
		t.Errorf("%d echoes that match nothing sent: socat altered, merged or cut datagrams", run.Unmatched)
	}
	if len(run.Steps) != 9 {
		t.Errorf("%d steps, want 3 rates × 3 passes", len(run.Steps))
	}
	for _, st := range run.Steps {
		if st.Duplicates != 0 || st.Echoes == 0 || st.Echoes > st.Sent || st.InWindow > st.Echoes {
			t.Errorf("pass %d, %v/s: %d duplicates, %d echoes (%d in the window) of %d sent", st.Pass, st.Offered, st.Duplicates, st.Echoes, st.InWindow, st.Sent)
		}
	}
}

// BenchmarkSocatEcho reports, per offered rate, socat's goodput as a share
// of the offered rate, its spread over the passes and the loss: on a quiet
// machine the goodput is within 2 % of the offered rate, the passes agree
// within 2 % and nothing is lost.
//
//	go test -run - -bench SocatEcho -benchtime 1x ./loadtest
func BenchmarkSocatEcho(b *testing.B) {
	target, o := startSocat(b), socatOptions()
	for i := 0; i < b.N; i++ {
		for _, p := range measure(b, target, o).Summary.Curve {
			rate := strconv.FormatFloat(p.Offered, 'f', -1, 64)
			b.ReportMetric(100*p.Goodput/p.Offered, "%goodput@"+rate)
			b.ReportMetric(100*p.GoodputSD/p.Goodput, "%sd@"+rate)
			b.ReportMetric(p.LossPct, "%loss@"+rate)
		}
	}
}
