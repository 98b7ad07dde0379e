// SPDX-License-Identifier: Apache-2.0

package armtest

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A build reused from the cache after a fresh checkout (sources newer than
// the build, contents the same) comes back newer than its sources, so that
// make relinks a copy of it without compiling again.
func TestReusedBuildIsNewerThanItsSources(t *testing.T) {
	NeedTools(t, "arm-none-eabi-gcc")
	t.Setenv("TMPDIR", t.TempDir())
	src := filepath.Join(t.TempDir(), "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	source := filepath.Join(src, "a.c")
	if err := os.WriteFile(source, []byte("int a;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	builds := 0
	build := func() *Build {
		return &Build{Prefix: "reuse", Src: src, InPlace: true, Make: func(src, out string) error {
			builds++
			return os.WriteFile(filepath.Join(out, "a.o"), []byte("object"), 0o644)
		}}
	}
	dir := build().Dir(t)
	object := filepath.Join(dir, "a.o")
	built := time.Now().Add(-time.Hour)
	if err := os.Chtimes(object, built, built); err != nil {
		t.Fatal(err)
	}
	checkout := time.Now().Add(-time.Minute)
	if err := os.Chtimes(source, checkout, checkout); err != nil {
		t.Fatal(err)
	}

	if again := build().Dir(t); again != dir || builds != 1 {
		t.Fatalf("second Dir: %s after %d builds, want %s reused", again, builds, dir)
	}
	st, err := os.Stat(object)
	if err != nil {
		t.Fatal(err)
	}
	if st.ModTime().Before(checkout) {
		t.Errorf("the reused object's time %v is before its source's %v: make would compile it again", st.ModTime(), checkout)
	}
}
