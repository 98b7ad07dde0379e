// SPDX-License-Identifier: Apache-2.0

package place

import (
	"fmt"
	"math/rand"
	"testing"
)

// largeInput is an image of the size the Teensy firmware has: a few
// thousand functions, a few hundred of them sampled, heavy-tailed samples.
func largeInput(rng *rand.Rand) *Input {
	in := &Input{ITCMSize: 128 << 10, ITCMUsed: 0x400}
	addr := uint32(flashBase)
	for i := 0; i < 3000; i++ {
		size := uint32(2 * (4 + rng.Intn(300)))
		samples := 0
		if i < 400 {
			samples = int(2000 / (1 + rng.ExpFloat64()*20))
		}
		in.Funcs = append(in.Funcs, Func{Key: KeyFor(fmt.Sprintf("s%d.c", i%97), fmt.Sprintf("f%d", i)),
			Symbol: fmt.Sprintf("f%d", i), Section: fmt.Sprintf(".text.f%d", i), Object: fmt.Sprintf("s%d.o", i%97),
			Addr: addr, Size: size, Align: 4, Region: "FLASH", Samples: samples})
		in.BusySamples += samples
		addr = alignUp(addr+size, 4)
	}
	for e := 0; e < 15000; e++ {
		in.Edges = append(in.Edges, Edge{Caller: in.Funcs[rng.Intn(3000)].Addr, Callee: in.Funcs[rng.Intn(3000)].Addr})
	}
	return in
}

func BenchmarkBuild(b *testing.B) {
	in := largeInput(rand.New(rand.NewSource(7)))
	for _, c := range []struct {
		name   string
		budget int64
		curve  []uint32
	}{{"32KiB-nocurve", 32 << 10, []uint32{}}, {"free-defaultcurve", -1, nil}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				p, err := Build(in, Options{Budget: c.budget, CurveBudgets: c.curve})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(p.Prediction.Samples)/float64(in.BusySamples), "share")
				b.ReportMetric(float64(p.UpperBound-p.Prediction.Samples), "gap")
			}
		})
	}
}
