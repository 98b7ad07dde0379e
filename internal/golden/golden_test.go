// SPDX-License-Identifier: Apache-2.0

package golden

import (
	"strings"
	"testing"
)

func TestDiffShowsTheFirstDifference(t *testing.T) {
	want := []byte("a\nb\nc\nd\n")
	if got := Diff(want, want); got != "(equal)" {
		t.Errorf("Diff of equal texts: %q", got)
	}
	got := Diff(want, []byte("a\nb\nX\nd\n"))
	for _, line := range []string{"     1  a", "     2  b", "-    3  c", "+    3  X"} {
		if !strings.Contains(got, line+"\n") {
			t.Errorf("Diff lacks %q:\n%s", line, got)
		}
	}
	if got := Diff(want, []byte("a\nb\nc\nd\ne\n")); !strings.Contains(got, "+    5  e") || !strings.Contains(got, "want 4 lines, got 5") {
		t.Errorf("Diff of a longer text:\n%s", got)
	}
}
