// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"bytes"
	"testing"

	pprof "github.com/google/pprof/profile"
)

// FuzzAnalyzeProfile feeds diff's profile reader arbitrary profiles: any
// profile pprof accepts must give an analysis or an error, never a panic.
func FuzzAnalyzeProfile(f *testing.F) {
	var seed bytes.Buffer
	if err := syntheticProfile().Write(&seed); err != nil {
		f.Fatal(err)
	}
	f.Add(seed.Bytes())
	labelled := syntheticProfile()
	labelled.Sample[0].Label = map[string][]string{LabelState: {"idle"}, LabelRegion: {"itcm"}}
	labelled.Sample = append(labelled.Sample, &pprof.Sample{Value: []int64{3}, Label: map[string][]string{LabelLibrary: {"libnet.a"}}})
	seed.Reset()
	if err := labelled.Write(&seed); err != nil {
		f.Fatal(err)
	}
	f.Add(seed.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := pprof.ParseData(data)
		if err != nil {
			return
		}
		a, err := AnalyzeProfile(p)
		if err != nil {
			return
		}
		if a.Busy.Count+a.Idle.Count != a.Samples {
			t.Fatalf("busy %d + idle %d != %d samples", a.Busy.Count, a.Idle.Count, a.Samples)
		}
	})
}
