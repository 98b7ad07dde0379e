// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/internal/armtest"
	"github.com/tcmprof/tcmprof/profile/profiletest"
	"github.com/tcmprof/tcmprof/sample"
	"github.com/tcmprof/tcmprof/sim/simtest"
)

// simFixture is a trace over the profile test firmware's functions: each
// unit runs nonleaf (the unit marker), leaf_add twice, hash_buf and the
// ITCM function fast_scale, each as one block of 2-byte instructions
// covering the function.
type simFixture struct {
	fw    *profiletest.Firmware
	trace string
	sizes map[string]uint64 // function → bytes
}

const simUnits = 20

// newSimFixture is a trace of fw (the fresh build or the checked-in copy)
// that names buildID.
func newSimFixture(t *testing.T, fw *profiletest.Firmware, buildID []byte) simFixture {
	fx := simFixture{fw: fw, sizes: map[string]uint64{}}
	w := simtest.NewWriter(buildID)
	ids := map[string]uint32{}
	for _, name := range []string{"nonleaf", "leaf_add", "hash_buf", "fast_scale"} {
		size := fw.SymbolSize(t, name) &^ 1
		fx.sizes[name] = uint64(size)
		ids[name] = w.Block(fw.Entry(t, name), make2s(size/2)...)
	}
	for range simUnits + 2 { // one unit of warm-up, and the entry that ends the last unit
		w.Exec(ids["nonleaf"], ids["leaf_add"], ids["leaf_add"], ids["hash_buf"], ids["fast_scale"])
	}
	fx.trace = filepath.Join(t.TempDir(), "run.trace")
	if err := os.WriteFile(fx.trace, w.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return fx
}

func make2s(n uint32) []uint8 {
	s := make([]uint8, n)
	for i := range s {
		s[i] = 2
	}
	return s
}

// simJSON is what the tests read of tcmprof sim --json.
type simJSON struct {
	Model struct {
		CacheSize uint32 `json:"cache_size"`
		Policy    string
		Exclude   []string
		Unit      *struct {
			Name          string
			Warmup, Count uint64
		}
	}
	Instructions, Units, Misses, Cycles uint64
	StallCycles                         uint64  `json:"stall_cycles"`
	CyclesPerUnit                       float64 `json:"cycles_per_unit"`
	StallShare                          float64 `json:"stall_share"`
	DistinctLines                       int     `json:"distinct_lines"`
	Functions                           []struct {
		Name                 string
		Addr                 uint32
		Region               string
		Library              string
		Instructions, Misses uint64
		Cycles               uint64
	}
	Libraries []struct{ Name string }
	Sets      []struct {
		Set    uint32
		Lines  int
		Misses uint64
	}
}

func runSimJSON(t *testing.T, args ...string) simJSON {
	t.Helper()
	code, stdout, stderr := tcmprof(append([]string{"sim", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("sim: exit %d: %s", code, stderr)
	}
	var doc simJSON
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("sim --json: %v\n%s", err, stdout)
	}
	return doc
}

func TestSimCommand(t *testing.T) {
	fw := profiletest.Build(t)
	fx := newSimFixture(t, fw, fw.BuildID(t))
	// A direct-mapped cache of two lines, so that the functions evict each other.
	args := []string{"--elf", fw.ELF, "--map", fw.MapPath, "--unit", "nonleaf", "--warmup", "1", "--units", "20",
		"--icache-size", "64", "--icache-ways", "1", fx.trace}
	doc := runSimJSON(t, args...)
	if doc.Units != simUnits || doc.Model.Unit == nil || doc.Model.Unit.Name != "nonleaf" || doc.Model.CacheSize != 64 || doc.Model.Policy != "lru" {
		t.Fatalf("units %d, model %+v", doc.Units, doc.Model)
	}
	perUnit := map[string]uint64{"nonleaf": 1, "leaf_add": 2, "hash_buf": 1, "fast_scale": 1}
	var insns, fills uint64
	for _, f := range doc.Functions {
		want, ok := perUnit[f.Name]
		if !ok {
			t.Errorf("function %s in the result", f.Name)
			continue
		}
		if f.Instructions != want*fx.sizes[f.Name]/2*doc.Units {
			t.Errorf("%s: %d instructions, want %d", f.Name, f.Instructions, want*fx.sizes[f.Name]/2*doc.Units)
		}
		if f.Name == "fast_scale" && (f.Region != "itcm" || f.Misses != 0) {
			t.Errorf("fast_scale: region %s, %d fills; want itcm, none", f.Region, f.Misses)
		}
		if f.Library != "fw.o" {
			t.Errorf("%s: library %q", f.Name, f.Library)
		}
		insns += f.Instructions
		fills += f.Misses
	}
	if insns != doc.Instructions || fills != doc.Misses || doc.Misses == 0 {
		t.Errorf("functions sum to %d instructions, %d fills; totals %d, %d", insns, fills, doc.Instructions, doc.Misses)
	}
	if doc.Cycles != doc.Instructions+500*doc.Misses || doc.StallCycles != 500*doc.Misses {
		t.Errorf("cycles %d, stalls %d for %d instructions and %d fills", doc.Cycles, doc.StallCycles, doc.Instructions, doc.Misses)
	}
	var setFills uint64
	for _, s := range doc.Sets {
		setFills += s.Misses
		if s.Set >= 2 {
			t.Errorf("set %d of a 2-set cache", s.Set)
		}
	}
	if setFills != doc.Misses {
		t.Errorf("sets sum to %d fills of %d", setFills, doc.Misses)
	}

	// An excluded range costs nothing: hash_buf disappears.
	hash := fw.Entry(t, "hash_buf")
	excluded := runSimJSON(t, append([]string{"--exclude", fmt.Sprintf("%#x+%x", hash, fx.sizes["hash_buf"])}, args...)...)
	for _, f := range excluded.Functions {
		if f.Name == "hash_buf" {
			t.Errorf("excluded hash_buf still costs %d instructions", f.Instructions)
		}
	}
	if excluded.Instructions != doc.Instructions-fx.sizes["hash_buf"]/2*doc.Units || len(excluded.Model.Exclude) != 1 {
		t.Errorf("excluded: %d instructions, model %+v", excluded.Instructions, excluded.Model)
	}

	// The text report names the figures and the tables.
	code, stdout, stderr := tcmprof(append([]string{"sim"}, args...)...)
	if code != 0 {
		t.Fatalf("sim: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"window: 20 units (entries of nonleaf) after 1 of warm-up", "stall share:", "distinct cached lines",
		"by function", "by library", "by cache set", "hash_buf", "fw.o"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("text report lacks %q:\n%s", want, stdout)
		}
	}

	// The modelled capture reads like any capture of this ELF.
	capture := filepath.Join(t.TempDir(), "modelled.tcmcap")
	if code, _, stderr := tcmprof(append([]string{"sim", "--capture", capture, "--rate", "10000000", "--clock", "600000000"}, args...)...); code != 0 {
		t.Fatalf("sim --capture: exit %d: %s", code, stderr)
	}
	c, err := sample.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	if c.Model == nil || c.Model.Tool != "tcmprof sim" || c.Model.Units != doc.Units || c.Header.CPUHz != 600000000 || c.Header.IntervalTicks != 60 || len(c.Records) == 0 {
		t.Errorf("capture header %+v, model %+v, %d records", c.Header, c.Model, len(c.Records))
	}
	if code, stdout, stderr := tcmprof("report", "--elf", fw.ELF, capture); code != 0 || !strings.Contains(stdout, "hash_buf") {
		t.Errorf("report of the modelled capture: exit %d: %s\n%s", code, stderr, stdout)
	}
	if code, stdout, _ := tcmprof("info", capture); code != 0 || !strings.Contains(stdout, "modelled  by tcmprof sim") {
		t.Errorf("info of the modelled capture:\n%s", stdout)
	}
}

// Code between the ELF's __testbench_start and __testbench_end costs
// nothing: the profile firmware with those symbols added (objcopy) around
// hash_buf models as if hash_buf had not run.
func TestSimExcludesTheTestbench(t *testing.T) {
	fw := profiletest.Build(t)
	fx := newSimFixture(t, fw, nil)
	hash := fw.Entry(t, "hash_buf")
	bench := filepath.Join(t.TempDir(), "bench.elf")
	armtest.MustRun(t, ".", "arm-none-eabi-objcopy",
		"--add-symbol", fmt.Sprintf("__testbench_start=0x%x,global", hash),
		"--add-symbol", fmt.Sprintf("__testbench_end=0x%x,global", uint64(hash)+fx.sizes["hash_buf"]),
		fw.ELF, bench)
	args := []string{"--unit", "nonleaf", "--units", "20", fx.trace}
	plain := runSimJSON(t, append([]string{"--elf", fw.ELF}, args...)...)
	got := runSimJSON(t, append([]string{"--elf", bench}, args...)...)
	want := fmt.Sprintf("0x%08x-0x%08x", hash, uint64(hash)+fx.sizes["hash_buf"])
	if len(got.Model.Exclude) != 1 || got.Model.Exclude[0] != want {
		t.Errorf("excluded %v, want [%s]", got.Model.Exclude, want)
	}
	if got.Instructions != plain.Instructions-fx.sizes["hash_buf"]/2*20 {
		t.Errorf("%d instructions with the testbench excluded, %d without", got.Instructions, plain.Instructions)
	}
	for _, f := range got.Functions {
		if f.Name == "hash_buf" {
			t.Errorf("testbench code costs %d instructions", f.Instructions)
		}
	}
	// One symbol without the other is a broken image.
	half := filepath.Join(t.TempDir(), "half.elf")
	armtest.MustRun(t, ".", "arm-none-eabi-objcopy", "--add-symbol", "__testbench_start=0x60000000,global", fw.ELF, half)
	if code, _, stderr := tcmprof(append([]string{"sim", "--elf", half}, args...)...); code == 0 || !strings.Contains(stderr, "only one of __testbench_start and __testbench_end") {
		t.Errorf("half a testbench: exit %d: %s", code, stderr)
	}
}

func TestSimCommandErrors(t *testing.T) {
	fw := profiletest.Build(t)
	fx := newSimFixture(t, fw, []byte{1, 2, 3, 4})
	good := newSimFixture(t, fw, fw.BuildID(t))
	notTrace := filepath.Join(t.TempDir(), "x")
	os.WriteFile(notTrace, []byte("hello, this is not a trace"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no elf", []string{"sim", good.trace}, "no firmware ELF"},
		{"unknown unit", []string{"sim", "--elf", fw.ELF, good.trace}, "--unit zsock_sendto: no such function"},
		{"bad geometry", []string{"sim", "--elf", fw.ELF, "--unit", "nonleaf", "--icache-size", "3000", good.trace}, "cache geometry 3000 B"},
		{"not a trace", []string{"sim", "--elf", fw.ELF, "--unit", "nonleaf", notTrace}, "not a tcmprof trace"},
		{"missing trace", []string{"sim", "--elf", fw.ELF, "--unit", "nonleaf", notTrace + ".none"}, "no such file"},
		{"other build", []string{"sim", "--elf", fw.ELF, "--unit", "nonleaf", fx.trace}, "trace build-id 01020304 differs from ELF build-id"},
		{"too many units", []string{"sim", "--elf", fw.ELF, "--unit", "nonleaf", "--units", "50", good.trace}, "21 of 50 units after 0 of warm-up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := tcmprof(tc.args...)
			if code == 0 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want one line with %q", code, stderr, tc.want)
			}
		})
	}
	// --force models a trace of another build, with a warning.
	code, _, stderr := tcmprof("sim", "--elf", fw.ELF, "--unit", "nonleaf", "--force", fx.trace)
	if code != 0 || !strings.Contains(stderr, "differs from ELF build-id") {
		t.Errorf("--force: exit %d: %s", code, stderr)
	}
	// The trace on stdin.
	data, _ := os.ReadFile(good.trace)
	code, stdout, stderr := tcmprofStdin(string(data), "sim", "--elf", fw.ELF, "--unit", "nonleaf", "-")
	if code != 0 || !strings.Contains(stdout, "window: 21 units") {
		t.Errorf("from stdin: exit %d: %s\n%s", code, stderr, stdout)
	}
}
