// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/tcmprof/tcmprof/profile/profiletest"
	"github.com/tcmprof/tcmprof/sample"
)

// TestDiffNormalisesPerBusySample compares the scenario with a run twice
// as long in which hash_buf's time moved to fast_scale: shares are per busy
// sample, and the -diff_base profile makes pprof show the same change.
func TestDiffNormalisesPerBusySample(t *testing.T) {
	sc := newScenario(t)
	fw := sc.fw
	// After: 2,000 records, 1,600 busy; hash_buf keeps 400 (50 % → 25 %),
	// fast_scale gets 580 (11.25 % → 36.25 %).
	after := fw.Capture(t, sample.FieldPC|sample.FieldThread,
		records(400, sc.hashPC, 0, 0, 1), records(400, sc.leafPC, 0, 0, 1), records(200, sc.checksumPC, 0, 0, 1),
		records(400, sc.idlePC, 0, 0, 2), records(580, sc.scalePC, 0, 0, 1), records(20, sc.venePC, 0, 0, 1))
	sb, err := Symbolize(sc.capture, fw.Image, sc.options())
	if err != nil {
		t.Fatal(err)
	}
	sa, err := Symbolize(after, fw.Image, sc.options())
	if err != nil {
		t.Fatal(err)
	}
	d := Compare(sb.Analyze(), sa.Analyze())
	want := map[string]float64{"hash_buf": 0.25 - 0.5, "fast_scale": 0.3625 - 0.1125, "leaf_add": 0, "net_checksum": 0}
	for _, c := range d.Functions {
		if w, ok := want[c.Name]; ok && math.Abs(c.Delta-w) > 1e-12 {
			t.Errorf("%s: delta %+.4f, want %+.4f", c.Name, c.Delta, w)
		}
	}
	if d.Functions[0].Name != "fast_scale" && d.Functions[0].Name != "hash_buf" {
		t.Errorf("largest change is %s, want hash_buf or fast_scale", d.Functions[0].Name)
	}
	for _, c := range d.Regions {
		if c.Name == "itcm" && math.Abs(c.Delta-0.25) > 1e-12 {
			t.Errorf("itcm delta %+.4f, want +0.25", c.Delta)
		}
	}

	// The same comparison from the written profiles, and through pprof.
	pb, _ := sb.Profile()
	pa, _ := sa.Profile()
	fromProfiles, err := AnalyzeProfile(pb)
	if err != nil {
		t.Fatal(err)
	}
	if fromProfiles.Busy != sb.Analyze().Busy || fromProfiles.Functions[0].Name != "hash_buf" || fromProfiles.Functions[0].Samples != nHash {
		t.Errorf("analysis of the profile %+v disagrees with the capture's", fromProfiles.Functions[0])
	}
	base, err := DiffBase(pb, nBusy, 1600)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	basePath, afterPath := filepath.Join(dir, "base.pb.gz"), filepath.Join(dir, "after.pb.gz")
	if err := WriteFile(basePath, base); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(afterPath, pa); err != nil {
		t.Fatal(err)
	}
	top := topFlat(t, profiletest.Pprof(t, "-top", "-sample_index=samples", "-diff_base="+basePath, afterPath))
	// Per 1,600 busy samples: hash_buf 800 → 400, fast_scale 180 → 580.
	if top["mix (inline)"] != -400 || top["fast_scale"] != 400 {
		t.Errorf("pprof -diff_base flat: mix %d, fast_scale %d; want -400 and +400", top["mix (inline)"], top["fast_scale"])
	}
}
