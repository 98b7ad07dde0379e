// SPDX-License-Identifier: Apache-2.0

package elf

import (
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// extras is the set of artefacts the tests of this file group build from
// testdata/extras: a two-archive, newlib-linked program with code in flash
// and ITCM (extras.elf, extras.map), and a Thumb-2 assembly file exercising
// every BL/BLX immediate range (blx.elf).
type extras struct {
	Dir     string
	ELF     string // extras.elf: flash + ITCM, veneers, --build-id (sha1)
	Map     string // extras.map: GNU ld -Map of extras.elf
	NoID    string // noid.elf: extras.elf linked with --build-id=none
	BLX     string // blx.elf: BL/BLX over ±16 MB, ARM-state BLX targets
	Pure    string // pure.elf: extras.elf built with -mpure-code (movw/movt veneers)
	Archive map[string]string
}

// cflags are the flags the brief fixes for every test ELF.
var cflags = []string{"-mcpu=cortex-m7", "-mthumb", "-O2", "-g", "-ffunction-sections", "-fdata-sections"}

var extrasBuild = &testBuild{
	prefix: "tcmprof-elf-extras",
	src:    "testdata/extras",
	recipe: []string{"extras_test.go"},
	build:  buildExtrasIn,
}

// buildExtras builds the artefacts once per test binary (see testBuild).
func buildExtras(t testing.TB) *extras {
	t.Helper()
	dir := extrasBuild.Dir(t)
	return &extras{
		Dir: dir, ELF: filepath.Join(dir, "extras.elf"), Map: filepath.Join(dir, "extras.map"),
		NoID: filepath.Join(dir, "noid.elf"), BLX: filepath.Join(dir, "blx.elf"),
		Pure:    filepath.Join(dir, "pure.elf"),
		Archive: map[string]string{"libalpha.a": filepath.Join(dir, "libalpha.a"), "libbeta.a": filepath.Join(dir, "libbeta.a")},
	}
}

func buildExtrasIn(src, dir string) error {
	run := func(name string, args ...string) error { return runIn(dir, name, args...) }
	gcc := func(args ...string) error {
		return run("arm-none-eabi-gcc", append(append([]string(nil), cflags...), args...)...)
	}
	sources := []string{"alpha/alpha_math", "alpha/alpha_table", "beta/beta", "main"}
	for _, c := range sources {
		if err := gcc("-c", filepath.Join(src, c+".c"), "-o", filepath.Base(c)+".o"); err != nil {
			return err
		}
	}
	if err := run("arm-none-eabi-ar", "rcs", "libalpha.a", "alpha_math.o", "alpha_table.o"); err != nil {
		return err
	}
	if err := run("arm-none-eabi-ar", "rcs", "libbeta.a", "beta.o"); err != nil {
		return err
	}
	link := func(out string, extra ...string) error {
		args := []string{"--specs=nano.specs", "--specs=nosys.specs", "-nostartfiles",
			"-T", filepath.Join(src, "extras.ld"), "-Wl,--gc-sections"}
		args = append(append(args, extra...), "-o", out, "main.o", "libalpha.a", "libbeta.a")
		return gcc(args...)
	}
	if err := link("extras.elf", "-Wl,--build-id=sha1", "-Wl,-Map=extras.map"); err != nil {
		return err
	}
	if err := link("noid.elf", "-Wl,--build-id=none"); err != nil {
		return err
	}
	// -mpure-code makes ld emit the movw/movt/bx veneer instead of the
	// ldr.w pc literal one.
	var pureObjs []string
	for _, c := range sources {
		o := "pure_" + filepath.Base(c) + ".o"
		if err := gcc("-mpure-code", "-c", filepath.Join(src, c+".c"), "-o", o); err != nil {
			return err
		}
		pureObjs = append(pureObjs, o)
	}
	pureArgs := []string{"-mpure-code", "--specs=nano.specs", "--specs=nosys.specs", "-nostartfiles",
		"-T", filepath.Join(src, "extras.ld"), "-Wl,--gc-sections", "-o", "pure.elf"}
	if err := gcc(append(pureArgs, pureObjs...)...); err != nil {
		return err
	}
	// blx.S needs ARM state for its BLX targets, so it is assembled for an
	// A-profile core; the BL/BLX encodings are the same as on M-profile.
	if err := run("arm-none-eabi-gcc", "-march=armv7-a", "-c", filepath.Join(src, "blx.S"), "-o", "blx.o"); err != nil {
		return err
	}
	return run("arm-none-eabi-ld", "-T", filepath.Join(src, "blx.ld"), "-o", "blx.elf", "blx.o")
}

// runTool runs a binutils oracle and returns its standard output.
func runTool(t testing.TB, name string, args ...string) string {
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

// sortedKeys is for stable failure messages.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
