// SPDX-License-Identifier: Apache-2.0

package image

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkZephyrScale measures, on the Zephyr-sized image bench/genfw
// generates (bench/symbolize.sh passes it in TCMPROF_GENFW_ELF and its
// drawn addresses in TCMPROF_GENFW_ADDRS), the time and the heap an Image
// holds after answering one address, and after answering all of them:
// memory follows what is asked, not the size of the DWARF.
func BenchmarkZephyrScale(b *testing.B) {
	path, list := os.Getenv("TCMPROF_GENFW_ELF"), os.Getenv("TCMPROF_GENFW_ADDRS")
	if path == "" || list == "" {
		b.Skip("set TCMPROF_GENFW_ELF and TCMPROF_GENFW_ADDRS (bench/symbolize.sh does)")
	}
	addrs := readAddrs(b, list)
	for _, bc := range []struct {
		name  string
		addrs []uint32
	}{{"first-address", addrs[:1]}, {"all-addresses", addrs}} {
		b.Run(bc.name, func(b *testing.B) {
			var live int64
			for range b.N {
				b.StopTimer()
				before := liveHeap()
				b.StartTimer()
				im, err := Open(path)
				if err != nil {
					b.Fatal(err)
				}
				im.Preload(bc.addrs)
				for _, a := range bc.addrs {
					im.Symbolize(a)
				}
				b.StopTimer()
				live = liveHeap() - before
				runtime.KeepAlive(im)
				b.StartTimer()
			}
			b.ReportMetric(float64(live)/(1<<20), "live-MB")
		})
	}
}

// liveHeap returns the bytes of heap still reachable.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

func readAddrs(b *testing.B, path string) []uint32 {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var addrs []uint32
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		a, err := strconv.ParseUint(strings.TrimPrefix(sc.Text(), "0x"), 16, 32)
		if err != nil {
			b.Fatal(err)
		}
		addrs = append(addrs, uint32(a))
	}
	if len(addrs) == 0 {
		b.Fatalf("%s: no addresses", path)
	}
	return addrs
}
