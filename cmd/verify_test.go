// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/linker"
	"github.com/tcmprof/tcmprof/place"
)

// verify's error stays one short line however many functions a broken
// build misses; the full list is on stdout.
func TestViolationsErrorIsBounded(t *testing.T) {
	var vs []linker.Violation
	for i := range 83 {
		vs = append(vs, linker.Violation{Kind: linker.ViolationNotInITCM, Name: fmt.Sprintf("fn%d", i), Detail: "at 0x60001000"})
	}
	tests := []struct {
		n            int
		want, absent string
	}{
		{1, "1 violation(s): " + vs[0].String(), "more"},
		{3, vs[2].String(), "more"},
		{83, vs[2].String() + "; and 80 more, listed above", "fn3:"},
	}
	for _, tt := range tests {
		msg := violationsError("new.elf", "", vs[:tt.n]).Error()
		if !strings.Contains(msg, tt.want) || strings.Contains(msg, tt.absent) || strings.Contains(msg, "\n") {
			t.Errorf("%d violations: %q; want it to hold %q and not %q", tt.n, msg, tt.want, tt.absent)
		}
	}
}

// verify says so when the image is plainly not one rebuilt with the plan:
// the image the plan was made from, or one with no planned function in
// ITCM. An image that got part of the plan gets no such guess.
func TestNotRebuiltHint(t *testing.T) {
	plan := &place.Plan{BuildID: "aa11", Entries: make([]place.Entry, 4)}
	for _, tt := range []struct {
		name    string
		plan    *place.Plan
		imageID string
		inITCM  int
		want    string
	}{
		{"the planned image", plan, "aa11", 0, "it is the image the plan was made from"},
		{"the planned image, already placed", plan, "aa11", 4, "it is the image the plan was made from"},
		{"a rebuild without the output", plan, "bb22", 0, "none of the 4 planned functions is in ITCM: was the plan's output in the build"},
		{"a rebuild with part of it", plan, "bb22", 1, ""},
		{"a plan without build-id", &place.Plan{Entries: plan.Entries}, "", 2, ""},
		{"an empty plan", &place.Plan{BuildID: "aa11"}, "bb22", 0, ""},
	} {
		got := notRebuiltHint(tt.plan, tt.imageID, tt.inITCM)
		if tt.want == "" && got != "" || !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	if msg := violationsError("build/zephyr/zephyr.elf", "why", []linker.Violation{{Kind: linker.ViolationNotInITCM, Name: "f"}}).Error(); !strings.Contains(msg, "does not meet the plan: why; 1 violation(s): ") {
		t.Errorf("the hint is not where it belongs: %q", msg)
	}
}
