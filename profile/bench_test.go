// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/elf/thumb"
	"github.com/tcmprof/tcmprof/firmware-sampler/qemu"
	"github.com/tcmprof/tcmprof/internal/qemutest"
	"github.com/tcmprof/tcmprof/profile/profiletest"
	"github.com/tcmprof/tcmprof/sample"
)

// millionCapture is a 1,000,000-record PC+LR+EXC+THREAD capture of the QEMU
// demo image: PCs over every halfword of every function, Zipf-distributed
// over functions (a few hot, a long tail, as in a real profile); LRs are
// real return addresses (after a BL somewhere in the image) or EXC_RETURN.
func millionCapture(b *testing.B) (*sample.Capture, *image.Image, string) {
	b.Helper()
	dir := os.Getenv("TCMPROF_BENCH_DIR") // kept for bench/profile.sh
	if dir == "" {
		dir = b.TempDir()
	}
	elfPath := qemutest.BuildInto(b, qemu.BuildOptions{OutDir: filepath.Join(dir, "build")}).ELF
	img, err := image.Open(elfPath)
	if err != nil {
		b.Fatal(err)
	}
	id, err := image.BuildID(img.File())
	if err != nil {
		b.Fatal(err)
	}
	var funcs []*image.Function
	var returns []uint32
	for _, f := range img.Functions() {
		if f.Size < 2 {
			continue
		}
		funcs = append(funcs, f)
		for a := f.Addr; a+4 <= f.Addr+f.Size; a += 2 {
			if _, _, ok := thumb.BLTarget(img.Bytes, a); ok {
				returns = append(returns, (a+4)|1)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rand.New(rand.NewPCG(3, 4)), 1.2, 1, uint64(len(funcs)-1))
	c := &sample.Capture{Header: sample.Header{
		ProtoMajor: 1, Fields: sample.FieldPC | sample.FieldLR | sample.FieldExc | sample.FieldThread,
		CPUHz: 600_000_000, TimerHz: 24_000_000, IntervalTicks: 2400, BuildID: id,
	}, Threads: map[uint32]string{1: "main", 2: "net_rx", 3: "idle"}}
	c.Records = make([]sample.Record, 1_000_000)
	for i := range c.Records {
		f := funcs[zipf.Uint64()]
		r := sample.Record{Index: uint32(i), PC: f.Addr + 2*uint32(rng.IntN(int(f.Size/2))), Thread: 1 + uint32(rng.IntN(3))}
		if rng.IntN(10) == 0 {
			r.Exc, r.LR = 16+uint16(rng.IntN(4)), 0xFFFFFFF9
		} else {
			r.LR = returns[rng.IntN(len(returns))]
		}
		c.Records[i] = r
	}
	if err := c.Validate(); err != nil {
		b.Fatal(err)
	}
	if os.Getenv("TCMPROF_BENCH_DIR") != "" {
		if err := sample.WriteFile(filepath.Join(dir, "million.tcmcap"), c); err != nil {
			b.Fatal(err)
		}
	}
	return c, img, elfPath
}

// BenchmarkProfileMillion is capture → symbolized → gzipped pprof for a
// million records, with "go tool pprof -top" reading the result timed in
// the same run (pprof-top-s) for comparison.
func BenchmarkProfileMillion(b *testing.B) {
	c, img, _ := millionCapture(b)
	opts := Options{Idle: DefaultIdleRules()}
	var out bytes.Buffer
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s, err := Symbolize(c, img, opts)
		if err != nil {
			b.Fatal(err)
		}
		p, err := s.Profile()
		if err != nil {
			b.Fatal(err)
		}
		out.Reset()
		if err := p.Write(&out); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	path := filepath.Join(b.TempDir(), "million.pb.gz")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	profiletest.Pprof(b, "-top", path)
	b.ReportMetric(time.Since(start).Seconds(), "pprof-top-s")
	b.ReportMetric(float64(out.Len()), "profile-bytes")
}
