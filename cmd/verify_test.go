// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/linker"
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
		msg := violationsError("new.elf", vs[:tt.n]).Error()
		if !strings.Contains(msg, tt.want) || strings.Contains(msg, tt.absent) || strings.Contains(msg, "\n") {
			t.Errorf("%d violations: %q; want it to hold %q and not %q", tt.n, msg, tt.want, tt.absent)
		}
	}
}
