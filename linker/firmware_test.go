// SPDX-License-Identifier: Apache-2.0

package linker

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/internal/armtest"
	"github.com/tcmprof/tcmprof/place"
)

// This file builds the test firmware in testdata/proj with the real
// arm-none-eabi toolchain and reads back the facts the elf package will
// provide in production (functions with their input sections, call edges
// from relocations, veneers, ITCM use), so the renderings and verify are
// checked against what GNU ld actually does.

const (
	rArmThmCall   = 10 // R_ARM_THM_CALL: BL
	rArmThmJump24 = 30 // R_ARM_THM_JUMP24: B.W (tail call)
)

// object is one compiled object as the linker sees it.
type object struct {
	source  string // absolute source path
	path    string // object path relative to the link directory
	archive string // archive path relative to the link directory, or ""
	// plainText compiles without -ffunction-sections (all code in .text).
	plainText bool
}

// firmware is a built test project.
type firmware struct {
	dir     string // link directory
	objects []object
	// absolute links the objects and the archive by absolute path, as
	// build systems that pass $(CURDIR)/... do; the map then names them so.
	absolute bool
}

// file is how the link command, and so the map, names path (relative to
// the link directory).
func (fw *firmware) file(path string) string {
	if fw.absolute && path != "" {
		return filepath.Join(fw.dir, path)
	}
	return path
}

// copyTo copies the built project, objects and archive with their times,
// to a new directory and returns it there: the same build relinked
// elsewhere.
func (fw *firmware) copyTo(t *testing.T) *firmware {
	t.Helper()
	dir := t.TempDir()
	armtest.Copy(t, fw.dir, dir)
	return &firmware{dir: dir, objects: fw.objects, absolute: fw.absolute}
}

// projObjects are testdata/proj's objects: lib/util.c goes into
// lib/libutil.a, and lib/mix.c, without -ffunction-sections, into
// lib/libmix.a.
var projObjects = []object{
	{source: "main.c", path: "obj/main.o"},
	{source: "itcm.c", path: "obj/itcm.o"},
	{source: "net/ip.c", path: "obj/net/ip.o"},
	{source: "drv/ip.c", path: "obj/drv/ip.o"},
	{source: "lib/util.c", path: "util.o", archive: "lib/libutil.a"},
	{source: "lib/mix.c", path: "mix.o", archive: "lib/libmix.a", plainText: true},
}

// projBuild compiles testdata/proj's objects and archives, and copies its
// linker script beside them, once, cached in $TMPDIR (armtest.Build).
var projBuild = &armtest.Build{
	Prefix: "tcmprof-linker-proj",
	Src:    "testdata/proj",
	Recipe: []string{"firmware_test.go"},
	Tools:  []string{"arm-none-eabi-ar"},
	Make: func(src, out string) error {
		for _, o := range projObjects {
			if err := os.MkdirAll(filepath.Join(out, filepath.Dir(o.path)), 0o755); err != nil {
				return err
			}
			sections := "-ffunction-sections"
			if o.plainText {
				sections = "-fno-function-sections"
			}
			if err := armtest.Run(out, "arm-none-eabi-gcc", "-mcpu=cortex-m7", "-mthumb", "-O2", "-g", sections,
				"-fno-inline", "-c", filepath.Join(src, o.source), "-o", o.path); err != nil {
				return err
			}
			if o.archive != "" {
				if err := os.MkdirAll(filepath.Join(out, filepath.Dir(o.archive)), 0o755); err != nil {
					return err
				}
				if err := armtest.Run(out, "arm-none-eabi-ar", "rcs", o.archive, o.path); err != nil {
					return err
				}
			}
		}
		return armtest.Run(out, "cp", filepath.Join(src, "link.ld"), "link.ld")
	},
}

// buildFirmware returns testdata/proj built (projBuild) in a link
// directory of the test's own, where it links.
func buildFirmware(t *testing.T) *firmware {
	t.Helper()
	src, err := filepath.Abs(projBuild.Src)
	if err != nil {
		t.Fatal(err)
	}
	built := &firmware{dir: projBuild.Dir(t)}
	for _, o := range projObjects {
		o.source = filepath.Join(src, o.source)
		built.objects = append(built.objects, o)
	}
	return built.copyTo(t)
}

// link writes fragment as plan.ld, links, and returns the ELF path.
func (fw *firmware) link(t *testing.T, name, fragment string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(fw.dir, "plan.ld"), []byte(fragment), 0o644); err != nil {
		t.Fatal(err)
	}
	out := name + ".elf"
	args := []string{"-mcpu=cortex-m7", "-mthumb", "-nostdlib", "-T", "link.ld", "-Wl,-Map=" + name + ".map", "-o", out}
	var archives []string
	for _, o := range fw.objects {
		switch {
		case o.archive == "":
			args = append(args, fw.file(o.path))
		case !slices.Contains(archives, o.archive):
			archives = append(archives, o.archive)
		}
	}
	for _, a := range archives {
		args = append(args, fw.file(a))
	}
	armtest.MustRun(t, fw.dir, "arm-none-eabi-gcc", args...)
	return filepath.Join(fw.dir, out)
}

// objFunc is a function as its object file describes it.
type objFunc struct {
	obj     object
	symbol  string
	global  bool
	section string
	size    uint32
	align   uint32
	calls   []string // callee symbols ("local:" prefix for statics of this object)
}

func readObject(t *testing.T, dir string, o object) []objFunc {
	t.Helper()
	f, err := elf.Open(filepath.Join(dir, o.path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	bySection := make(map[int]*objFunc)
	var funcs []*objFunc
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Section >= elf.SHN_LORESERVE {
			continue
		}
		sec := f.Sections[s.Section]
		of := &objFunc{obj: o, symbol: s.Name, global: elf.ST_BIND(s.Info) != elf.STB_LOCAL,
			section: sec.Name, size: uint32(sec.Size), align: uint32(sec.Addralign)}
		bySection[int(s.Section)] = of
		funcs = append(funcs, of)
	}
	for _, rel := range f.Sections {
		if rel.Type != elf.SHT_REL {
			continue
		}
		caller := bySection[int(rel.Info)]
		if caller == nil {
			continue
		}
		data, err := rel.Data()
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off+8 <= len(data); off += 8 {
			info := binary.LittleEndian.Uint32(data[off+4:])
			if typ := info & 0xff; typ != rArmThmCall && typ != rArmThmJump24 {
				continue
			}
			s := syms[info>>8-1] // debug/elf drops the null symbol
			switch {
			case elf.ST_TYPE(s.Info) == elf.STT_SECTION:
				if callee := bySection[int(s.Section)]; callee != nil {
					caller.calls = append(caller.calls, "local:"+callee.symbol)
				}
			case elf.ST_BIND(s.Info) == elf.STB_LOCAL:
				caller.calls = append(caller.calls, "local:"+s.Name)
			default:
				caller.calls = append(caller.calls, s.Name)
			}
		}
	}
	out := make([]objFunc, len(funcs))
	for i, of := range funcs {
		out[i] = *of
	}
	return out
}

// image is what a linked ELF tells the planner and verify.
type image struct {
	funcs    []place.Func
	edges    []place.Edge
	veneers  int
	itcmUsed uint32
}

const itcmSize = 128 << 10

// readImage joins the objects' function facts with the linked addresses.
// Local symbols are matched through the STT_FILE symbol that precedes them.
func readImage(t *testing.T, fw *firmware, elfPath string) *image {
	t.Helper()
	f, err := elf.Open(elfPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	img := &image{}
	// Locals are keyed "file#n:sym", n counting earlier STT_FILE symbols of
	// the same name (two ip.c objects); globals by name.
	addrOf := make(map[string]uint32)
	fileSeen := make(map[string]int)
	file := ""
	for _, s := range syms {
		switch {
		case elf.ST_TYPE(s.Info) == elf.STT_FILE:
			file = fmt.Sprintf("%s#%d", s.Name, fileSeen[s.Name])
			fileSeen[s.Name]++
		case elf.ST_TYPE(s.Info) != elf.STT_FUNC:
		case strings.HasPrefix(s.Name, "__") && strings.HasSuffix(s.Name, "_veneer"):
			img.veneers++
		case elf.ST_BIND(s.Info) == elf.STB_LOCAL:
			addrOf[file+":"+s.Name] = uint32(s.Value) &^ 1
		default:
			addrOf[s.Name] = uint32(s.Value) &^ 1
		}
	}
	for _, sec := range f.Sections {
		if sec.Flags&elf.SHF_ALLOC != 0 && sec.Addr < itcmSize && sec.Size > 0 {
			img.itcmUsed = max(img.itcmUsed, uint32(sec.Addr+sec.Size))
		}
	}
	occurrence := make(map[string]int) // object path -> n, in link order
	sameName := make(map[string]int)
	for _, o := range fw.objects {
		b := filepath.Base(o.source)
		occurrence[o.path] = sameName[b]
		sameName[b]++
	}
	key := func(of objFunc, sym string) string {
		if strings.HasPrefix(sym, "local:") {
			return fmt.Sprintf("%s#%d:%s", filepath.Base(of.obj.source), occurrence[of.obj.path], strings.TrimPrefix(sym, "local:"))
		}
		return sym
	}
	var all []objFunc
	for _, o := range fw.objects {
		all = append(all, readObject(t, fw.dir, o)...)
	}
	for _, of := range all {
		k := of.symbol
		if !of.global {
			k = "local:" + k
		}
		addr, ok := addrOf[key(of, k)]
		if !ok {
			t.Fatalf("%s of %s not in the linked image", of.symbol, of.obj.path)
		}
		object := of.obj.path // an archive member's name
		if of.obj.archive == "" {
			object = fw.file(of.obj.path)
		}
		region := "FLASH"
		if addr < itcmSize {
			region = "ITCM"
		}
		img.funcs = append(img.funcs, place.Func{
			Key: place.KeyFor(of.obj.source, of.symbol), Symbol: of.symbol, Section: of.section,
			Object: object, Archive: fw.file(of.obj.archive), Addr: addr, Size: of.size, Align: of.align, Region: region,
		})
		for _, c := range of.calls {
			to, ok := addrOf[key(of, c)]
			if !ok {
				t.Fatalf("call from %s to unknown %s", of.symbol, c)
			}
			img.edges = append(img.edges, place.Edge{Caller: addr, Callee: to})
		}
	}
	return img
}

// inITCM lists the functions in ITCM as "source-suffix:symbol".
func (img *image) inITCM() map[string]bool {
	out := make(map[string]bool)
	for _, f := range img.funcs {
		if f.Addr < itcmSize {
			out[shortName(f.Key.Source, f.Symbol)] = true
		}
	}
	return out
}

func shortName(source, symbol string) string {
	dir := filepath.Base(filepath.Dir(source))
	return fmt.Sprintf("%s/%s:%s", dir, filepath.Base(source), symbol)
}
