// SPDX-License-Identifier: Apache-2.0

package loadtest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/tcmprof/tcmprof/internal/golden"
)

// TestRunOutputs pins what bench udp-echo writes of a run, on two runs
// recorded with it (testdata/stock.json and itcm.json: echotest's model
// echoes of 800 and 2,400 datagrams/s, two passes, on a busy host, so
// with late echoes, losses and host-limited steps): the table, the CSV and
// the SVG (golden files), and the JSON, which written back is the file
// read, byte for byte. The measuring is timed and can not be pinned;
// these are its outputs, and bench compare's golden (cmd) reads the same
// two files.
func TestRunOutputs(t *testing.T) {
	for _, name := range []string{"stock", "itcm"} {
		path := filepath.Join("testdata", name+".json")
		run, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var table, csv, svg, js bytes.Buffer
		if err := WriteTable(&table, run); err != nil {
			t.Fatal(err)
		}
		if err := WriteCSV(&csv, run); err != nil {
			t.Fatal(err)
		}
		if err := RenderSVG(&svg, "UDP echo "+run.Target+": goodput against offered rate", []*Run{run}, []string{run.Label}); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", "golden", name+".txt"), table.Bytes())
		golden.Check(t, filepath.Join("testdata", "golden", name+".csv"), csv.Bytes())
		golden.Check(t, filepath.Join("testdata", "golden", name+".svg"), svg.Bytes())
		if err := run.WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		if file, err := os.ReadFile(path); err != nil || !bytes.Equal(js.Bytes(), file) {
			t.Errorf("%s read and written back differs (%v):\n%s", path, err, js.Bytes())
		}
	}
}
