// SPDX-License-Identifier: Apache-2.0

package loadtest

import (
	"net"
	"strconv"
	"testing"
	"time"
)

// BenchmarkPacing offers each rate for one step to a socket that never
// reads (the kernel drops what overflows it; no echo, no ICMP) and reports
// the achieved send rate as a share of the offered one. The target:
// within 1 % up to 50,000/s.
//
//	go test -run - -bench Pacing -benchtime 3x ./loadtest
func BenchmarkPacing(b *testing.B) {
	sink, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer sink.Close()
	for _, rate := range []float64{1000, 10000, 30000, 50000} {
		b.Run(strconv.FormatFloat(rate, 'f', -1, 64), func(b *testing.B) {
			conn, err := net.DialUDP("udp", nil, sink.LocalAddr().(*net.UDPAddr))
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			o := DefaultOptions()
			o.StepTime = time.Second
			tr := newTester(conn, o)
			worst := 1.0
			var total float64
			for i := 0; i < b.N; i++ {
				st := tr.step(1, i, rate)
				share := float64(st.sent) / (rate * o.StepTime.Seconds())
				total += share
				worst = min(worst, share)
			}
			b.ReportMetric(100*total/float64(b.N), "%achieved")
			b.ReportMetric(100*worst, "%worst")
		})
	}
}
