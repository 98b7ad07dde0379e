// SPDX-License-Identifier: Apache-2.0

package device_test

import (
	"context"
	"testing"
	"time"

	"github.com/tcmprof/tcmprof/sample"
	"github.com/tcmprof/tcmprof/sample/device"
	"github.com/tcmprof/tcmprof/sample/device/devicetest"
)

// BenchmarkDrain16K drains 16,384 records from the scripted device over a
// pty: the host side's cost and the protocol's bytes per sample. The
// device's PCs are spread over five functions at random, so its deltas
// are larger than a real profile's (see BenchmarkCaptureQEMU in cmd).
func BenchmarkDrain16K(b *testing.B) {
	for _, fields := range []sample.Fields{sample.FieldPC, sample.FieldPC | sample.FieldLR} {
		b.Run(fields.String(), func(b *testing.B) {
			d := newDevice(16384, devicetest.Faults{})
			d.RunTime = time.Millisecond
			s, _ := openSession(b, d, device.DefaultTimeouts())
			ctx := context.Background()
			var bytes uint64
			var n int
			for b.Loop() {
				b.StopTimer()
				if err := s.Start(ctx, device.Start{Fields: fields}); err != nil {
					b.Fatal(err)
				}
				h := waitHeld(b, s)
				before := s.Stats().Bytes
				b.StartTimer()
				c, err := s.Drain(ctx, h)
				if err == nil {
					err = s.Done(ctx)
				}
				if err != nil || len(c.Records) != 16384 {
					b.Fatalf("%v, %d records", err, len(c.Records))
				}
				bytes += c.Stats.Bytes - before
				n++
			}
			b.ReportMetric(float64(bytes)/float64(n)/16384, "wire-bytes/sample")
		})
	}
}

func waitHeld(tb testing.TB, s *device.Session) *sample.Header {
	for {
		h, err := s.Status(context.Background())
		if err != nil {
			tb.Fatal(err)
		}
		if h.State == sample.StateHolding {
			return h
		}
		time.Sleep(time.Millisecond)
	}
}
