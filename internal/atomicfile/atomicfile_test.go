// SPDX-License-Identifier: Apache-2.0

package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.json")
	if err := Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new" {
		t.Fatalf("read %q, %v", got, err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	assertOnly(t, dir, "plan.json")
}

// A write that fails half-way keeps the old file and leaves no temporary.
func TestFailedWriteKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "before.tcmcap")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("device gone")
	err := Write(path, func(w io.Writer) error {
		io.WriteString(w, "half")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want it to wrap %v", err, boom)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("file now %q, want the old content", got)
	}
	assertOnly(t, dir, "before.tcmcap")
}

// A name as long as a file name may be (255 bytes) can be written: its
// temporary's name is cut, not the user's.
func TestWriteLongestName(t *testing.T) {
	for _, name := range []string{
		strings.Repeat("a", 251) + ".bin",
		strings.Repeat("é", 125) + ".tcm", // a cut must not split a character
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, name)
		if err := Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }); err != nil {
			t.Fatalf("%d-byte name: %v", len(name), err)
		}
		assertOnly(t, dir, name)
	}
}

func TestWriteIntoMissingDirSaysWhere(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope", "x.pb.gz")
	err := Write(path, func(io.Writer) error { return nil })
	if err == nil || err.Error() != "writing "+path+": no such file or directory" {
		t.Fatalf("err = %v", err)
	}
}

func assertOnly(t *testing.T, dir, name string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != name {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only %s", names, name)
	}
}

// A set whose second file fails leaves the first as it was.
func TestSetAllOrNone(t *testing.T) {
	dir := t.TempDir()
	first := filepath.Join(dir, "a.json")
	if err := os.WriteFile(first, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	var s Set
	if err := s.Add(first, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(dir, func(io.Writer) error { return nil }); err == nil || err.Error() != "writing "+dir+": is a directory" {
		t.Fatalf("adding a directory: %v", err)
	}
	if got, _ := os.ReadFile(first); string(got) != "old" {
		t.Errorf("first file now %q", got)
	}
	assertOnly(t, dir, "a.json")

	s = Set{}
	for _, name := range []string{"a.json", "b.ld"} {
		if err := s.Add(filepath.Join(dir, name), func(w io.Writer) error { _, err := io.WriteString(w, name); return err }); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := os.ReadFile(first); string(got) != "old" {
		t.Errorf("first file replaced before Commit: %q", got)
	}
	if err := s.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(first); string(got) != "a.json" {
		t.Errorf("first file after Commit: %q", got)
	}
}
