// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// `make deps` waits while another apt-get holds apt's locks, and says who
// holds them, instead of failing at once with dpkg's lock error. The test
// runs the real apt-get on a private apt state (APT_CONFIG: an empty dpkg
// status, no sources), so it neither touches the machine's packages nor
// blocks another apt-get; it holds that state's locks as apt does (fcntl).
func TestAptInstallWaitsForTheLock(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("apt-get takes its locks only as root")
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		t.Skip("no apt-get")
	}
	dir := t.TempDir()
	for _, d := range []string{"dpkg", "lists/partial", "cache/archives/partial", "sources.list.d"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(dir, "apt.conf")
	write(t, filepath.Join(dir, "dpkg", "status"), "")
	write(t, conf, fmt.Sprintf(`Dir::State::status "%[1]s/dpkg/status";
Dir::State::Lists "%[1]s/lists";
Dir::Cache "%[1]s/cache";
Dir::Etc::sourcelist "/dev/null";
Dir::Etc::sourceparts "%[1]s/sources.list.d";
`, dir))
	run := func(wait string) (string, error) {
		c := exec.Command("./scripts/apt-install.sh")
		c.Env = append(os.Environ(), "APT_CONFIG="+conf, "APT_LOCK_WAIT="+wait)
		out, err := c.CombinedOutput()
		return string(out), err
	}
	release := lock(t, filepath.Join(dir, "lists", "lock"), filepath.Join(dir, "dpkg", "lock-frontend"))
	// Held for good: it gives up after APT_LOCK_WAIT, saying why.
	out, err := run("2")
	held := fmt.Sprintf("deps: waiting for the apt lock held by process %d (", os.Getpid())
	if err == nil || !strings.Contains(out, held) || !strings.Contains(out, "apt is still locked after 2s") {
		t.Errorf("lock never released: %v\n%s\nwant a failure that says %q and that it gave up", err, out, held)
	}
	// Released while it waits: it goes on and succeeds.
	go func() {
		time.Sleep(3 * time.Second)
		release()
	}()
	out, err = run("120")
	if err != nil || !strings.Contains(out, held) {
		t.Errorf("lock released after 3 s: %v\n%s\nwant success after %q", err, out, held)
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lock takes a write lock on each file as apt and dpkg do (fcntl F_SETLK)
// and returns what releases them.
func lock(t *testing.T, paths ...string) (release func()) {
	t.Helper()
	var files []*os.File
	for _, p := range paths {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o640)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &syscall.Flock_t{Type: syscall.F_WRLCK}); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	release = sync.OnceFunc(func() {
		for _, f := range files {
			f.Close()
		}
	})
	t.Cleanup(release)
	return release
}

// The README's set-up paragraph names every Debian package `make deps`
// installs (the Makefile's DEB_CHECKS), so that a reader who installs them
// by hand misses none.
func TestReadmeListsEveryDependency(t *testing.T) {
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)DEB_CHECKS\s*:=(.*?)\n\n`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("no DEB_CHECKS in the Makefile")
	}
	var pkgs []string
	for _, pair := range strings.Fields(strings.ReplaceAll(string(m[1]), "\\", " ")) {
		pkg := pair[strings.LastIndex(pair, ":")+1:]
		if !slices.Contains(pkgs, pkg) {
			pkgs = append(pkgs, pkg)
		}
	}
	if len(pkgs) < 10 {
		t.Fatalf("read only %v from DEB_CHECKS", pkgs)
	}
	for _, pkg := range pkgs {
		if !strings.Contains(string(readme), "`"+pkg+"`") {
			t.Errorf("README.md does not name the package %s that make deps installs", pkg)
		}
	}
}
