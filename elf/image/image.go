// SPDX-License-Identifier: Apache-2.0

// Package image reads Cortex-M firmware ELFs: the image (Load, Bytes), its
// functions from the symbol table, named as DWARF names them, the inline
// chain and file:line of a PC (Symbolize), and the build-id. Load reads
// the symbol table and indexes the DWARF by compile unit (dwarfline); a
// unit is decoded the first time an address falls in it, so one address
// costs one unit and millions of samples cost little. It is elf/image, not
// elf, so that it and the standard library's debug/elf keep their names
// side by side.
//
// Its siblings under elf/ read the rest of what a build gives:
// elf/dwarfline the DWARF lines and inline trees, elf/thumb the Thumb-2
// code (instructions, call sites, the call graph), elf/unwind call stacks
// through .debug_frame, elf/mapfile GNU ld's map file, elf/board the
// target's memory map (built in, or from Zephyr's devicetree), and
// elf/symname GCC's clone suffixes.
package image

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/tcmprof/tcmprof/elf/dwarfline"
)

// Image is a loaded firmware ELF. It is safe for concurrent use: what it
// decodes on demand (DWARF units, the names of functions) is decoded once.
type Image struct {
	path string
	data []byte // the whole file; sections and Bytes slice into it
	file *elf.File

	warnMu   sync.Mutex
	warnings []string

	loaded []loadedSection // SHF_ALLOC PROGBITS sections sorted by Addr

	// funcs are sorted by Addr; each one's names and source, which DWARF
	// decides, are filled in by finishFunction before it is handed out.
	funcs     []*Function
	funcSyms  [][]funcSymbol   // the symbols at each function's address
	funcNames []dwarfline.Name // frame names of funcs, for addresses DWARF does not cover
	funcDone  []sync.Once
	allFuncs  sync.Once // every function finished, for Functions

	dwarf *dwarfline.Index // nil without usable DWARF
}

// loadedSection is the file content of one section that occupies target
// memory, for Bytes.
type loadedSection struct {
	addr uint32
	data []byte
}

// Open reads the ELF at path (on Unix, maps it: see readFile) and loads it.
func Open(path string) (*Image, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return Load(data, path)
}

// Load parses data, the contents of a 32-bit little-endian ARM ELF named
// name (used in messages and returned by Path). The Image keeps data: the
// caller must not modify it afterwards. Bad input of any kind yields an
// error, never a panic.
func Load(data []byte, name string) (im *Image, err error) {
	// debug/elf and debug/dwarf return errors for the malformations they
	// know; the recover turns anything they miss on hostile input into the
	// same one-line error rather than a crash of the whole tool.
	defer func() {
		if r := recover(); r != nil {
			im, err = nil, &FormatError{Path: name, Msg: fmt.Sprintf("malformed ELF (%v)", r)}
		}
	}()
	if msg := checkHeader(data); msg != "" {
		return nil, &FormatError{Path: name, Msg: msg}
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, &FormatError{Path: name, Err: err}
	}
	im = &Image{path: name, data: data, file: f}
	if msg := im.loadSections(); msg != "" {
		return nil, &FormatError{Path: name, Msg: msg}
	}
	syms, err := f.Symbols()
	if err != nil {
		if errors.Is(err, elf.ErrNoSymbols) {
			return nil, &FormatError{Path: name, Msg: "no symbol table (stripped ELF?); use the unstripped ELF from the build"}
		}
		return nil, &FormatError{Path: name, Msg: "reading the symbol table", Err: err}
	}
	raw := collectFuncSymbols(f, syms)
	im.dwarf = dwarfline.New(f, data, raw.dwarfSymbols(), im.warn)
	im.buildFunctions(raw)
	return im, nil
}

// checkHeader says why tcmprof cannot use data, "" if it can, with a
// precise reason, before debug/elf gives a less specific one.
func checkHeader(data []byte) string {
	if len(data) < 4 || !bytes.Equal(data[:4], []byte(elf.ELFMAG)) {
		return "not an ELF file (bad magic)"
	}
	if len(data) < 52 {
		return fmt.Sprintf("truncated: %d bytes is shorter than an ELF header", len(data))
	}
	switch elf.Class(data[elf.EI_CLASS]) {
	case elf.ELFCLASS32:
	case elf.ELFCLASS64:
		return "64-bit ELF; tcmprof reads 32-bit ARM (Cortex-M) firmware only"
	default:
		return fmt.Sprintf("unknown ELF class %d", data[elf.EI_CLASS])
	}
	switch elf.Data(data[elf.EI_DATA]) {
	case elf.ELFDATA2LSB:
	case elf.ELFDATA2MSB:
		return "big-endian ELF; Cortex-M firmware is little-endian"
	default:
		return fmt.Sprintf("unknown ELF data encoding %d", data[elf.EI_DATA])
	}
	if m := elf.Machine(binary.LittleEndian.Uint16(data[18:])); m != elf.EM_ARM {
		return fmt.Sprintf("ELF is for %v, not ARM", m)
	}
	// GNU ld puts the section headers last: a cut file loses them first.
	for _, t := range []struct {
		what           string
		off, num, size int // offsets of e_*off, e_*num, e_*entsize
	}{{"program headers", 28, 44, 42}, {"section headers", 32, 48, 46}} {
		end := uint64(binary.LittleEndian.Uint32(data[t.off:])) +
			uint64(binary.LittleEndian.Uint16(data[t.num:]))*uint64(binary.LittleEndian.Uint16(data[t.size:]))
		if end > uint64(len(data)) {
			return fmt.Sprintf("truncated: %s need bytes up to %d but the file has %d", t.what, end, len(data))
		}
	}
	return ""
}

// loadSections checks that every section's contents lie within the file,
// so that a truncated ELF is reported as such (what it returns, "" if
// none is), and indexes the sections that hold target memory.
func (im *Image) loadSections() string {
	for _, s := range im.file.Sections {
		if s.Type == elf.SHT_NOBITS || s.Type == elf.SHT_NULL {
			continue
		}
		if s.Offset > uint64(len(im.data)) || s.FileSize > uint64(len(im.data))-s.Offset {
			return fmt.Sprintf("truncated: section %s needs bytes up to %d but the file has %d",
				s.Name, s.Offset+s.FileSize, len(im.data))
		}
		if s.Type == elf.SHT_PROGBITS && s.Flags&elf.SHF_ALLOC != 0 && s.Flags&elf.SHF_COMPRESSED == 0 && s.Size > 0 {
			im.loaded = append(im.loaded, loadedSection{
				addr: uint32(s.Addr),
				data: im.data[s.Offset : s.Offset+s.FileSize : s.Offset+s.FileSize],
			})
		}
	}
	sort.SliceStable(im.loaded, func(i, j int) bool { return im.loaded[i].addr < im.loaded[j].addr })
	return ""
}

// Path returns the name the Image was loaded from.
func (im *Image) Path() string { return im.path }

// Warnings returns what could not be used but was worked around, e.g. an
// ELF without DWARF, which is symbolized from the symbol table only. DWARF
// is decoded per compile unit on first use, so a problem inside a unit
// shows up here once an address in it has been looked up: read Warnings
// after the lookups.
func (im *Image) Warnings() []string {
	im.warnMu.Lock()
	defer im.warnMu.Unlock()
	return slices.Clone(im.warnings)
}

func (im *Image) warn(msg string) {
	im.warnMu.Lock()
	defer im.warnMu.Unlock()
	im.warnings = append(im.warnings, msg)
}

// File returns the parsed ELF, for readers of other sections (CFI, calls).
func (im *Image) File() *elf.File { return im.file }

// Bytes returns the n bytes at target address addr as the ELF holds them
// (from a loaded PROGBITS section; for code copied to RAM at boot that is its
// run address, since sections carry their VMA). ok is false if the range is
// not wholly inside one such section. The slice aliases the Image: do not
// modify it.
func (im *Image) Bytes(addr, n uint32) (b []byte, ok bool) {
	i := sort.Search(len(im.loaded), func(i int) bool { return im.loaded[i].addr > addr }) - 1
	for ; i >= 0; i-- { // sections may overlap (e.g. several at 0); try each below addr
		s := im.loaded[i]
		off := uint64(addr) - uint64(s.addr)
		if off+uint64(n) <= uint64(len(s.data)) {
			return s.data[off : off+uint64(n)], true
		}
	}
	return nil, false
}
