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

// An ELF has no lines: Diff says where the bytes part and how long each
// is, not a screenful of binary.
func TestDiffOfBinaryFiles(t *testing.T) {
	want := []byte("\x7fELF\x01\x01\x00abc")
	if got := Diff(want, want); got != "(equal)" {
		t.Errorf("Diff of equal binaries: %q", got)
	}
	got := Diff(want, []byte("\x7fELF\x01\x01\x00aXcd"))
	if wantMsg := "binary files differ from byte 8 (want 10 bytes, got 11)\n"; got != wantMsg {
		t.Errorf("Diff of binaries = %q, want %q", got, wantMsg)
	}
}
