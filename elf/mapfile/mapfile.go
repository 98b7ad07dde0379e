// SPDX-License-Identifier: Apache-2.0

// Package mapfile reads the map file GNU ld writes beside a firmware ELF:
// which archive member or object each address of the image came from
// (libraries for reports, object files for placement), and whether a map
// belongs to an image's link at all.
package mapfile

import (
	"bufio"
	"debug/elf"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/tcmprof/tcmprof/elf/image"
)

// Map is what tcmprof reads from a GNU ld map file (ld -Map, Zephyr's
// zephyr.map): memory regions, output sections, and each input section's
// address, size and originating archive member or object. It answers "which
// library does this address belong to" for reports and placement filters.
type Map struct {
	Memory  []MemoryRegion
	Outputs []OutputSection
	// Sections are the input sections placed in allocated output sections
	// (debug and other non-allocated sections excluded), sorted by Addr.
	Sections []*InputSection
	// Discarded are the input sections --gc-sections or /DISCARD/ removed.
	Discarded []*InputSection
}

// MemoryRegion is one row of the map's "Memory Configuration" table.
type MemoryRegion struct {
	Name           string
	Origin, Length uint32
	Attributes     string
}

// OutputSection is an output section header of the memory map.
type OutputSection struct {
	Name     string
	Addr     uint32
	Size     uint32
	LoadAddr uint32 // equals Addr unless the map says "load address"
	// Alloc is false for sections that occupy no target memory (.debug_*,
	// .comment, ...). Their addresses start at 0 and would otherwise collide
	// with ITCM code at 0x00000000.
	Alloc bool
}

// InputSection is one input section line: where the linker put a section
// of one object file.
type InputSection struct {
	Name       string
	Addr, Size uint32
	Archive    string // archive path as ld printed it, for archive members
	Member     string // object file inside Archive
	Object     string // object path for objects linked directly ("linker stubs" for ld's own veneers)
	Symbols    []Symbol
	Output     string // the output section it was placed in
}

// Symbol is a symbol line under an input section.
type Symbol struct {
	Name string
	Addr uint32
}

// File is "archive(member)" or the object, as ld prints it.
func (s *InputSection) File() string {
	if s.Archive != "" {
		return s.Archive + "(" + s.Member + ")"
	}
	return s.Object
}

// Contains reports whether addr lies in s.
func (s *InputSection) Contains(addr uint32) bool { return addr >= s.Addr && addr-s.Addr < s.Size }

// SectionAt returns the placed input section that holds addr, or nil.
func (m *Map) SectionAt(addr uint32) *InputSection {
	i := sort.Search(len(m.Sections), func(i int) bool { return m.Sections[i].Addr > addr })
	for i--; i >= 0 && m.Sections[i].Addr <= addr; i-- {
		if m.Sections[i].Contains(addr) {
			return m.Sections[i]
		}
		if m.Sections[i].Size > 0 {
			break // input sections do not nest: the nearest non-empty one decides
		}
	}
	return nil
}

// CheckImage reports whether m is the map of im's link: every allocated
// output section the two share by name must have the same address and
// size. A map of another build (the relinked image's, say) puts addresses
// in the wrong input sections, and libraries and plans made with it are
// quietly wrong. Output sections only the map lists are left alone: ld
// lists empty ones it does not emit.
func (m *Map) CheckImage(im *image.Image) error {
	inELF := make(map[string]*elf.Section)
	for _, s := range im.File().Sections {
		if s.Flags&elf.SHF_ALLOC != 0 && inELF[s.Name] == nil {
			inELF[s.Name] = s
		}
	}
	shared := 0
	for _, o := range m.Outputs {
		s := inELF[o.Name]
		if !o.Alloc || s == nil {
			continue
		}
		if uint64(o.Addr) != s.Addr || uint64(o.Size) != s.Size {
			return &MismatchError{Section: o.Name, MapAddr: uint64(o.Addr), MapSize: uint64(o.Size), ELFAddr: s.Addr, ELFSize: s.Size}
		}
		shared++
	}
	if shared == 0 {
		return &MismatchError{}
	}
	return nil
}

// Library names the code at addr for humans (see LibraryName). It is ""
// when no input section holds addr.
func (m *Map) Library(addr uint32) string {
	s := m.SectionAt(addr)
	if s == nil {
		return ""
	}
	return LibraryName(s.Archive, s.Object)
}

// LibraryName is the library label of an input section's file: the
// archive's base name (libkernel.a, libsubsys__net__ip.a) for an archive
// member, otherwise the object as ld printed it. Reports, ranks and
// profiles all label code with it.
func LibraryName(archive, object string) string {
	if archive != "" {
		return pathBase(archive)
	}
	return object
}

// pathBase is path.Base for maps written on Linux or Windows hosts.
func pathBase(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// nonAllocPrefixes name the output sections that hold no target memory. A
// map does not print section flags, so the names decide.
var nonAllocPrefixes = []string{
	".debug", ".zdebug", ".stab", ".comment", ".ARM.attributes", ".gnu.attributes",
	".gnu.build.attributes", ".line", ".note.GNU-stack", ".gnu_debuglink", ".gnu.lto_",
	".symtab", ".strtab", ".shstrtab",
}

func isAllocOutput(name string) bool {
	for _, p := range nonAllocPrefixes {
		if strings.HasPrefix(name, p) {
			return false
		}
	}
	return true
}

// map file blocks, each introduced by a fixed title line.
type mapBlock int

const (
	blockPreamble mapBlock = iota
	blockSkip              // archive members, common symbols: nothing tcmprof needs
	blockDiscarded
	blockMemory
	blockLayout
)

var mapTitles = map[string]mapBlock{
	"Archive member included to satisfy reference by file (symbol)":    blockSkip,
	"Archive member included because of file (symbol)":                 blockSkip,
	"As-needed library included to satisfy reference by file (symbol)": blockSkip,
	"Allocating common symbols":                                        blockSkip,
	"Discarded input sections":                                         blockDiscarded,
	"Memory Configuration":                                             blockMemory,
	"Linker script and memory map":                                     blockLayout,
}

// mapParser holds the state of ParseMap between lines.
type mapParser struct {
	m             *Map
	block         mapBlock
	line          int
	output        string        // name of the current output section in the layout block
	alloc         bool          // whether output occupies target memory
	input         *InputSection // last input section, which symbol lines attach to
	pending       string        // a section name whose address follows on the next line
	pendingOutput bool          // pending names an output (not input) section
	sawLayout     bool
}

// Parse reads a GNU ld map file. It stops at the cross reference table
// (ld --cref) and ignores what it does not need; malformed addresses are
// errors naming the line.
func Parse(r io.Reader) (*Map, error) {
	p := &mapParser{m: &Map{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		p.line++
		text := strings.TrimRight(sc.Text(), "\r")
		if text == "Cross Reference Table" {
			break
		}
		if b, ok := mapTitles[text]; ok {
			p.flushPending()
			p.block, p.input, p.output = b, nil, ""
			p.sawLayout = p.sawLayout || b == blockLayout
			continue
		}
		if err := p.parseLine(text); err != nil {
			return nil, &SyntaxError{Line: p.line, Msg: err.Error()}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading map: %w", err)
	}
	p.flushPending()
	if !p.sawLayout {
		return nil, &SyntaxError{Msg: fmt.Sprintf("not a GNU ld map file: no %q section", "Linker script and memory map")}
	}
	sort.SliceStable(p.m.Sections, func(i, j int) bool { return p.m.Sections[i].Addr < p.m.Sections[j].Addr })
	return p.m, nil
}

func (p *mapParser) parseLine(text string) error {
	switch p.block {
	case blockMemory:
		return p.memoryLine(text)
	case blockDiscarded, blockLayout:
		return p.sectionLine(text)
	}
	return nil
}

func (p *mapParser) memoryLine(text string) error {
	f := strings.Fields(text)
	if len(f) < 3 || f[0] == "Name" || f[0] == "*default*" {
		return nil
	}
	origin, err := parseMapHex(f[1])
	if err != nil {
		return err
	}
	length, err := parseMapHex(f[2])
	if err != nil {
		return err
	}
	r := MemoryRegion{Name: f[0], Origin: origin, Length: length}
	if len(f) > 3 {
		r.Attributes = f[3]
	}
	p.m.Memory = append(p.m.Memory, r)
	return nil
}

// sectionLine handles one line of the layout or discarded block.
func (p *mapParser) sectionLine(text string) error {
	if strings.TrimSpace(text) == "" {
		p.flushPending()
		return nil
	}
	f := strings.Fields(text)
	indented := text[0] == ' ' || text[0] == '\t'

	// The second half of a wrapped line: "  0xADDR 0xSIZE [file | load address X]".
	if p.pending != "" && indented && len(f) >= 2 && isMapHex(f[0]) && isMapHex(f[1]) {
		name, output := p.pending, p.pendingOutput
		p.pending = ""
		if output {
			return p.startOutput(name, f)
		}
		return p.addInput(name, f)
	}
	p.flushPending()

	switch {
	case !indented:
		// An output section header (Zephyr names some without a dot:
		// "text", "initlevel"), or a script statement at column 0 (LOAD x,
		// START GROUP, OUTPUT(...)) that holds no address.
		switch {
		case p.block == blockDiscarded, f[0] == "LOAD", f[0] == "START", f[0] == "END", strings.Contains(f[0], "("):
			return nil
		}
		if len(f) == 1 {
			p.pending, p.pendingOutput = f[0], true
			return nil
		}
		return p.startOutput(f[0], f[1:])
	case text[1] != ' ' && text[1] != '\t':
		// One space: an input section, or a pattern / fill / data line.
		name := f[0]
		if strings.HasPrefix(name, "*") || strings.ContainsAny(name, "()") || isDataKeyword(name) {
			return nil // *fill*, *(.text*), KEEP(...), SORT(...), FILL, LONG ...
		}
		if len(f) == 1 {
			p.pending, p.pendingOutput = name, false
			return nil
		}
		return p.addInput(name, f[1:])
	default:
		// Deeply indented: a symbol, an assignment, a data statement or a
		// "(size before relaxing)" note.
		if len(f) == 2 && isMapHex(f[0]) && p.input != nil && p.block == blockLayout && !strings.ContainsAny(f[1], "=()") {
			addr, err := parseMapHex(f[0])
			if err != nil {
				return err
			}
			p.input.Symbols = append(p.input.Symbols, Symbol{Name: f[1], Addr: addr})
		}
		return nil
	}
}

func isDataKeyword(s string) bool {
	switch s {
	case "BYTE", "SHORT", "LONG", "QUAD", "SQUAD", "FILL", "ASCIZ", "LINKER_VERSION":
		return true
	}
	return false
}

// flushPending records a wrapped name that never got its address line: an
// empty output section such as ".ARM.exidx" with only patterns below it.
func (p *mapParser) flushPending() {
	if p.pending != "" && p.pendingOutput && p.block == blockLayout {
		p.m.Outputs = append(p.m.Outputs, OutputSection{Name: p.pending, Alloc: isAllocOutput(p.pending)})
		p.output, p.alloc, p.input = p.pending, isAllocOutput(p.pending), nil
	}
	p.pending = ""
}

// startOutput records an output section header; f is what follows its
// name: "0xADDR 0xSIZE [load address 0xLMA]".
func (p *mapParser) startOutput(name string, f []string) error {
	o := OutputSection{Name: name, Alloc: isAllocOutput(name)}
	if len(f) >= 2 && isMapHex(f[0]) && isMapHex(f[1]) {
		var err error
		if o.Addr, err = parseMapHex(f[0]); err != nil {
			return err
		}
		if o.Size, err = parseMapHex(f[1]); err != nil {
			return err
		}
		o.LoadAddr = o.Addr
		if len(f) >= 5 && f[2] == "load" && f[3] == "address" {
			if o.LoadAddr, err = parseMapHex(f[4]); err != nil {
				return err
			}
		}
	}
	p.m.Outputs = append(p.m.Outputs, o)
	p.output, p.alloc, p.input = o.Name, o.Alloc, nil
	return nil
}

// addInput records an input section; f is "0xADDR 0xSIZE file...".
func (p *mapParser) addInput(name string, f []string) error {
	if len(f) < 2 || !isMapHex(f[0]) || !isMapHex(f[1]) {
		return nil // a script statement with a section-like name; nothing placed
	}
	addr, err := parseMapHex(f[0])
	if err != nil {
		return err
	}
	size, err := parseMapHex(f[1])
	if err != nil {
		return err
	}
	s := &InputSection{Name: name, Addr: addr, Size: size}
	if file := strings.Join(f[2:], " "); strings.HasSuffix(file, ")") && strings.Contains(file, "(") {
		i := strings.LastIndexByte(file, '(')
		s.Archive, s.Member = file[:i], file[i+1:len(file)-1]
	} else {
		s.Object = file
	}
	if p.block == blockDiscarded {
		p.m.Discarded = append(p.m.Discarded, s)
		return nil
	}
	if p.output != "" {
		s.Output = p.output
		if !p.alloc {
			p.input = nil
			return nil
		}
	}
	p.m.Sections = append(p.m.Sections, s)
	p.input = s
	return nil
}

func isMapHex(s string) bool {
	if len(s) < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') {
		return false
	}
	for _, c := range s[2:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// parseMapHex parses an address or size; tcmprof's targets are 32-bit.
func parseMapHex(s string) (uint32, error) {
	if !isMapHex(s) {
		return 0, fmt.Errorf("bad hex number %q", s)
	}
	v, err := strconv.ParseUint(s[2:], 16, 64)
	if err != nil || v > 1<<32-1 {
		return 0, fmt.Errorf("%s does not fit in 32 bits (not a 32-bit target's map?)", s)
	}
	return uint32(v), nil
}
