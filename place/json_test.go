// SPDX-License-Identifier: Apache-2.0

package place

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestPlanJSONRoundTrip(t *testing.T) {
	in := graphInput(false)
	in.BuildID = "abc123"
	p, err := Build(in, Options{Budget: 256, CurveBudgets: []uint32{0, 128, 256}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WritePlanJSON(&buf, p); err != nil {
		t.Fatal(err)
	}
	back, err := ReadPlanJSON(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, back) {
		t.Fatalf("round trip changed the plan:\n%+v\n%+v", p, back)
	}
	for _, field := range []string{`"version": 1`, `"build_id": "abc123"`, `"excluded"`, `"greedy"`, `"curve"`, `"itcm_stubs"`} {
		if !strings.Contains(buf.String(), field) {
			t.Errorf("JSON lacks %s", field)
		}
	}
}

func TestReadPlanJSONRejects(t *testing.T) {
	for name, text := range map[string]string{
		"version":  `{"version": 99, "layout": "ld", "block_align": 8}`,
		"layout":   `{"version": 1, "layout": "gold", "block_align": 8}`,
		"unknown":  `{"version": 1, "layout": "ld", "block_align": 8, "extra": 1}`,
		"trailing": `{"version": 1, "layout": "ld", "block_align": 8} {}`,
		"align":    `{"version": 1, "layout": "ld", "block_align": 6}`,
		"entry":    `{"version": 1, "layout": "ld", "block_align": 8, "entries": [{"symbol": "x"}]}`,
		"garbage":  `{"version": `,
		"empty":    ``,
	} {
		if _, err := ReadPlanJSON(strings.NewReader(text)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
