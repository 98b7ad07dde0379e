// SPDX-License-Identifier: Apache-2.0

package image

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/elf/dwarfline"
	"github.com/tcmprof/tcmprof/internal/armtest"

	"github.com/ianlancetaylor/demangle"
)

type elfSymbol struct {
	addr, size uint32
	typ, bind  string
	name       string
}

// readelfSymbols lists the symbol table as binutils sees it.
func readelfSymbols(t *testing.T, path string) []elfSymbol {
	t.Helper()
	out, err := exec.Command("arm-none-eabi-readelf", "-sW", path).Output()
	if err != nil {
		t.Fatalf("readelf: %v", err)
	}
	var syms []elfSymbol
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 8 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		addr, err1 := strconv.ParseUint(f[1], 16, 32)
		size, err2 := strconv.ParseUint(f[2], 0, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		syms = append(syms, elfSymbol{uint32(addr), uint32(size), f[3], f[4], f[7]})
	}
	return syms
}

// TestFunctionsMatchReadelf checks every FUNC symbol readelf lists against
// Functions: present (as Name or alias), Thumb bit cleared, same size.
func TestFunctionsMatchReadelf(t *testing.T) {
	armtest.NeedTools(t, "arm-none-eabi-readelf")
	for _, v := range armtest.SymbolizeVariants {
		t.Run(v, func(t *testing.T) {
			im, path := symOpenVariant(t, v)
			byName := map[string]*Function{}
			for i, fn := range im.Functions() {
				if i > 0 && im.Functions()[i-1].Addr >= fn.Addr {
					t.Errorf("Functions not sorted at %s", fn.Name)
				}
				for _, n := range append([]string{fn.Name}, fn.Aliases...) {
					byName[n+"@"+strconv.FormatUint(uint64(fn.Addr), 16)] = fn
				}
			}
			n := 0
			for _, s := range readelfSymbols(t, path) {
				if s.typ != "FUNC" {
					continue
				}
				n++
				addr := s.addr &^ 1
				fn := byName[s.name+"@"+strconv.FormatUint(uint64(addr), 16)]
				if fn == nil {
					t.Errorf("FUNC %s at 0x%x missing", s.name, s.addr)
					continue
				}
				if fn.Size < s.size || (s.size > 0 && fn.Size != s.size && len(fn.Aliases) == 0) {
					t.Errorf("%s: size %d, readelf %d", s.name, fn.Size, s.size)
				}
				if fn.Local != (s.bind == "LOCAL") && len(fn.Aliases) == 0 {
					t.Errorf("%s: Local=%v, readelf %s", s.name, fn.Local, s.bind)
				}
				if got := im.FunctionAt(addr | 1); got != fn {
					t.Errorf("FunctionAt(0x%x) = %v, want %s", addr|1, got, fn.Name)
				}
			}
			if n < 50 {
				t.Errorf("readelf listed only %d FUNC symbols", n)
			}
		})
	}
}

func functionsNamed(im *Image, name string) []*Function {
	var fns []*Function
	for _, fn := range im.Functions() {
		if fn.Name == name {
			fns = append(fns, fn)
		}
	}
	return fns
}

func oneFunction(t *testing.T, im *Image, name string) *Function {
	t.Helper()
	fns := functionsNamed(im, name)
	if len(fns) != 1 {
		t.Fatalf("%d functions named %s", len(fns), name)
	}
	return fns[0]
}

// TestFunctionDetails checks what the O2 build is known to contain:
// clones, same-name statics in two files, veneers both ways, aliases, and
// the lambda template GCC gives no linkage name.
func TestFunctionDetails(t *testing.T) {
	im, path := symOpenVariant(t, "O2-dwarf5")
	dir, _ := filepath.Abs(armtest.SymbolizeSrc)

	t.Run("clones", func(t *testing.T) {
		for _, tc := range []struct{ name, base, clone, display string }{
			{"hash_buf.constprop.0", "hash_buf", ".constprop.0", "hash_buf [clone .constprop.0]"},
			{"scaled.isra.0", "scaled", ".isra.0", "scaled [clone .isra.0]"},
			{"__sinit.part.0", "__sinit", ".part.0", "__sinit [clone .part.0]"},
		} {
			fn := oneFunction(t, im, tc.name)
			if fn.Base != tc.base || fn.Clone != tc.clone || fn.Display != tc.display || !fn.Local {
				t.Errorf("%s: %+v", tc.name, fn)
			}
			frames := im.Symbolize(fn.Addr)
			if outer := frames[len(frames)-1]; outer.Function != tc.base {
				t.Errorf("%s: outermost frame %q, want the DWARF name %q", tc.name, outer.Function, tc.base)
			}
		}
	})

	t.Run("same-name statics", func(t *testing.T) {
		helpers := functionsNamed(im, "helper")
		if len(helpers) != 2 {
			t.Fatalf("%d functions named helper, want one per file", len(helpers))
		}
		got := map[string]bool{}
		for _, fn := range helpers {
			got[fn.Source] = true
			if !fn.Local || fn.Display != "helper" {
				t.Errorf("%+v", fn)
			}
			if f := im.Symbolize(fn.Addr); f[len(f)-1].File != fn.Source {
				t.Errorf("helper at 0x%x is in %s by its line, %s by its CU", fn.Addr, f[len(f)-1].File, fn.Source)
			}
		}
		if !got[dir+"/main.c"] || !got[dir+"/other.c"] {
			t.Errorf("helper sources %v, want main.c and other.c", got)
		}
	})

	t.Run("veneers", func(t *testing.T) {
		n := 0
		for _, fn := range im.Functions() {
			if !isVeneerName(fn.Name) {
				continue
			}
			n++
			if !fn.Veneer || fn.Size != 8 || fn.Source != "" {
				t.Errorf("%+v: want a veneer of 8 bytes (ldr.w pc, [pc] + address) from no source file", fn)
			}
			for a := fn.Addr; a < fn.Addr+fn.Size; a += 2 {
				if f := im.Symbolize(a); len(f) != 1 || f[0].Function != fn.Name || f[0].File != "" {
					t.Errorf("0x%x in %s: %+v", a, fn.Name, f)
				}
			}
			if im.FunctionAt(fn.Addr+fn.Size) == fn {
				t.Errorf("%s extends past its 8 bytes", fn.Name)
			}
		}
		// Flash → ITCM (itcm_entry) and ITCM → flash (flash_leaf, helper).
		if n < 2 {
			t.Errorf("%d veneers, want both directions", n)
		}
		if fn := oneFunction(t, im, "__itcm_entry_veneer"); fn.Addr < 0x60000000 {
			t.Errorf("the veneer to ITCM should be in flash: %+v", fn)
		}
	})

	t.Run("aliases", func(t *testing.T) {
		var fn *Function
		for _, f := range im.Functions() {
			if f.Name == "_ZN3net2ip3EthD2Ev" || f.Name == "_ZN3net2ip3EthD1Ev" {
				fn = f
			}
		}
		if fn == nil || len(fn.Aliases) != 1 {
			t.Fatalf("Eth's complete and base destructors should be one function with an alias: %+v", fn)
		}
		if fn.Display != "net::ip::Eth::~Eth()" {
			t.Errorf("Display %q", fn.Display)
		}
		f := im.Symbolize(fn.Addr)
		if f[len(f)-1].Mangled != fn.Name {
			t.Errorf("primary %s is not the DWARF linkage name %s", fn.Name, f[len(f)-1].Mangled)
		}
	})

	t.Run("lambda template without linkage name", func(t *testing.T) {
		armtest.NeedTools(t, "llvm-symbolizer")
		fn := oneFunction(t, im, "_ZN3dsp5applyIZ9cpp_entryEUlmE_EEmT_m")
		frames := im.Symbolize(fn.Addr)
		outer := frames[len(frames)-1]
		want := demangle.Filter(fn.Base)
		if outer.Mangled != fn.Base || outer.Function != want || !strings.Contains(want, "{lambda(unsigned long)#1}") {
			t.Errorf("frame %+v, want the ELF symbol %s = %s", outer, fn.Base, want)
		}
		// Why the fallback: DWARF's own name for it is not qualified, and
		// this is what llvm-symbolizer shows when it does not override
		// from the symbol table.
		short := symLLVM(t, path, []uint32{fn.Addr}, "--functions=short")[0]
		if n := short[len(short)-1].FunctionName; !strings.HasPrefix(n, "apply<cpp_entry(uint32_t)::<lambda(") {
			t.Errorf("llvm's DWARF name %q", n)
		}
	})
}

// TestSizelessVeneers rewrites the veneer symbols of the O2 build as other
// linkers (and older GNU ld) emit them, NOTYPE with size 0 and no Thumb
// bit, and checks they keep their real 8-byte extent: samples in a veneer
// must be charged to it, not to the function before it.
func TestSizelessVeneers(t *testing.T) {
	im0, path := symOpenVariant(t, "O2-dwarf5")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := im0.File()
	symtab, strtab := f.Section(".symtab"), f.Section(".strtab")
	strs, _ := strtab.Data()
	patched := 0
	for off := symtab.Offset + 16; off+16 <= symtab.Offset+symtab.Size; off += 16 {
		ent := data[off : off+16]
		nameOff := binary.LittleEndian.Uint32(ent)
		name := string(strs[nameOff : nameOff+uint32(strings.IndexByte(string(strs[nameOff:]), 0))])
		if !strings.HasSuffix(name, "_veneer") {
			continue
		}
		binary.LittleEndian.PutUint32(ent[4:], binary.LittleEndian.Uint32(ent[4:])&^1) // st_value
		binary.LittleEndian.PutUint32(ent[8:], 0)                                      // st_size
		ent[12] = ent[12]&0xf0 | byte(elf.STT_NOTYPE)                                  // st_info
		patched++
	}
	if patched < 2 {
		t.Fatalf("patched %d veneer symbols", patched)
	}
	im, err := Load(data, "sizeless.elf")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, want := range im0.Functions() {
		if !want.Veneer {
			continue
		}
		n++
		got := im.FunctionAt(want.Addr)
		if got == nil || got.Name != want.Name || !got.Veneer || got.Addr != want.Addr || got.Size != want.Size {
			t.Errorf("%s: got %+v, want %+v", want.Name, got, want)
		}
		if f := im.Symbolize(want.Addr + want.Size - 2); len(f) != 1 || f[0].Function != want.Name {
			t.Errorf("last halfword of %s: %+v", want.Name, f)
		}
	}
	if n != patched {
		t.Errorf("%d veneers, patched %d symbols", n, patched)
	}
}

// TestCompressedDebugSections checks that an ELF whose DWARF sections are
// zlib-compressed, as SHF_COMPRESSED sections or in the older .zdebug_*
// form, symbolizes every instruction exactly as the original.
func TestCompressedDebugSections(t *testing.T) {
	armtest.NeedTools(t, "arm-none-eabi-objcopy")
	armtest.NeedTools(t, "arm-none-eabi-objdump")
	for _, v := range []string{"O0-dwarf4", "O2-dwarf5"} {
		for _, format := range []string{"zlib", "zlib-gnu"} {
			im, path := symOpenVariant(t, v)
			zpath := filepath.Join(t.TempDir(), v+"."+format+".elf")
			armtest.MustRun(t, ".", "arm-none-eabi-objcopy", "--compress-debug-sections="+format, path, zpath)
			zim, err := Open(zpath)
			if err != nil {
				t.Fatal(err)
			}
			if s := zim.File().Section(".debug_line"); format == "zlib" && (s == nil || s.Flags&elf.SHF_COMPRESSED == 0) {
				t.Fatal("objcopy left .debug_line uncompressed")
			}
			if format == "zlib-gnu" && zim.File().Section(".zdebug_line") == nil {
				t.Fatal("objcopy made no .zdebug_line")
			}
			for _, a := range armtest.InstructionAddrs(t, path) {
				if got, want := zim.Symbolize(a), im.Symbolize(a); !slices.Equal(got, want) {
					t.Fatalf("%s %s 0x%x: compressed %+v, original %+v", v, format, a, got, want)
				}
			}
		}
	}
}

// TestNoDWARF strips the debug info: functions still come from the symbol
// table, with a warning and frames without lines.
func TestNoDWARF(t *testing.T) {
	armtest.NeedTools(t, "arm-none-eabi-objcopy")
	_, path := symOpenVariant(t, "O2-dwarf5")
	stripped := filepath.Join(t.TempDir(), "nodebug.elf")
	armtest.MustRun(t, ".", "arm-none-eabi-objcopy", "--strip-debug", path, stripped)
	im, err := Open(stripped)
	if err != nil {
		t.Fatal(err)
	}
	if w := im.Warnings(); len(w) != 1 || !strings.Contains(w[0], "no DWARF") {
		t.Errorf("warnings %q", w)
	}
	fn := oneFunction(t, im, "hash_buf.constprop.0")
	if f := im.Symbolize(fn.Addr + 4); len(f) != 1 || f[0] != (dwarfline.Frame{Function: "hash_buf", Short: "hash_buf"}) {
		t.Errorf("frames %+v", f)
	}
	fn = oneFunction(t, im, "_ZNK3net2ip5Iface6lookupEm")
	if f := im.Symbolize(fn.Addr); len(f) != 1 || f[0].Function != "net::ip::Iface::lookup(unsigned long) const" || f[0].Short != "net::ip::Iface::lookup" {
		t.Errorf("frames %+v", f)
	}
	if fn.Display != "net::ip::Iface::lookup(unsigned long) const" {
		t.Errorf("Display %q", fn.Display)
	}
}

// bigEndianBuild compiles testdata/bigendian for a big-endian ARM, once,
// cached in $TMPDIR (armtest.Build).
var bigEndianBuild = &armtest.Build{
	Prefix: "tcmprof-elf-bigendian",
	Src:    "testdata/bigendian",
	Make: func(src, out string) error {
		return armtest.Run(out, "arm-none-eabi-gcc", "-mbig-endian", "-c", filepath.Join(src, "f.c"), "-o", "be.o")
	},
}

func TestLoadErrors(t *testing.T) {
	_, path := symOpenVariant(t, "O2-dwarf5")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	patched := func(off int, b ...byte) []byte {
		d := append([]byte(nil), good...)
		copy(d[off:], b)
		return d
	}
	self, err := os.Executable() // the test binary: a 64-bit host ELF
	if err != nil {
		t.Fatal(err)
	}
	host, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	strippedPath := filepath.Join(tmp, "stripped.elf")
	armtest.MustRun(t, ".", "arm-none-eabi-strip", "-o", strippedPath, path)
	stripped, _ := os.ReadFile(strippedPath)
	bigEndian, err := os.ReadFile(filepath.Join(bigEndianBuild.Dir(t), "be.o"))
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "x.elf: not an ELF file (bad magic)"},
		{"text", []byte("hello, world\n"), "x.elf: not an ELF file (bad magic)"},
		{"64-bit", host, "x.elf: 64-bit ELF; tcmprof reads 32-bit ARM (Cortex-M) firmware only"},
		{"big-endian", bigEndian, "x.elf: big-endian ELF; Cortex-M firmware is little-endian"},
		{"not ARM", patched(18, byte(elf.EM_386), 0), "x.elf: ELF is for EM_386, not ARM"},
		{"stripped", stripped, "x.elf: no symbol table (stripped ELF?); use the unstripped ELF from the build"},
		{"header cut", good[:40], "x.elf: truncated: 40 bytes is shorter than an ELF header"},
		{"cut in half", good[:len(good)/2], fmt.Sprintf("x.elf: truncated: section headers need bytes up to %d but the file has %d", len(good), len(good)/2)},
		{"cut by one", good[:len(good)-1], fmt.Sprintf("x.elf: truncated: section headers need bytes up to %d but the file has %d", len(good), len(good)-1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im, err := Load(tc.data, "x.elf")
			if err == nil || im != nil {
				t.Fatalf("Load succeeded")
			}
			if err.Error() != tc.want {
				t.Errorf("error %q\n          want %q", err, tc.want)
			}
			if fe, ok := err.(*FormatError); !ok || fe.Path != "x.elf" {
				t.Errorf("error %#v, want a FormatError about x.elf", err)
			}
		})
	}

	// A section whose contents run past the end of the file (the section
	// headers intact) is also reported as truncation.
	shoff := binary.LittleEndian.Uint32(good[32:])
	shentsize := uint32(binary.LittleEndian.Uint16(good[46:]))
	sec1 := shoff + shentsize // section 1 (.text): sh_size is at +20
	d := patched(int(sec1+20), 0xff, 0xff, 0xff, 0x0f)
	if _, err := Load(d, "x.elf"); err == nil || !strings.Contains(err.Error(), "truncated: section .text needs bytes up to") {
		t.Errorf("oversized .text: %v", err)
	}
}

// FuzzLoad feeds Load arbitrary bytes: it must return an Image or an
// error, never panic, and a loaded Image must answer lookups.
func FuzzLoad(f *testing.F) {
	// The committed seeds (testdata/fuzz/FuzzLoad: tiny, an ELF from
	// internal/armtest/testdata/symbolize/tiny.c, and inputs that once
	// hung) run everywhere; where the toolchain is present, tiny.elf as
	// built now and its truncations are added. The big test ELFs are left
	// out: at 200 KB they slow the fuzzer's minimisation to a crawl.
	if _, err := exec.LookPath("arm-none-eabi-gcc"); err == nil {
		if data, err := os.ReadFile(filepath.Join(armtest.SymbolizeDir(f), "tiny.elf")); err == nil {
			f.Add(data)
			for _, n := range []int{52, 200, len(data) / 2, len(data) - 1} {
				f.Add(data[:n])
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		im, err := Load(data, "fuzz.elf")
		if err != nil {
			if _, ok := err.(*FormatError); !ok || im != nil || strings.Contains(err.Error(), "\n") {
				t.Fatalf("bad error %#v", err)
			}
			return
		}
		for _, fn := range im.Functions() {
			im.Symbolize(fn.Addr)
			if im.FunctionAt(fn.Addr) == nil && fn.Size > 0 {
				t.Fatalf("FunctionAt(%s) = nil", fn.Name)
			}
		}
		for _, a := range []uint32{0, 0x20, 0x60000000, 0xffffffff} {
			im.Symbolize(a)
			im.Bytes(a, 4)
		}
	})
}

// BenchmarkSymbolize measures lookups on the biggest test image, over
// every instruction address.
func BenchmarkSymbolize(b *testing.B) {
	armtest.NeedTools(b, "arm-none-eabi-objdump")
	im, path := symOpenVariant(b, "O2-dwarf5")
	addrs := armtest.InstructionAddrs(b, path)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		im.Symbolize(addrs[i%len(addrs)])
	}
}

// BenchmarkLoad measures Open + Load (the per-run cost before any lookup).
func BenchmarkLoad(b *testing.B) {
	_, path := symOpenVariant(b, "O2-dwarf5")
	for i := 0; i < b.N; i++ {
		if _, err := Open(path); err != nil {
			b.Fatal(err)
		}
	}
}
