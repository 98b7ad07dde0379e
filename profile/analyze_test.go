// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/internal/golden"
	"github.com/tcmprof/tcmprof/profile/profiletest"
	"github.com/tcmprof/tcmprof/sample"
)

// TestAnalyzeKnownDistribution checks every figure of the report against
// the scenario's distribution.
func TestAnalyzeKnownDistribution(t *testing.T) {
	sc := newScenario(t)
	a, err := Analyze(sc.capture, sc.fw.Image, sc.options())
	if err != nil {
		t.Fatal(err)
	}
	if a.Samples != nTotal || a.Busy.Count != nBusy || a.Idle.Count != nIdle {
		t.Fatalf("samples %d busy %d idle %d, want %d %d %d", a.Samples, a.Busy.Count, a.Idle.Count, nTotal, nBusy, nIdle)
	}
	wantRegions := map[string]int{"flash": nHash + nLeaf + nChecksum, "itcm": nScale, "veneer": nVeneer}
	if len(a.Regions) != len(wantRegions) {
		t.Errorf("regions %+v, want %v", a.Regions, wantRegions)
	}
	for _, g := range a.Regions {
		if g.Samples != wantRegions[g.Name] || g.Share.Total != nBusy {
			t.Errorf("region %s: %d of %d, want %d of %d", g.Name, g.Samples, g.Share.Total, wantRegions[g.Name], nBusy)
		}
	}
	fwObject := "fw.o" // profiletest links in its directory
	wantLibs := map[string]int{"libnet.a": nChecksum, fwObject: nHash + nLeaf + nScale}
	gotLibs := map[string]int{}
	for _, g := range a.Libraries {
		gotLibs[g.Name] = g.Samples
	}
	for lib, want := range wantLibs {
		if gotLibs[lib] != want {
			t.Errorf("library %s: %d samples, want %d (all: %v)", lib, gotLibs[lib], want, gotLibs)
		}
	}
	byName := map[string]FunctionStat{}
	for _, f := range a.Functions {
		byName[f.Name] = f
	}
	for name, want := range map[string]int{"hash_buf": nHash, "leaf_add": nLeaf, "net_checksum": nChecksum, "fast_scale": nScale} {
		f, ok := byName[name]
		if !ok {
			t.Errorf("no function %s in %+v", name, a.Functions)
			continue
		}
		if f.Addr != sc.fw.Entry(t, name) {
			t.Errorf("%s at 0x%x, objdump says 0x%x", name, f.Addr, sc.fw.Entry(t, name))
		}
		size := sc.fw.SymbolSize(t, name)
		if f.Samples != want || f.Size != size || math.Abs(f.Density-float64(want)/float64(size)) > 1e-12 {
			t.Errorf("%s: %d samples, %d B, %.3f/B; want %d, %d B", name, f.Samples, f.Size, f.Density, want, size)
		}
		if s := NewShare(want, nBusy); f.Share != s {
			t.Errorf("%s share %+v, want %+v", name, f.Share, s)
		}
	}
	if _, ok := byName["idle_loop"]; ok {
		t.Error("idle samples counted as a busy function")
	}
	if a.Functions[0].Name != "hash_buf" {
		t.Errorf("first function %s, want hash_buf (most samples)", a.Functions[0].Name)
	}
	// Busy flash PCs: the hash, leaf and checksum PCs, in three distinct
	// 32-byte lines unless two share one.
	lines := map[uint32]bool{sc.hashPC / 32: true, sc.leafPC / 32: true, sc.checksumPC / 32: true}
	if a.FlashFunctions != 3 || a.Footprint.Lines != len(lines) || a.Footprint.Bytes != 32*len(lines) {
		t.Errorf("footprint: %d functions, %+v; want 3 functions, %d lines", a.FlashFunctions, a.Footprint, len(lines))
	}

	var text bytes.Buffer
	if err := WriteReport(&text, a, ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	// The summary says the numbers checked above, over two lines of at most
	// 80 columns; the golden file pins the rest of the layout.
	summary := fmt.Sprintf("80.0 %% busy; 87.5 %% of it in flash,\n  in 3 functions, %d distinct 32-byte lines = %d B (I-cache 32 KB)\n", len(lines), 32*len(lines))
	if !strings.HasPrefix(text.String(), summary) {
		t.Errorf("report does not start with %q:\n%s", summary, text.String())
	}
	golden.Check(t, filepath.Join("testdata", "golden", "report.txt"), text.Bytes())
	var js bytes.Buffer
	if err := WriteJSON(&js, a); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Busy      struct{ Count, Total int }
		Functions []struct {
			Name    string
			Samples int
		}
		IcacheFootprint struct{ Lines int } `json:"icache_footprint"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Busy.Count != nBusy || doc.Busy.Total != nTotal || doc.Functions[0].Name != "hash_buf" || doc.Functions[0].Samples != nHash || doc.IcacheFootprint.Lines != len(lines) {
		t.Errorf("JSON disagrees with the analysis: %+v", doc)
	}
}

// TestIdleByThreadOnlyOutsideInterrupts: an interrupt taken while the idle
// thread is current is work, not idle time.
func TestIdleByThreadOnlyOutsideInterrupts(t *testing.T) {
	fw := profiletest.Build(t)
	c := fw.Capture(t, sample.FieldPC|sample.FieldExc|sample.FieldThread,
		records(30, fw.Entry(t, "leaf_add"), 0, 0, 2),      // idle thread, thread mode
		records(20, fw.Entry(t, "net_checksum"), 0, 16, 2), // IRQ 0 over the idle thread
		records(50, fw.Entry(t, "hash_buf"), 0, 0, 1))      // main
	a, err := Analyze(c, fw.Image, Options{Idle: DefaultIdleRules()})
	if err != nil {
		t.Fatal(err)
	}
	if a.Idle.Count != 30 || a.Busy.Count != 70 {
		t.Errorf("idle %d busy %d, want 30 and 70", a.Idle.Count, a.Busy.Count)
	}
}
