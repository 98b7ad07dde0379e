// SPDX-License-Identifier: Apache-2.0

package armtest

import (
	"debug/elf"
	"path/filepath"
	"testing"
)

// Extras are the artefacts built from testdata/extras: a two-archive,
// newlib-linked program with code in flash and ITCM (ELF, Map), and a
// Thumb-2 assembly file exercising every BL/BLX immediate range (BLX).
type Extras struct {
	Dir     string
	ELF     string // extras.elf: flash + ITCM, veneers, --build-id (sha1)
	Map     string // extras.map: GNU ld -Map of extras.elf
	NoID    string // noid.elf: extras.elf linked with --build-id=none
	BLX     string // blx.elf: BL/BLX over ±16 MB, ARM-state BLX targets
	Pure    string // pure.elf: extras.elf built with -mpure-code (movw/movt veneers)
	Archive map[string]string
}

// CFlags are the flags the brief fixes for every test ELF.
var CFlags = []string{"-mcpu=cortex-m7", "-mthumb", "-O2", "-g", "-ffunction-sections", "-fdata-sections"}

// ExtrasSrc is the directory Extras are built from; it also holds a
// devicetree and an excerpt of a Zephyr map file.
var ExtrasSrc = filepath.Join(dir, "testdata/extras")

var extrasBuild = &Build{
	Prefix: "tcmprof-elf-extras",
	Src:    ExtrasSrc,
	Recipe: []string{filepath.Join(dir, "firmware.go")},
	Make:   makeExtras,
	Tools:  []string{"arm-none-eabi-ar", "arm-none-eabi-ld"},
}

// BuildExtras builds the artefacts once per test binary (see Build).
func BuildExtras(t testing.TB) *Extras {
	t.Helper()
	dir := extrasBuild.Dir(t)
	return &Extras{
		Dir: dir, ELF: filepath.Join(dir, "extras.elf"), Map: filepath.Join(dir, "extras.map"),
		NoID: filepath.Join(dir, "noid.elf"), BLX: filepath.Join(dir, "blx.elf"),
		Pure:    filepath.Join(dir, "pure.elf"),
		Archive: map[string]string{"libalpha.a": filepath.Join(dir, "libalpha.a"), "libbeta.a": filepath.Join(dir, "libbeta.a")},
	}
}

func makeExtras(src, dir string) error {
	run := func(name string, args ...string) error { return Run(dir, name, args...) }
	gcc := func(args ...string) error {
		return run("arm-none-eabi-gcc", append(append([]string(nil), CFlags...), args...)...)
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

// SymbolizeSrc is the directory of the symbolizer's test firmware: every
// optimisation level and DWARF version its Makefile builds.
var SymbolizeSrc = filepath.Join(dir, "testdata/symbolize")

// SymbolizeITCMHigh is ITCM_HIGH in testdata/symbolize/Makefile.
const SymbolizeITCMHigh = 0x10000000

// SymbolizeVariants are the ELFs testdata/symbolize/Makefile builds by
// default: each optimisation level and DWARF version with ITCM code 32
// bytes above the origin, and with a C function (.origin) or a C++ method
// (.cxxorigin) at the origin itself, where the removed functions' DWARF
// also points.
var SymbolizeVariants = func() []string {
	var vs []string
	for _, layout := range []string{"", ".origin", ".cxxorigin"} {
		for _, v := range []string{"O0-dwarf4", "O0-dwarf5", "Os-dwarf4", "Os-dwarf5", "O2-dwarf4", "O2-dwarf5"} {
			vs = append(vs, v+layout)
		}
	}
	return vs
}()

var symbolizeBuild = &Build{
	Prefix: "tcmprof-testelf",
	Src:    SymbolizeSrc,
	Tools:  []string{"arm-none-eabi-g++", "make"},
	Make: func(src, dir string) error {
		return Run(dir, "make", "-s", "-j2", "-C", src, "OUT="+dir, "all")
	},
}

// SymbolizeDir builds the symbolizer's test firmware once per test binary
// (see Build) and returns the directory holding <variant>.elf. The test is
// skipped only if the cross compiler or make is missing.
func SymbolizeDir(t testing.TB) string {
	t.Helper()
	return symbolizeBuild.Dir(t)
}

// Func is one STT_FUNC symbol, the oracle's view of a function.
type Func struct {
	Name string
	Addr uint32 // without the Thumb bit
	Size uint32
}

// FuncSymbols lists every STT_FUNC symbol of f, and their addresses by
// name.
func FuncSymbols(t testing.TB, f *elf.File) (funcs []Func, addrOf map[string]uint32) {
	t.Helper()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	addrOf = map[string]uint32{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			a := uint32(s.Value) &^ 1
			funcs = append(funcs, Func{Name: s.Name, Addr: a, Size: uint32(s.Size)})
			addrOf[s.Name] = a
		}
	}
	return funcs, addrOf
}

// SectionNames lists the named sections of the ELF file at path (an
// object file's input sections, for one), in file order.
func SectionNames(t testing.TB, path string) []string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	for _, s := range f.Sections {
		if s.Name != "" {
			names = append(names, s.Name)
		}
	}
	return names
}
