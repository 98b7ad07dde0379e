// SPDX-License-Identifier: Apache-2.0

package loadtest

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/tcmprof/tcmprof/internal/golden"
)

// The comparison's speed-ups say what the runs can tell: a run that lost
// nothing at any rate tried did not reach its limit, so its lossless rate
// and its peak are lower bounds, and so is a speed-up over them; when
// neither run reached its limit there is no speed-up to give (it once
// printed 0.75× for two runs that were only offered different rates).
func TestComparisonBounds(t *testing.T) {
	limited := func(lossless, peak float64) Summary {
		return Summary{Lossless: lossless, Peak: peak, PeakSD: 10, Curve: []RatePoint{{Offered: 2 * lossless}}, AtHighest: peak}
	}
	unlimited := func(highest float64) Summary {
		return Summary{Lossless: highest, LosslessIsHighest: true, Peak: highest, Curve: []RatePoint{{Offered: highest}}, AtHighest: highest}
	}
	var b bytes.Buffer
	for _, c := range []struct {
		name          string
		before, after Summary
	}{
		{"both reached their limits", limited(2000, 2257), limited(14000, 15921)},
		{"neither reached its limit", unlimited(20000), unlimited(15000)},
		{"only the stock run reached its limit", limited(2000, 2257), unlimited(7000)},
		{"only the placed run reached its limit", unlimited(7000), limited(14000, 15921)},
	} {
		b.WriteString("== " + c.name + "\n")
		if err := WriteComparison(&b, Compare(&Run{Summary: c.before}, &Run{Summary: c.after}), "stock", "itcm"); err != nil {
			t.Fatal(err)
		}
	}
	golden.Check(t, filepath.Join("testdata", "golden", "compare.txt"), b.Bytes())
}
