// SPDX-License-Identifier: Apache-2.0

package mapfile

import (
	"debug/elf"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/internal/armtest"
)

func parseMapFile(t testing.TB, path string) *Map {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := Parse(f)
	if err != nil {
		t.Fatalf("Parse(%s): %v", path, err)
	}
	return m
}

// TestParseMapAgainstELF parses the map GNU ld wrote for extras.elf and
// checks every function symbol of the ELF: its address falls in a placed
// input section, and that section's archive(member) or object is one that
// defines the symbol according to nm on the archives and objects.
func TestParseMapAgainstELF(t *testing.T) {
	e := armtest.BuildExtras(t)
	m := parseMapFile(t, e.Map)

	// definers: symbol -> files defining it, named as the map names them.
	definers := map[string]map[string]bool{}
	seen := map[string]bool{}
	for _, s := range m.Sections {
		file := s.Archive
		if file == "" {
			file = s.Object
		}
		nmArg := file
		if !filepath.IsAbs(nmArg) { // ld ran in the build directory
			nmArg = filepath.Join(e.Dir, nmArg)
		}
		if seen[file] || file == "linker stubs" {
			continue
		}
		seen[file] = true
		for _, line := range strings.Split(armtest.Output(t, "arm-none-eabi-nm", "-A", "--defined-only", nmArg), "\n") {
			// archive:member:value T name, or object:value T name
			f := strings.Fields(line)
			if len(f) != 3 {
				continue
			}
			where := strings.Split(f[0], ":")
			name := file
			if s.Archive != "" {
				name = file + "(" + where[1] + ")"
			}
			if definers[f[2]] == nil {
				definers[f[2]] = map[string]bool{}
			}
			definers[f[2]][name] = true
		}
	}

	f, err := elf.Open(e.ELF)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	funcs, _ := armtest.FuncSymbols(t, f)
	libs := map[string]bool{}
	for _, fn := range funcs {
		s := m.SectionAt(fn.Addr)
		if s == nil {
			t.Errorf("%s at %#x: no input section", fn.Name, fn.Addr)
			continue
		}
		if uint64(fn.Addr)+uint64(fn.Size) > uint64(s.Addr)+uint64(s.Size) {
			t.Errorf("%s %#x+%#x overruns its section %s %#x+%#x", fn.Name, fn.Addr, fn.Size, s.Name, s.Addr, s.Size)
		}
		if strings.HasSuffix(fn.Name, "_veneer") {
			if s.Object != "linker stubs" {
				t.Errorf("veneer %s is in %s, want linker stubs", fn.Name, s.File())
			}
			continue
		}
		if !definers[fn.Name][s.File()] {
			t.Errorf("%s at %#x: map says %s, nm says %v", fn.Name, fn.Addr, s.File(), slices.Sorted(maps.Keys(definers[fn.Name])))
		}
		libs[m.Library(fn.Addr)] = true
	}
	for _, want := range []string{"libalpha.a", "libbeta.a", "libg_nano.a", "main.o"} {
		if !libs[want] {
			t.Errorf("Library never returned %q; got %v", want, slices.Sorted(maps.Keys(libs)))
		}
	}

	// The ITCM function at 0x34 must not be confused with the .debug_*
	// sections, which the map also lists at address 0.
	if s := m.SectionAt(0x34); s == nil || s.Output != ".itcm" || s.Name != ".itcm_text" {
		t.Errorf("SectionAt(0x34) = %+v, want .itcm_text in .itcm", s)
	}

	// Output sections and load addresses agree with the ELF section headers
	// and program headers.
	outs := map[string]OutputSection{}
	for _, o := range m.Outputs {
		outs[o.Name] = o
	}
	for _, sec := range f.Sections {
		if sec.Flags&elf.SHF_ALLOC == 0 || sec.Size == 0 {
			continue
		}
		o, ok := outs[sec.Name]
		if !ok || !o.Alloc || uint64(o.Addr) != sec.Addr || uint64(o.Size) != sec.Size {
			t.Errorf("ELF section %s %#x+%#x; map: %+v", sec.Name, sec.Addr, sec.Size, o)
			continue
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && p.Vaddr == sec.Addr && p.Memsz > 0 && uint64(o.LoadAddr) != p.Paddr {
				t.Errorf("%s: map load address %#x, program header %#x", sec.Name, o.LoadAddr, p.Paddr)
			}
		}
	}
	if o := outs[".debug_info"]; o.Alloc {
		t.Errorf(".debug_info taken as allocated: %+v", o)
	}

	wantMem := []MemoryRegion{
		{Name: "FLASH", Origin: 0x60000000, Length: 8 << 20, Attributes: "xr"},
		{Name: "ITCM", Origin: 0, Length: 128 << 10, Attributes: "xrw"},
		{Name: "DTCM", Origin: 0x20000000, Length: 128 << 10, Attributes: "rw"},
	}
	if !reflect.DeepEqual(m.Memory, wantMem) {
		t.Errorf("Memory = %+v\nwant %+v", m.Memory, wantMem)
	}

	// --gc-sections dropped alpha_unused: listed as discarded, never placed.
	var discarded bool
	for _, s := range m.Discarded {
		if s.Name == ".text.alpha_unused" && s.Member == "alpha_math.o" && pathBase(s.Archive) == "libalpha.a" && s.Size > 0 {
			discarded = true
		}
	}
	if !discarded {
		t.Error(".text.alpha_unused not among the discarded sections")
	}
	for _, s := range m.Sections {
		if s.Name == ".text.alpha_unused" {
			t.Errorf("discarded section placed: %+v", s)
		}
	}
}

// TestParseMapZephyrExcerpt covers what the small real map lacks: Zephyr's
// dot-less output section names, relocated ITCM code, "size before
// relaxing", LONG and PROVIDE lines, the cross reference table, and CRLF.
func TestParseMapZephyrExcerpt(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(armtest.ExtrasSrc, "zephyr-excerpt.map"))
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{string(raw), strings.ReplaceAll(string(raw), "\n", "\r\n")} {
		m, err := Parse(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			addr              uint32
			name, lib, output string
		}{
			{0x60002000, ".exc_vector_table._vector_table_section", "libarch__arm__core__cortex_m.a", "rom_start"},
			{0x60002404, ".text.main", "libapp.a", "text"},
			{0x60002408, ".text.z_impl_k_sem_give", "libkernel.a", "text"},
			{0x6000247c + 0x11f, ".text.net_ipv4_input", "libsubsys__net__ip.a", "text"},
			{0x600025a0, ".text", "libc.a", "text"},
			{0x600025e8, ".text.__stub", "linker stubs", "text"},
			{0x00000000, ".text.hot_loop", "libapp.a", ".itcm_text_reloc"},
			{0x0000003c, ".itcm_text.__stub", "linker stubs", ".itcm_text_reloc"},
		} {
			s := m.SectionAt(tc.addr)
			if s == nil || s.Name != tc.name || m.Library(tc.addr) != tc.lib || s.Output != tc.output {
				t.Errorf("SectionAt(%#x) = %+v, Library %q; want %s in %s from %s", tc.addr, s, m.Library(tc.addr), tc.name, tc.output, tc.lib)
			}
		}
		for _, addr := range []uint32{0x60002040, 0x600025f0, 0x40, 0x5fffffff} {
			if s := m.SectionAt(addr); s != nil {
				t.Errorf("SectionAt(%#x) = %+v in fill or outside, want nil", addr, s)
			}
		}
		if s := m.SectionAt(0x60002408); !reflect.DeepEqual(s.Symbols, []Symbol{{"z_impl_k_sem_give", 0x60002408}}) {
			t.Errorf("symbols of %s: %+v", s.Name, s.Symbols)
		}
		if s := m.SectionAt(0); s.Size != 0x3c || !reflect.DeepEqual(s.Symbols, []Symbol{{"hot_loop", 0}}) {
			t.Errorf("hot_loop section: %+v", s)
		}
		var itcm OutputSection
		for _, o := range m.Outputs {
			if o.Name == ".itcm_text_reloc" {
				itcm = o
			}
		}
		if itcm != (OutputSection{Name: ".itcm_text_reloc", Addr: 0, Size: 0x40, LoadAddr: 0x60004400, Alloc: true}) {
			t.Errorf(".itcm_text_reloc = %+v", itcm)
		}
		if len(m.Discarded) != 2 || m.Discarded[1].Name != ".text.z_impl_k_sem_reset" || m.Discarded[1].Member != "sem.c.obj" {
			t.Errorf("Discarded = %+v", m.Discarded)
		}
		if len(m.Memory) != 5 || m.Memory[4] != (MemoryRegion{"IDT_LIST", 0xfffff7ff, 0x800, "wx"}) {
			t.Errorf("Memory = %+v", m.Memory)
		}
	}
}

func TestParseMapErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
		line             int
	}{
		{"empty", "", "not a GNU ld map file", 0},
		{"not a map", "hello\nworld\n", "not a GNU ld map file", 0},
		{"64-bit address", "Linker script and memory map\n\n.text 0x100000000 0x10\n", "line 3: 0x100000000 does not fit in 32 bits", 3},
		{"bad memory", "Memory Configuration\n\nName Origin Length\nFLASH 0xZZ 0x10\n", "line 4: bad hex number", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if se, ok := err.(*SyntaxError); !ok || se.Line != tc.line {
				t.Errorf("error %#v, want a SyntaxError at line %d", err, tc.line)
			}
		})
	}
}

func FuzzParseMap(f *testing.F) {
	for _, p := range []string{filepath.Join(armtest.ExtrasSrc, "zephyr-excerpt.map"), armtest.BuildExtras(f).Map} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("Linker script and memory map\n .text.x\n")
	f.Fuzz(func(t *testing.T, text string) {
		m, err := Parse(strings.NewReader(text))
		if err != nil {
			return
		}
		for _, s := range m.Sections {
			if got := m.SectionAt(s.Addr); s.Size > 0 && (got == nil || !got.Contains(s.Addr)) {
				t.Fatalf("SectionAt(%#x) = %+v, want a section holding it", s.Addr, got)
			}
			m.Library(s.Addr + s.Size)
		}
	})
}

// A map is checked against the ELF it is read with: extras.map is the map
// of extras.elf, not of pure.elf (the same sources built with -mpure-code,
// so every section moved or grew).
func TestMapCheckImage(t *testing.T) {
	e := armtest.BuildExtras(t)
	m := parseMapFile(t, e.Map)
	for _, tc := range []struct {
		elf, want string
	}{
		{e.ELF, ""},
		{e.NoID, "section .text is"}, // the same link without the build-id note before .text
		{e.Pure, "in the map but"},
	} {
		im, err := image.Open(tc.elf)
		if err != nil {
			t.Fatal(err)
		}
		err = m.CheckImage(im)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: CheckImage = %v, want %q", filepath.Base(tc.elf), err, tc.want)
		}
		if me, ok := err.(*MismatchError); tc.want != "" && (!ok || me.Section == "" || me.MapAddr == me.ELFAddr && me.MapSize == me.ELFSize) {
			t.Errorf("%s: CheckImage = %#v, want a MismatchError naming a section that differs", filepath.Base(tc.elf), err)
		}
	}
}
