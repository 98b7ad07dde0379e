// SPDX-License-Identifier: Apache-2.0

// Package profiletest builds the test firmware of package profile
// (profile/testdata) with the ARM toolchain and answers questions about it
// with the ARM binutils, for the tests of profile and of the commands.
package profiletest

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/elf/mapfile"
	"github.com/tcmprof/tcmprof/internal/armtest"
	"github.com/tcmprof/tcmprof/sample"
)

// firmware is testdata/fw.c linked by the test, with what the ARM binutils
// (the oracle) say about it.
type Firmware struct {
	Dir, ELF, MapPath string
	Image             *image.Image
	Map               *mapfile.Map
	// insns maps each function to its instructions in address order, as
	// arm-none-eabi-objdump disassembles them.
	insns map[string][]insn
	// recorded holds, for the checked-in copy, what each oracle of
	// oracles printed for it (by tool name); nil for a fresh build, whose
	// oracles run.
	recorded map[string][]byte
}

// oracles are the ARM binutils runs whose output the Firmware reads, each
// on the ELF in its directory (so no directory is in the output).
// The checked-in copy comes with each one's output as recorded in
// testdata/<file>.
var oracles = []struct {
	file, tool string
	args       []string
}{
	{"fw.objdump.txt", "arm-none-eabi-objdump", []string{"-d", "--no-show-raw-insn"}},
	{"fw.nm.txt", "arm-none-eabi-nm", []string{"-S"}},
	{"fw.readelf.txt", "arm-none-eabi-readelf", []string{"-n"}},
}

// oracle is what tool (one of oracles) prints about the firmware.
func (fw *Firmware) oracle(tool string) ([]byte, error) {
	if fw.recorded != nil {
		return fw.recorded[tool], nil
	}
	for _, o := range oracles {
		if o.tool == tool {
			return runOracle(fw.ELF, o.tool, o.args...)
		}
	}
	return nil, fmt.Errorf("%s is not one of the firmware's oracles", tool)
}

// runOracle runs tool with args on elfPath, in its directory.
func runOracle(elfPath, tool string, args ...string) ([]byte, error) {
	cmd := exec.Command(tool, append(args, filepath.Base(elfPath))...)
	cmd.Dir = filepath.Dir(elfPath)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	return out, nil
}

type insn struct {
	addr uint32
	text string // mnemonic and operands
}

var (
	fwOnce sync.Once
	fwVal  *Firmware
	fwErr  error
)

// self is this file, whose change (the recipe) rebuilds the firmware.
var self = func() string {
	_, file, _, _ := runtime.Caller(0)
	return file
}()

// repo is the repository's root directory.
var repo = filepath.Join(filepath.Dir(self), "..", "..")

// LinkerScript is the firmware's linker script, for other test programs
// laid out as it is.
var LinkerScript = filepath.Join(repo, "profile", "testdata", "fw.ld")

var fwBuild = &armtest.Build{
	Prefix: "tcmprof-profile",
	Src:    filepath.Join(repo, "profile", "testdata"),
	Recipe: []string{self},
	Make:   makeFirmware,
}

// Build compiles testdata/fw.c, testdata/dsp.cpp and testdata/checksum.c
// (as the archive libnet.a) for a Cortex-M7, once and cached in $TMPDIR
// (armtest.Build), and reads it and what objdump says of it once per test
// binary. It skips the test when the toolchain is missing.
func Build(t testing.TB) *Firmware {
	t.Helper()
	armtest.NeedTools(t, "arm-none-eabi-gcc", "arm-none-eabi-g++", "arm-none-eabi-ar", "arm-none-eabi-objdump", "arm-none-eabi-addr2line")
	dir := fwBuild.Dir(t)
	fwOnce.Do(func() { fwVal, fwErr = read(dir, nil) })
	if fwErr != nil {
		t.Fatal(fwErr)
	}
	return fwVal
}

// CheckedInDir holds a copy of the firmware Build makes, checked in so
// that tests can read it where the toolchain is missing (as Go's
// debug/elf does with its testdata): checkedInFiles, what each of the
// oracles printed about it, and toolchain.txt, the compiler and linker
// that built it. TestCheckedInFirmware rebuilds it and compares.
var CheckedInDir = filepath.Join(filepath.Dir(self), "testdata")

// checkedInFiles are the artefacts of the build in CheckedInDir: the ELF,
// its map file and the objects the map names, which the planner reads
// beside the map for their sections' alignment.
var checkedInFiles = []string{"fw.elf", "fw.map", "fw.o", "dsp.o", "libnet.a"}

var checkedIn = sync.OnceValues(func() (*Firmware, error) {
	dir, err := filepath.Abs(CheckedInDir)
	if err != nil {
		return nil, err
	}
	recorded := make(map[string][]byte)
	for _, o := range oracles {
		if recorded[o.tool], err = os.ReadFile(filepath.Join(dir, o.file)); err != nil {
			return nil, err
		}
	}
	return read(dir, recorded)
})

// CheckedIn is the checked-in copy of the firmware (CheckedInDir): the
// same bytes as Build makes with the toolchain of toolchain.txt, read
// without any tool, so that what a test derives from it is the same on
// every machine whatever its compiler, or none.
func CheckedIn(t testing.TB) *Firmware {
	t.Helper()
	fw, err := checkedIn()
	if err != nil {
		t.Fatal(err)
	}
	return fw
}

// makeFirmware builds the firmware from src into dir.
func makeFirmware(src, dir string) error {
	// The build is reproducible: it runs in dir with relative object names
	// (so the map names fw.o and libnet.a(checksum.o)), and the DWARF
	// names the sources /tcmprof/profile/testdata/... and the build
	// directory /build wherever the checkout and the temporary directory
	// are. The same toolchain gives the same ELF, build-id included, which
	// the commands' golden outputs rely on.
	root, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	flags := []string{"-mcpu=cortex-m7", "-mthumb", "-mfpu=fpv5-d16", "-mfloat-abi=hard", "-g", "-O2", "-ffunction-sections",
		"-ffile-prefix-map=" + root + "=/tcmprof", "-ffile-prefix-map=" + dir + "=/build"}
	gcc := append([]string{"arm-none-eabi-gcc"}, flags...)
	steps := [][]string{
		slices.Concat(gcc, []string{"-c", filepath.Join(src, "checksum.c"), "-o", "checksum.o"}),
		{"arm-none-eabi-ar", "rcsD", "libnet.a", "checksum.o"},
		slices.Concat(gcc, []string{"-c", filepath.Join(src, "fw.c"), "-o", "fw.o"}),
		slices.Concat([]string{"arm-none-eabi-g++"}, flags, []string{"-fno-exceptions", "-fno-rtti", "-c", filepath.Join(src, "dsp.cpp"), "-o", "dsp.o"}),
		slices.Concat(gcc, []string{"-nostartfiles", "-nostdlib", "-T", filepath.Join(src, "fw.ld"),
			"-Wl,--build-id", "-Wl,-Map=fw.map", "-o", "fw.elf", "fw.o", "dsp.o", "-L.", "-lnet"}),
	}
	for _, s := range steps {
		if err := armtest.Run(dir, s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// read opens the firmware in dir and disassembles it, from the oracles'
// recorded output if it is not nil.
func read(dir string, recorded map[string][]byte) (*Firmware, error) {
	fw := &Firmware{Dir: dir, ELF: filepath.Join(dir, "fw.elf"), MapPath: filepath.Join(dir, "fw.map"), recorded: recorded}
	var err error
	if fw.Image, err = image.Open(fw.ELF); err != nil {
		return nil, err
	}
	mf, err := os.Open(fw.MapPath)
	if err != nil {
		return nil, err
	}
	defer mf.Close()
	if fw.Map, err = mapfile.Parse(mf); err != nil {
		return nil, err
	}
	out, err := fw.oracle("arm-none-eabi-objdump")
	if err != nil {
		return nil, err
	}
	fw.insns = parseObjdump(string(out))
	return fw, nil
}

var (
	objdumpFunc = regexp.MustCompile(`^([0-9a-f]+) <([^>]+)>:$`)
	objdumpInsn = regexp.MustCompile(`^\s*([0-9a-f]+):\s+(.*)$`)
)

func parseObjdump(out string) map[string][]insn {
	m := make(map[string][]insn)
	cur := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if g := objdumpFunc.FindStringSubmatch(line); g != nil {
			cur = g[2]
			continue
		}
		if g := objdumpInsn.FindStringSubmatch(line); g != nil && cur != "" {
			a, _ := strconv.ParseUint(g[1], 16, 32)
			m[cur] = append(m[cur], insn{uint32(a), strings.TrimSpace(g[2])})
		}
	}
	return m
}

// Entry is a function's first instruction address.
func (fw *Firmware) Entry(t testing.TB, fn string) uint32 {
	t.Helper()
	is := fw.insns[fn]
	if len(is) == 0 {
		t.Fatalf("objdump shows no function %s", fn)
	}
	return is[0].addr
}

// Find returns the address of the n-th (0-based) instruction of fn whose
// text matches re.
func (fw *Firmware) Find(t testing.TB, fn, re string, n int) uint32 {
	t.Helper()
	rx := regexp.MustCompile(re)
	for _, in := range fw.insns[fn] {
		if rx.MatchString(in.text) {
			if n == 0 {
				return in.addr
			}
			n--
		}
	}
	t.Fatalf("objdump shows no %q in %s", re, fn)
	return 0
}

// Next is the address of the instruction after the one at addr in fn.
func (fw *Firmware) Next(t testing.TB, fn string, addr uint32) uint32 {
	t.Helper()
	is := fw.insns[fn]
	for i, in := range is {
		if in.addr == addr && i+1 < len(is) {
			return is[i+1].addr
		}
	}
	t.Fatalf("no instruction after 0x%x in %s", addr, fn)
	return 0
}

// ReturnAddress is the LR value a BL at site leaves: the next instruction
// with the Thumb bit set.
func (fw *Firmware) ReturnAddress(t testing.TB, fn string, site uint32) uint32 {
	return fw.Next(t, fn, site) | 1
}

// Addr2line returns arm-none-eabi-addr2line's inline chain at addr,
// innermost first, as "function file:line" strings; the test is skipped
// where addr2line is missing (the checked-in copy needs no other tool).
func (fw *Firmware) Addr2line(t testing.TB, addr uint32) []string {
	t.Helper()
	armtest.NeedTools(t, "arm-none-eabi-addr2line")
	out, err := exec.Command("arm-none-eabi-addr2line", "-f", "-i", "-e", fw.ELF, fmt.Sprintf("0x%x", addr)).Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var chain []string
	for i := 0; i+1 < len(lines); i += 2 {
		loc := lines[i+1]
		if j := strings.Index(loc, " ("); j >= 0 {
			loc = loc[:j] // drop "(discriminator N)"
		}
		chain = append(chain, lines[i]+" "+filepath.Base(loc))
	}
	return chain
}

// BuildID is the GNU build-id as arm-none-eabi-readelf prints it.
func (fw *Firmware) BuildID(t testing.TB) []byte {
	t.Helper()
	out, err := fw.oracle("arm-none-eabi-readelf")
	if err != nil {
		t.Fatal(err)
	}
	return parseBuildID(t, fw.ELF, out)
}

// ReadelfBuildID is the GNU build-id of elfPath as arm-none-eabi-readelf
// prints it; the test fails when readelf shows none.
func ReadelfBuildID(t testing.TB, elfPath string) []byte {
	t.Helper()
	out, err := exec.Command("arm-none-eabi-readelf", "-n", elfPath).Output()
	if err != nil {
		t.Fatal(err)
	}
	return parseBuildID(t, elfPath, out)
}

// parseBuildID is the build-id in readelf -n's output about elfPath.
func parseBuildID(t testing.TB, elfPath string, out []byte) []byte {
	t.Helper()
	m := regexp.MustCompile(`Build ID: ([0-9a-f]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("readelf -n %s shows no build-id:\n%s", elfPath, out)
	}
	id, _ := hex.DecodeString(string(m[1]))
	return id
}

// Group is N records with the same PC, LR, exception, thread and stack.
type Group struct {
	N      int
	PC, LR uint32
	Exc    uint16
	Thread uint32
	SP     uint32
	Stack  []uint32
}

// StackWords is K of the captures built with sample.FieldStack.
const StackWords = 32

// Capture builds a valid capture of the groups, in order, as taken from fw
// at a 1 ms mean interval; thread 1 is "main", thread 2 "idle".
func (fw *Firmware) Capture(t testing.TB, fields sample.Fields, groups ...Group) *sample.Capture {
	t.Helper()
	c := &sample.Capture{
		Header: sample.Header{
			ProtoMajor: 1, Fields: fields, CPUHz: 600_000_000, TimerHz: 24_000_000, IntervalTicks: 24_000,
			BuildID: fw.BuildID(t),
		},
		Threads: map[uint32]string{1: "main", 2: "idle"},
	}
	if fields&sample.FieldStack != 0 {
		c.Header.StackWords = StackWords
	}
	for _, g := range groups {
		for range g.N {
			r := sample.Record{Index: uint32(len(c.Records)), PC: g.PC}
			if fields&sample.FieldLR != 0 {
				r.LR = g.LR
			}
			if fields&sample.FieldExc != 0 {
				r.Exc = g.Exc
			}
			if fields&sample.FieldThread != 0 {
				r.Thread = g.Thread
			}
			if fields&sample.FieldStack != 0 {
				r.SP, r.Stack = g.SP, g.Stack
			}
			c.Records = append(c.Records, r)
		}
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// Pprof runs "go tool pprof" with args (with empty tool and temp
// directories, so it finds no host binutils and saves nothing) and returns
// its output.
func Pprof(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"tool", "pprof"}, args...)...)
	cmd.Env = append(cmd.Environ(), "PPROF_TMPDIR="+t.TempDir(), "PPROF_TOOLS="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// SymbolSize is the size of symbol name as arm-none-eabi-nm prints it.
func (fw *Firmware) SymbolSize(t testing.TB, name string) uint32 {
	t.Helper()
	out, err := fw.oracle("arm-none-eabi-nm")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[3] == name {
			n, _ := strconv.ParseUint(f[1], 16, 32)
			return uint32(n)
		}
	}
	t.Fatalf("nm shows no sized symbol %s", name)
	return 0
}
