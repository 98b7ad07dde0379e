// SPDX-License-Identifier: Apache-2.0

package linker

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/place"
)

func samplePlan(t testing.TB) *place.Plan {
	in := &place.Input{ITCMSize: 1 << 10, ITCMUsed: 0x20, BusySamples: 500, BuildID: "abc123"}
	for i, name := range []string{"alpha", "beta.constprop.0", "gamma"} {
		in.Funcs = append(in.Funcs, place.Func{Key: place.KeyFor("/src/m.c", name), Symbol: name,
			Section: ".text." + name, Object: "obj/m.o", Archive: "lib/libm.a", Addr: 0x6000_0000 + uint32(i)*64,
			Size: 40, Align: 4, Region: "FLASH", Samples: 100 + 10*i})
	}
	in.Funcs = append(in.Funcs, place.Func{Key: place.KeyFor("/src/m.c", "tiny"), Symbol: "tiny", Section: ".text.tiny",
		Object: "obj/m.o", Addr: 0x6000_1000, Size: 4, Align: 2, Samples: 3})
	p, err := place.Build(in, place.Options{Budget: 96, CurveBudgets: []uint32{0, 48, 96}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// FuzzRenderReadPlan checks the renderers' side of the plan file: whatever
// place.ReadPlanJSON accepts, every output renders.
func FuzzRenderReadPlan(f *testing.F) {
	var buf bytes.Buffer
	if err := place.WritePlanJSON(&buf, samplePlan(f)); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(`{"version": 1, "layout": "zephyr", "block_align": 8, "entries": null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := place.ReadPlanJSON(bytes.NewReader(data))
		if err != nil {
			return
		}
		// Whatever reads back must render without error.
		var out bytes.Buffer
		if _, err := RenderLD(&out, p); err != nil {
			t.Fatal(err)
		}
		if _, err := RenderZephyr(&out, p); err != nil {
			t.Fatal(err)
		}
		if err := WriteList(&out, p); err != nil {
			t.Fatal(err)
		}
	})
}

func TestWriteList(t *testing.T) {
	p := samplePlan(t)
	var buf bytes.Buffer
	if err := WriteList(&buf, p); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != len(p.Entries) || len(p.Entries) != 2 {
		t.Fatalf("%d lines for %d entries:\n%s", len(lines), len(p.Entries), buf.String())
	}
	if !strings.Contains(lines[0], "\t.text.") || !strings.Contains(lines[0], "lib/libm.a:obj/m.o") {
		t.Errorf("line %q", lines[0])
	}
}
