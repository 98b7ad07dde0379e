// SPDX-License-Identifier: Apache-2.0

// Package golden compares what a test got with a golden file under
// testdata, and rewrites the file when the test runs with -update, as
// google/pprof's internal/driver tests do:
//
//	go test ./cmd -run Golden -update
//
// then review the change with git diff. Only test code imports it; the
// -update flag exists in the test binaries of the packages that do.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata with what the tests get")

// Updating reports whether the test runs with -update, rewriting the
// golden files rather than comparing with them.
func Updating() bool { return *update }

// Check compares got with the golden file at path. With -update it writes
// got to path instead.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (if the change is right, rerun with -update and review the diff):\n%s", path, Diff(want, got))
	}
}

// Diff shows where got departs from want: two lines of context, then six
// lines from the first difference, enough to see what changed without an
// external diff; of a binary file (one with a NUL byte), the offset where
// they part.
func Diff(want, got []byte) string {
	if bytes.Equal(want, got) {
		return "(equal)"
	}
	if bytes.IndexByte(want, 0) >= 0 || bytes.IndexByte(got, 0) >= 0 {
		// A binary file (an ELF) has no lines to show.
		i := 0
		for i < len(want) && i < len(got) && want[i] == got[i] {
			i++
		}
		return fmt.Sprintf("binary files differ from byte %d (want %d bytes, got %d)\n", i, len(want), len(got))
	}
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	i := 0
	for i < len(w) && i < len(g) && w[i] == g[i] {
		i++
	}
	if i == len(w) && i == len(g) {
		return "(equal)"
	}
	var b strings.Builder
	for k := max(0, i-2); k < i; k++ {
		fmt.Fprintf(&b, "  %4d  %s\n", k+1, w[k])
	}
	// Six lines from the first difference, line by line: a changed line
	// shows as - and +, an equal one once.
	for k := i; k < i+6 && (k < len(w) || k < len(g)); k++ {
		switch {
		case k < len(w) && k < len(g) && w[k] == g[k]:
			fmt.Fprintf(&b, "  %4d  %s\n", k+1, w[k])
		default:
			if k < len(w) {
				fmt.Fprintf(&b, "- %4d  %s\n", k+1, w[k])
			}
			if k < len(g) {
				fmt.Fprintf(&b, "+ %4d  %s\n", k+1, g[k])
			}
		}
	}
	if nw, ng := bytes.Count(want, []byte("\n")), bytes.Count(got, []byte("\n")); nw != ng {
		fmt.Fprintf(&b, "(want %d lines, got %d)\n", nw, ng)
	}
	return b.String()
}
