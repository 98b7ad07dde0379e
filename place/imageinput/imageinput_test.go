// SPDX-License-Identifier: Apache-2.0

package imageinput

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/elf/board"
	"github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/elf/mapfile"
	"github.com/tcmprof/tcmprof/elf/thumb"
	"github.com/tcmprof/tcmprof/firmware-sampler/qemu"
	"github.com/tcmprof/tcmprof/internal/armtest"
	"github.com/tcmprof/tcmprof/internal/qemutest"
	"github.com/tcmprof/tcmprof/place"
)

// TestReadOnDemoFirmware fills an Input from the QEMU demo firmware
// (built by the test with arm-none-eabi-gcc) and checks it against what the
// binutils tools say: each function's input section, size and alignment
// against the object file's section header (the objects the archives hold,
// compared byte for byte with the build's .o files), tail calls against
// objdump's b.w lines, ITCM use against the script's __itcm_end, and the
// pins.
func TestReadOnDemoFirmware(t *testing.T) {
	armtest.NeedTools(t, "arm-none-eabi-objdump")
	demo := qemutest.Demo(t, qemu.BuildOptions{})
	out, elfPath, mapPath := demo.Dir, demo.ELF, demo.Map
	img, err := image.Open(elfPath)
	if err != nil {
		t.Fatal(err)
	}
	mf, err := os.Open(mapPath)
	if err != nil {
		t.Fatal(err)
	}
	m, err := mapfile.Parse(mf)
	mf.Close()
	if err != nil {
		t.Fatal(err)
	}
	board, err := board.ByName("qemu-demo")
	if err != nil {
		t.Fatal(err)
	}
	in, warnings, err := Read(Sources{Image: img, Map: m, MapPath: mapPath, Board: board})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) > 0 {
		t.Errorf("every object of the demo is readable, yet: %q", warnings)
	}

	// The archives' members are the build's object files, verbatim.
	objects := make(map[string]string) // member or object path -> file under out/obj
	filepath.Walk(filepath.Join(out, "obj"), func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".o") {
			objects[filepath.Base(p)] = p
		}
		return nil
	})
	headers := make(map[string]map[string]*elf.SectionHeader)
	sectionOf := func(t *testing.T, f *place.Func) *elf.SectionHeader {
		path := f.Object
		if f.Archive != "" {
			path = objects[f.Object]
			if path == "" {
				return nil // a library member (newlib): no build copy to compare with
			}
			ar, err := os.ReadFile(f.Archive)
			if err != nil {
				t.Fatal(err)
			}
			member, err := archiveMember(ar, f.Object)
			if err != nil {
				t.Fatalf("%s(%s): %v", f.Archive, f.Object, err)
			}
			if obj, _ := os.ReadFile(path); !bytes.Equal(obj, member) {
				t.Fatalf("%s(%s) differs from %s", f.Archive, f.Object, path)
			}
		}
		if headers[path] == nil {
			ef, err := elf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			headers[path] = make(map[string]*elf.SectionHeader)
			for _, s := range ef.Sections {
				headers[path][s.Name] = &s.SectionHeader
			}
			ef.Close()
		}
		return headers[path][f.Section]
	}
	checked, inferredPadded, testbench := 0, 0, 0
	for i := range in.Funcs {
		f := &in.Funcs[i]
		switch {
		case strings.HasPrefix(f.Symbol, "tcmp_") && f.Pin != PinSampler:
			t.Errorf("%s not pinned as sampler code (pin %q)", f.Symbol, f.Pin)
		case strings.HasSuffix(f.Symbol, "_veneer") && f.Pin != PinVeneer:
			t.Errorf("%s not pinned as a veneer", f.Symbol)
		case f.Region == "TESTBENCH":
			testbench++
			if f.Pin != PinTestbench {
				t.Errorf("%s in the testbench not pinned (pin %q)", f.Symbol, f.Pin)
			}
		case f.Pin == PinTestbench:
			t.Errorf("%s at %#x pinned as testbench code", f.Symbol, f.Addr)
		}
		if f.Section == "" || f.Pin == PinVeneer {
			continue
		}
		h := sectionOf(t, f)
		if h == nil {
			continue
		}
		checked++
		if uint32(h.Addralign) != f.Align || uint32(h.Size) != f.Size {
			t.Errorf("%s: section %s of %s has align %d size %d; Read says %d, %d", f.Symbol, f.Section, f.Object, h.Addralign, h.Size, f.Align, f.Size)
		}
		// The fallback for unreadable objects: exact where ld padded
		// before the section, a power of two within the address otherwise.
		s := m.SectionAt(f.Addr)
		guess := inferAlign(m, s)
		if guess&(guess-1) != 0 || s.Addr%guess != 0 {
			t.Errorf("%s: inferred alignment %d does not divide %#x", f.Section, guess, s.Addr)
		}
		if padded(m, s) {
			inferredPadded++
			if guess != f.Align {
				t.Errorf("%s at %#x after padding: inferred alignment %d, the object says %d", f.Section, s.Addr, guess, f.Align)
			}
		}
	}
	if checked < 100 || inferredPadded == 0 {
		t.Errorf("only %d functions checked against their objects, %d after padding", checked, inferredPadded)
	}
	if testbench < 5 {
		t.Errorf("%d functions in the testbench; want the PC model and the controller's bus there", testbench)
	}

	// Tail calls: objdump's b.w to the start of another function.
	bw := regexp.MustCompile(`^\s*([0-9a-f]+):\s+[0-9a-f]{4} [0-9a-f]{4}\s+b\.w\s+([0-9a-f]+) <([^>+]+)>$`)
	dis, err := exec.Command("arm-none-eabi-objdump", "-d", "-w", elfPath).Output()
	if err != nil {
		t.Fatal(err)
	}
	ranges := thumb.FuncRanges(img.Functions())
	tails, err := thumb.TailCalls(img.File(), ranges)
	if err != nil {
		t.Fatal(err)
	}
	got := make(map[uint32]uint32)
	for _, e := range tails {
		got[e.Site] = e.Target
	}
	want := 0
	for _, line := range strings.Split(string(dis), "\n") {
		mm := bw.FindStringSubmatch(line)
		if mm == nil {
			continue
		}
		site, _ := strconv.ParseUint(mm[1], 16, 32)
		target, _ := strconv.ParseUint(mm[2], 16, 32)
		caller := img.FunctionAt(uint32(site))
		callee := img.FunctionAt(uint32(target))
		if caller == nil || callee == nil || callee.Addr != uint32(target) || callee == caller {
			continue // a branch inside its function, or to a label
		}
		want++
		if got[uint32(site)] != uint32(target) {
			t.Errorf("objdump: b.w at %#x to %s (%#x); TailCalls: %#x", site, mm[3], target, got[uint32(site)])
		}
		delete(got, uint32(site))
	}
	for site, target := range got {
		t.Errorf("TailCalls reports %#x -> %#x, objdump shows no such b.w", site, target)
	}
	if want < 5 {
		t.Errorf("the -Os demo has only %d tail calls: fixture lost them?", want)
	}

	checkDemoBootClosure(t, in, elfPath)

	// Unwind pins against the linked .ARM.exidx table: each 8-byte entry
	// starts with an R_ARM_PREL31 offset to the function it describes
	// (libgcc's members have entries; the demo's own code none).
	targets := make(map[uint32]bool)
	if exidx := img.File().Section(".ARM.exidx"); exidx != nil {
		data, err := exidx.Data()
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off+8 <= len(data); off += 8 {
			prel31 := int32(binary.LittleEndian.Uint32(data[off:])<<1) >> 1
			targets[(uint32(exidx.Addr)+uint32(off)+uint32(prel31))&^1] = true
		}
	}
	unwindPins := 0
	for _, f := range in.Funcs {
		if f.Pin == PinVeneer || f.Pin == PinVectors {
			continue
		}
		if (f.Pin == PinUnwind) != targets[f.Addr] {
			t.Errorf("%s at %#x: pin %q, .ARM.exidx entry %v", f.Symbol, f.Addr, f.Pin, targets[f.Addr])
		}
		if f.Pin == PinUnwind {
			unwindPins++
		}
	}
	if unwindPins == 0 {
		t.Error("no function of the demo is pinned for its unwind entry: the fixture lost libgcc's __udivmoddi4?")
	}

	var itcmEnd uint32
	syms, _ := img.File().Symbols()
	for _, s := range syms {
		if s.Name == "__itcm_end" {
			itcmEnd = uint32(s.Value)
		}
	}
	if itcmEnd == 0 || in.ITCMUsed != itcmEnd || in.ITCMSize != 128<<10 {
		t.Errorf("ITCM used %d of %d; the link script's __itcm_end is %#x", in.ITCMUsed, in.ITCMSize, itcmEnd)
	}
	t.Logf("%d functions, %d edges (%d tail calls), %d checked against their objects (%d after padding), ITCM used %d", len(in.Funcs), len(in.Edges), want, checked, inferredPadded, in.ITCMUsed)
}

// checkDemoBootClosure plans the demo and compares the boot-critical
// exclusions with what objdump shows the boot path calls: Reset_Handler,
// what it calls up to its last BL to boot_copy, and what boot_copy calls.
// main (called after the copy) and the kernel under it must stay plannable.
func checkDemoBootClosure(t *testing.T, in *place.Input, elfPath string) {
	t.Helper()
	bl := regexp.MustCompile(`^\s*[0-9a-f]+:\s+[0-9a-f]{4} [0-9a-f]{4}\s+bl\s+[0-9a-f]+ <([^>+]+)>$`)
	calls := func(fn string) []string {
		out, err := exec.Command("arm-none-eabi-objdump", "-d", "-w", "--disassemble="+fn, elfPath).Output()
		if err != nil {
			t.Fatal(err)
		}
		var callees []string
		for _, line := range strings.Split(string(out), "\n") {
			if m := bl.FindStringSubmatch(line); m != nil {
				callees = append(callees, m[1])
			}
		}
		return callees
	}
	reset := calls("Reset_Handler")
	last := -1
	for k, c := range reset {
		if c == "boot_copy" {
			last = k
		}
	}
	if last < 0 || !slices.Contains(reset[last+1:], "main") {
		t.Fatalf("objdump: Reset_Handler calls %v; the test needs boot_copy, then main", reset)
	}
	want := map[string]bool{"Reset_Handler": true}
	for _, c := range append(reset[:last+1], calls("boot_copy")...) {
		want[c] = true
	}
	plan, err := place.Build(in, place.Options{Budget: -1, CurveBudgets: []uint32{}})
	if err != nil {
		t.Fatal(err)
	}
	got := make(map[string]bool)
	reason := make(map[string]string)
	for _, x := range plan.Excluded {
		reason[x.Symbol] = x.Reason
		if x.Reason == place.ReasonBoot {
			got[x.Symbol] = true
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("boot-critical %v; objdump shows the boot path before the copy calls %v", got, want)
	}
	for _, name := range append(reset[last+1:], "z_ready_waiters") {
		if reason[name] == place.ReasonBoot {
			t.Errorf("%s (run after boot_copy) excluded as boot-critical", name)
		}
	}
}

// padded reports whether ld left a gap between s and the input section
// before it in the same output section.
func padded(m *mapfile.Map, s *mapfile.InputSection) bool {
	var prevEnd uint32
	found := false
	for _, o := range m.Sections {
		if o.Output == s.Output && o.Size > 0 && o.Addr+o.Size <= s.Addr && o.Addr < s.Addr {
			prevEnd, found = max(prevEnd, o.Addr+o.Size), true
		}
	}
	return found && prevEnd < s.Addr
}

// rulesBuild links testdata/image/fw.c, which has one function for each
// rule of Read, once, cached in $TMPDIR (armtest.Build).
var rulesBuild = &armtest.Build{
	Prefix: "tcmprof-imageinput-rules",
	Src:    "testdata/image",
	Recipe: []string{"imageinput_test.go"},
	Make: func(src, out string) error {
		for _, args := range [][]string{
			{"-mcpu=cortex-m7", "-mthumb", "-O2", "-g", "-ffunction-sections", "-c", filepath.Join(src, "fw.c"), "-o", "fw.o"},
			{"-mcpu=cortex-m7", "-mthumb", "-nostdlib", "-nostartfiles", "-T", filepath.Join(src, "fw.ld"), "-Wl,-Map=fw.map", "-Wl,--build-id", "fw.o", "-o", "fw.elf"},
		} {
			if err := armtest.Run(out, "arm-none-eabi-gcc", args...); err != nil {
				return err
			}
		}
		return nil
	},
}

// TestReadRules checks each rule of Read on rulesBuild's image; then
// removes the object file (from a copy) and checks that the alignments are
// inferred, with warnings.
func TestReadRules(t *testing.T) {
	dir := t.TempDir()
	armtest.Copy(t, rulesBuild.Dir(t), dir)
	load := func(t *testing.T) (*place.Input, []string) {
		img, err := image.Open(filepath.Join(dir, "fw.elf"))
		if err != nil {
			t.Fatal(err)
		}
		mf, err := os.Open(filepath.Join(dir, "fw.map"))
		if err != nil {
			t.Fatal(err)
		}
		defer mf.Close()
		m, err := mapfile.Parse(mf)
		if err != nil {
			t.Fatal(err)
		}
		board := &board.Board{Name: "test", BootCritical: []string{"Reset_Handler", "z_not_here"},
			Regions: []board.Region{{Name: "ITCM", Kind: board.KindITCM, Start: 0, Size: 128 << 10}, {Name: "FLASH", Kind: board.KindFlash, Start: 0x60000000, Size: 1 << 20}}}
		in, warnings, err := Read(Sources{Image: img, Map: m, MapPath: filepath.Join(dir, "fw.map"), Board: board})
		if err != nil {
			t.Fatal(err)
		}
		return in, warnings
	}
	in, warnings := load(t)
	if len(warnings) > 0 {
		t.Errorf("warnings with the object present: %q", warnings)
	}
	funcs := make(map[string]*place.Func)
	for i := range in.Funcs {
		funcs[in.Funcs[i].Symbol] = &in.Funcs[i]
	}
	get := func(name string) *place.Func {
		f := funcs[name]
		if f == nil {
			t.Fatalf("no function %s in %v", name, funcs)
		}
		return f
	}
	for name, want := range map[string]string{
		"vector_table_stub": PinVectors, "vector_add": "", "tcmp_sample": PinSampler,
		"__vector_add_veneer": PinVeneer, "__fast_veneer": PinVeneer, "shared_a": "", "aligned16": "",
	} {
		if f := get(name); f.Pin != want {
			t.Errorf("%s: pin %q, want %q", name, f.Pin, want)
		}
	}
	if f := get("__fast_veneer"); f.Key.Source != "" {
		t.Errorf("veneer has source %q", f.Key.Source)
	}
	if a, b := get("shared_a"), get("shared_b"); a.Section != "" || b.Section != "" || a.Object != "fw.o" {
		t.Errorf("functions sharing .ramfunc: sections %q and %q, object %q; want no own section", a.Section, b.Section, a.Object)
	}
	if f := get("aligned16"); f.Section != ".text.aligned16" || f.Align != 16 || !strings.HasSuffix(f.Key.Source, "testdata/image/fw.c") {
		t.Errorf("aligned16: section %q align %d source %q", f.Section, f.Align, f.Key.Source)
	}
	if f := get("fast"); f.Region != "ITCM" || !in.InITCM(f.Addr) {
		t.Errorf("fast: region %q at %#x", f.Region, f.Addr)
	}
	ef, err := elf.Open(filepath.Join(dir, "fw.elf"))
	if err != nil {
		t.Fatal(err)
	}
	itcm := ef.Section(".itcm")
	if in.ITCMUsed != uint32(itcm.Addr+itcm.Size) {
		t.Errorf("ITCM used %d, .itcm ends at %#x", in.ITCMUsed, itcm.Addr+itcm.Size)
	}
	ef.Close()
	if strings.Join(in.BootRoots, ",") != "Reset_Handler" {
		t.Errorf("boot roots %q, want the one the image has", in.BootRoots)
	}
	edges := make(map[[2]string]bool)
	for _, e := range in.Edges {
		var from, to string
		for _, f := range in.Funcs {
			if f.Addr == e.Caller {
				from = f.Symbol
			}
			if f.Addr == e.Callee {
				to = f.Symbol
			}
		}
		edges[[2]string{from, to}] = true
	}
	// fast tail-calls vector_add through a veneer; tail tail-calls
	// aligned16; Reset_Handler reaches fast through a veneer.
	for _, e := range [][2]string{{"fast", "vector_add"}, {"tail", "aligned16"}, {"Reset_Handler", "fast"}, {"Reset_Handler", "shared_b"}} {
		if !edges[e] {
			t.Errorf("no edge %s -> %s in %v", e[0], e[1], edges)
		}
	}

	if err := os.Remove(filepath.Join(dir, "fw.o")); err != nil {
		t.Fatal(err)
	}
	in, warnings = load(t)
	if len(warnings) == 0 || !strings.Contains(warnings[0], "inferred") {
		t.Errorf("no inference warnings without the object: %q", warnings)
	}
	for _, f := range in.Funcs {
		if f.Symbol == "aligned16" && f.Align != 16 {
			t.Errorf("aligned16 (after padding) inferred as %d", f.Align)
		}
	}
}

func TestArchiveMemberRejects(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
	}{
		{"not an archive", "ELF", "not an ar archive"},
		{"thin", "!<thin>\n", "thin archive"},
		{"bad header", "!<arch>\n" + strings.Repeat("x", 60), "bad member header"},
		{"bad size", "!<arch>\n" + "a.o/            0           0     0     644     99999999  `\n", "bad member size"},
		{"absent", "!<arch>\n" + "a.o/            0           0     0     644     2         `\nab", "no member b.o"},
		{"twice", "!<arch>\n" + "b.o/            0           0     0     644     1         `\na\n" + "b.o/            0           0     0     644     1         `\nb\n", "2 members named b.o"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := archiveMember([]byte(tc.data), "b.o")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// FuzzArchiveMember: any bytes give a member or an error, never a panic,
// and a member returned lies inside the input.
func FuzzArchiveMember(f *testing.F) {
	f.Add([]byte("!<arch>\n"+"b.o/            0           0     0     644     2         `\nab"), "b.o")
	f.Add([]byte("!<arch>\n"+"//                                              6         `\nb.o/\n\n"+"/0              0           0     0     644     1         `\nx\n"), "b.o")
	f.Add([]byte("!<thin>\n"), "b.o")
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		member, err := archiveMember(data, name)
		if err == nil && len(member) > len(data) {
			t.Fatalf("member of %d bytes from %d bytes of input", len(member), len(data))
		}
	})
}
