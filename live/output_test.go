// SPDX-License-Identifier: Apache-2.0

package live

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/tcmprof/tcmprof/internal/golden"
)

// TestBatchOutputs pins what top -b and top --json print for an interval
// (WriteText, WriteJSON), which a run of top can not pin: its figures
// follow the wall clock. Here the scene's records arrive in two intervals
// at fixed times; the blocks are the window of the last interval, by
// share and innermost function (top's defaults), then everything since
// the start by samples per byte, with the run's thread names and the top
// three functions.
func TestBatchOutputs(t *testing.T) {
	sc := newScene(t)
	a := sc.aggregator(t, Options{Interval: time.Second, Window: time.Second})
	half := len(sc.capture.Records) / 2
	feed(a, sc.capture.Records[:half])
	a.Tick(t0.Add(time.Second))
	feed(a, sc.capture.Records[half:])
	a.Tick(t0.Add(2 * time.Second))
	var text, js bytes.Buffer
	for _, b := range []struct {
		view View
		top  int
	}{{View{}, 0}, {View{Cumulative: true, Sort: ByDensity}, 3}} {
		if b.view.Cumulative {
			a.SetThreads(sc.capture.Threads)
		}
		tb := a.Table(b.view)
		if err := WriteText(&text, tb, b.top); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(&js, tb, b.top); err != nil {
			t.Fatal(err)
		}
	}
	golden.Check(t, filepath.Join("testdata", "golden", "top-b.txt"), text.Bytes())
	golden.Check(t, filepath.Join("testdata", "golden", "top.json"), js.Bytes())
}
