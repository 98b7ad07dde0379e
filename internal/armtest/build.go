// SPDX-License-Identifier: Apache-2.0

// Package armtest builds the ARM test firmware of every package's tests
// and asks the ARM binutils about it: a cached build of a testdata
// directory (Build; Copy for a test that writes in it), the programs the
// elf packages' tests read (Extras, SymbolizeDir) and the oracles
// (Objdump, Output). A test whose toolchain is missing is skipped, never
// failed, with the Debian package that provides it (NeedTools, which Build
// applies to the tools it runs); a test that boots QEMU is also skipped
// under -short (NeedQEMU).
package armtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Build is a directory of test artefacts built from the sources in a
// testdata directory, once per test binary. It is kept in
// $TMPDIR/<Prefix>-<hash>, the hash covering the sources (names and
// contents), their absolute path (DWARF records it), the recipe files and
// the cross compiler's version, so that a second `go test` reuses it and
// any change rebuilds it. It is built aside and renamed into place, so a
// concurrent or interrupted run never sees half of it; or, InPlace, in its
// directory under a lock that every test binary takes first.
type Build struct {
	Prefix string   // cache directory name before the hash
	Src    string   // testdata directory the artefacts are built from
	Recipe []string // other files whose change must rebuild (the Go recipe)
	// Make makes the artefacts in out (the working directory of any tool
	// it runs) from the absolute source directory src.
	Make func(src, out string) error
	// Tools are the tools Make runs besides arm-none-eabi-gcc (which the
	// cache key asks for its version); Dir skips the test when one is
	// missing (NeedTools).
	Tools []string
	// InPlace builds in the cache directory itself, for artefacts that
	// name the directory they were built in (a map file's absolute object
	// paths), which renaming would leave dangling.
	InPlace bool

	once sync.Once
	dir  string
	err  error
}

// Dir builds the artefacts on first use and returns their directory. It
// skips the test when a tool the build runs is missing.
func (b *Build) Dir(t testing.TB) string {
	t.Helper()
	NeedTools(t, append([]string{"arm-none-eabi-gcc"}, b.Tools...)...)
	b.once.Do(func() { b.dir, b.err = b.cached() })
	if b.err != nil {
		t.Fatalf("building %s: %v", b.Src, b.err)
	}
	return b.dir
}

func (b *Build) cached() (string, error) {
	src, err := filepath.Abs(b.Src)
	if err != nil {
		return "", err
	}
	key, err := b.key(src)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(os.TempDir(), b.Prefix+"-"+key)
	if b.InPlace {
		unlock, err := lock(dir + ".lock")
		if err != nil {
			return "", err
		}
		defer unlock()
	}
	if _, err := os.Stat(filepath.Join(dir, "done")); err == nil {
		return dir, refresh(dir)
	}
	b.removeStale(dir)
	if b.InPlace {
		os.RemoveAll(dir) // a half-built copy left by an interrupted run
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		if err := b.Make(src, dir); err != nil {
			return "", err
		}
		return dir, os.WriteFile(filepath.Join(dir, "done"), nil, 0o644)
	}
	tmp, err := os.MkdirTemp(os.TempDir(), b.Prefix+"-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := b.Make(src, tmp); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, "done"), nil, 0o644); err != nil {
		return "", err
	}
	os.RemoveAll(dir) // a half-built copy left by an interrupted run
	if err := os.Rename(tmp, dir); err != nil {
		// Another test binary won the race; use its copy.
		if _, serr := os.Stat(filepath.Join(dir, "done")); serr != nil {
			return "", err
		}
	}
	return dir, nil
}

func (b *Build) key(src string) (string, error) {
	version, err := exec.Command("arm-none-eabi-gcc", "--version").Output()
	if err != nil {
		return "", fmt.Errorf("arm-none-eabi-gcc --version (run `make deps`): %v", err)
	}
	h := sha256.New()
	h.Write(version)
	fmt.Fprintf(h, "%s\n", src)
	for _, r := range b.Recipe {
		data, err := os.ReadFile(r)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "recipe %s %d\n", r, len(data))
		h.Write(data)
	}
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		fmt.Fprintf(h, "%s %d\n", p[len(src):], len(data))
		h.Write(data)
		return err
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// refresh gives every file of a reused build the time of now. The key
// matched the sources by content, so what was built from them is up to
// date; but a fresh checkout gives the sources newer times than the
// build, and make, which compares times, would then compile every object
// again in each copy a test relinks (armtest.Copy keeps the times).
func refresh(dir string) error {
	now := time.Now()
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, now, now)
	})
}

// lock takes an exclusive lock on path (created if need be), waiting for
// another test binary that holds it; unlock releases it.
func lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %v", path, err)
	}
	return func() { f.Close() }, nil
}

// removeStale deletes artefacts of older sources, sparing any an hour-old
// or younger test run may still be reading.
func (b *Build) removeStale(keep string) {
	old, _ := filepath.Glob(filepath.Join(os.TempDir(), b.Prefix+"-*"))
	for _, d := range old {
		if st, err := os.Stat(d); err == nil && d != keep && time.Since(st.ModTime()) > time.Hour {
			os.RemoveAll(d)
		}
	}
}

// Copy copies the directory from, a Build's for one, to the new or empty
// directory to, with the files' times (cp -a: make rebuilds there only
// what a test changes). A Build's directory is shared by every test and
// run: a test that writes in it works on a copy.
func Copy(t testing.TB, from, to string) {
	t.Helper()
	MustRun(t, ".", "cp", "-a", from+"/.", to)
}

// Run runs a build tool in dir; its output goes into the error if it
// fails.
func Run(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// MustRun runs a build tool in dir, failing the test (with the tool's
// output) if it fails.
func MustRun(t testing.TB, dir, name string, args ...string) {
	t.Helper()
	if err := Run(dir, name, args...); err != nil {
		t.Fatal(err)
	}
}

// Output runs a binutils oracle and returns its standard output.
func Output(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, ee.Stderr)
		}
		t.Fatalf("%s: %v", name, err)
	}
	return string(out)
}

// dir is this package's source directory: its testdata holds the sources
// of the firmware the tests of other packages build.
var dir = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}()
