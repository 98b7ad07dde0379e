// SPDX-License-Identifier: Apache-2.0

// Package imageinput fills the planner's place.Input from the artefacts of
// one build: the linked ELF (its functions, call graph and ITCM occupancy),
// the GNU ld map (the input section, object and archive of each function),
// the object files the map names, read from disk for their section
// alignments, and the board (ITCM range, boot-critical symbols). Samples
// come from profile.Analysis, so rank and plan use the same busy/idle
// classification and per-function counts as report and diff.
//
// It is apart from place so that place stays a pure planner over Input:
// what touches the file system and the ELF reader lives here.
package imageinput

import (
	"bytes"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tcmprof/tcmprof/elf/board"
	"github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/elf/mapfile"
	"github.com/tcmprof/tcmprof/elf/thumb"
	"github.com/tcmprof/tcmprof/place"
	"github.com/tcmprof/tcmprof/profile"
)

// Sources are the artefacts of one build.
type Sources struct {
	Image *image.Image
	// Map is the image's link map. Without it functions have no input
	// section or object: fine for rank and verify, useless for plan.
	Map *mapfile.Map
	// MapPath is where Map was read from; relative object and archive paths
	// in it are looked up from its directory and that directory's parent
	// (Zephyr links in build/zephyr but names build/-relative archives).
	MapPath string
	Board   *board.Board
	// Analysis gives busy samples; nil leaves every count at 0 (verify).
	Analysis *profile.Analysis
	// BusyPCs are the busy samples by PC, from which Func.Stalls is
	// estimated; nil leaves every estimate at 0.
	BusyPCs map[uint32]int
	// WorkloadBusyPCs, when BusyPCs mixes several workloads' captures,
	// are each capture's own, and WorkloadScale the mix's samples per
	// sample of each (place.Input.WorkloadScale).
	WorkloadBusyPCs []map[uint32]int
	WorkloadScale   []float64
}

// Pin reasons the adapter sets.
const (
	PinVeneer  = "veneer"
	PinSampler = "sampler code"
	PinVectors = "vector table"
	// PinUnwind: an .ARM.exidx entry points at the function with an
	// R_ARM_PREL31 offset (±1 GiB), and the table stays in flash, 1.5 GiB
	// from ITCM, so ld could not link the move (libgcc's plain .text
	// members have such entries).
	PinUnwind = "unwind table entry (.ARM.exidx) can not reach ITCM"
	// PinTestbench: the board's testbench plays the world outside the
	// chip (board.KindTestbench); it is not firmware to place.
	PinTestbench = "testbench code"
)

// linkerStubs is the "object" GNU ld's map names for the sections of
// veneers it generated.
const linkerStubs = "linker stubs"

// samplerPrefix starts every symbol of the firmware-sampler core and its
// ports: the code that takes the samples stays where it was measured from.
const samplerPrefix = "tcmp_"

// Read builds the planner's Input from src. Warnings say what could only
// be approximated (alignments inferred because an object file could not be
// read).
func Read(src Sources) (*place.Input, []string, error) {
	if src.Image == nil || src.Board == nil {
		return nil, nil, fmt.Errorf("an image and a board are both needed")
	}
	itcm, ok := itcmRegion(src.Board)
	if !ok {
		return nil, nil, fmt.Errorf("board %s has no ITCM region", src.Board.Name)
	}
	f := src.Image.File()
	in := &place.Input{ITCMStart: itcm.Start, ITCMSize: itcm.Size, ITCMUsed: ITCMUsed(f, itcm.Start, itcm.Size),
		ICache: src.Board.ICache, FillPenalty: board.FlashLineFillCycles, Shift: flashShift(f, itcm), WorkloadScale: src.WorkloadScale}
	if id, err := image.BuildID(f); err == nil && len(id) > 0 {
		in.BuildID = hex.EncodeToString(id)
	}
	samples := make(map[*image.Function]int)
	if a := src.Analysis; a != nil {
		in.BusySamples = a.Busy.Count
		for _, fs := range a.Functions {
			if fs.Function != nil {
				samples[fs.Function] = fs.Samples
			}
		}
	}
	aligns := newAlignReader(filepath.Dir(src.MapPath))
	shared := sharedSections(src.Image.Functions(), src.Map)
	unwound := unwoundSections(src.Map)
	var warnings []string
	for _, fn := range src.Image.Functions() {
		if fn.Size == 0 {
			continue
		}
		pf := place.Func{
			Key: place.KeyFor(fn.Source, fn.Name), Symbol: fn.Name,
			Addr: fn.Addr, Size: fn.Size, Align: 2, Samples: samples[fn],
		}
		if r, ok := src.Board.RegionOf(fn.Addr); ok {
			pf.Region, pf.Kind = r.Name, r.Kind
			if r.Kind == board.KindTestbench {
				pf.Pin = PinTestbench
			}
		}
		switch {
		case fn.Veneer:
			// ld writes veneers after the last object's STT_FILE symbol,
			// which is not their source.
			pf.Pin, pf.Key.Source = PinVeneer, ""
		case strings.HasPrefix(fn.Name, samplerPrefix):
			pf.Pin = PinSampler
		}
		if src.Map != nil {
			if s := src.Map.SectionAt(fn.Addr); s != nil {
				pf.Section, pf.Object, pf.Archive = s.Name, s.Object, s.Archive
				if s.Archive != "" {
					pf.Object = s.Member
				}
				// .vectors, .isr_vector, Zephyr's .exc_vector_table and
				// .gnu.linkonce.irq_vector_table; not .text.vector_add,
				// the section -ffunction-sections gives a function of
				// that name.
				if strings.Contains(s.Name, "vector") && !strings.HasPrefix(s.Name, ".text.") {
					pf.Pin = PinVectors
				}
				if unwound[fileSection{s.File(), s.Name}] {
					pf.Pin = PinUnwind
				}
				if shared[s] {
					// Several functions in one input section can only move
					// together: none of them has its own. (A plain .text
					// holding one function is its own, and ld can move it.)
					pf.Section = ""
				} else {
					// The section, not the symbol, is what the linker moves:
					// its size includes the assembler's tail padding.
					pf.Size = max(pf.Size, s.Size)
				}
				align, err := aligns.align(s)
				if err != nil {
					align = inferAlign(src.Map, s)
					// ld's own stub sections have no object to read.
					if s.Object != linkerStubs {
						warnings = append(warnings, fmt.Sprintf("alignment of %s in %s inferred as %d from its address (%v)", s.Name, s.File(), align, err))
					}
				}
				pf.Align = align
			}
		}
		if pf.Samples > 0 && !in.InITCM(pf.Addr) && src.BusyPCs != nil {
			insns := thumb.Instructions(src.Image.Bytes, fn.Addr, fn.Size)
			pf.Stalls, pf.Lines = place.StallLines(insns, src.BusyPCs, src.Board.ICache.LineSize)
			for _, busy := range src.WorkloadBusyPCs {
				_, lines := place.StallLines(insns, busy, src.Board.ICache.LineSize)
				pf.WorkloadLines = append(pf.WorkloadLines, lines)
			}
		}
		in.Funcs = append(in.Funcs, pf)
	}
	// A board lists the boot-critical names of every tree it supports
	// (Zephyr renamed z_early_memcpy to arch_early_memcpy), so an image
	// lacks some; only an image with none of them is suspect.
	in.BootRoots, in.BootCopies, warnings = bootRoots(in.Funcs, src.Board, warnings)
	ranges := thumb.FuncRanges(src.Image.Functions())
	calls, err := thumb.CallEdges(f, ranges)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", src.Image.Path(), err)
	}
	tails, err := thumb.TailCalls(f, ranges)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", src.Image.Path(), err)
	}
	for _, e := range append(calls, tails...) {
		in.Edges = append(in.Edges, place.Edge{Caller: e.Caller, Callee: e.Callee, Site: e.Site})
	}
	if err := in.Validate(); err != nil {
		return nil, nil, err
	}
	return in, warnings, nil
}

// bootRoots returns the image's functions that the board names as
// boot-critical and as ITCM copy routines.
func bootRoots(funcs []place.Func, b *board.Board, warnings []string) (roots, copies []string, _ []string) {
	for _, f := range funcs {
		if b.IsBootCritical(f.Symbol) {
			roots = append(roots, f.Symbol)
		}
		if b.IsBootCopy(f.Symbol) {
			copies = append(copies, f.Symbol)
		}
	}
	if len(roots) == 0 && len(b.BootCritical) > 0 {
		warnings = append(warnings, fmt.Sprintf("none of board %s's boot-critical functions (%s) is in the image: nothing is kept out of ITCM for running before the copy; is the board right?",
			b.Name, strings.Join(b.BootCritical, ", ")))
	}
	if len(roots) > 0 && len(copies) == 0 && len(b.BootCopy) > 0 {
		warnings = append(warnings, fmt.Sprintf("none of board %s's ITCM copy routines (%s) is in the image: everything the boot-critical functions call, after the copy too, is kept out of ITCM",
			b.Name, strings.Join(b.BootCopy, ", ")))
	}
	return roots, copies, warnings
}

// Veneers counts the linker's long-branch veneers in img.
func Veneers(img *image.Image) int {
	n := 0
	for _, fn := range img.Functions() {
		if fn.Veneer {
			n++
		}
	}
	return n
}

func itcmRegion(b *board.Board) (board.Region, bool) {
	for _, r := range b.Regions {
		if r.Kind == board.KindITCM {
			return r, true
		}
	}
	return board.Region{}, false
}

// flashShift finds the ITCM code section's load image in flash and the
// code section that follows it (the layout of the demo's linker script:
// .itcm AT> FLASH, then .text); zero when the image has no such pair.
func flashShift(f *elf.File, itcm board.Region) place.FlashShift {
	var load place.FlashShift
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_EXECINSTR == 0 || s.Size == 0 || !place.InRange(uint32(s.Addr), itcm.Start, itcm.Size) {
			continue
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_LOAD && s.Addr >= prog.Vaddr && s.Addr < prog.Vaddr+prog.Memsz && prog.Paddr != prog.Vaddr {
				load = place.FlashShift{Load: uint32(prog.Paddr + s.Addr - prog.Vaddr), Size: uint32(s.Size)}
			}
		}
	}
	if load.Size == 0 {
		return place.FlashShift{}
	}
	end := uint64(load.Load) + uint64(load.Size)
	var next *elf.Section
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_EXECINSTR != 0 && s.Size > 0 && s.Addr >= end && (next == nil || s.Addr < next.Addr) {
			next = s
		}
	}
	if next == nil || next.Addr-end >= max(next.Addralign, 1) {
		return place.FlashShift{} // something else lies between them
	}
	load.CodeStart, load.CodeAlign = uint32(next.Addr), uint32(max(next.Addralign, 1))
	return load
}

// ITCMUsed is the bytes from start to the end of the last allocated
// section inside [start, start+size): what place.Input.ITCMUsed means.
func ITCMUsed(f *elf.File, start, size uint32) uint32 {
	var end uint32
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Size == 0 || !place.InRange(uint32(s.Addr), start, size) {
			continue
		}
		end = max(end, uint32(min(s.Addr+s.Size-uint64(start), uint64(size))))
	}
	return end
}

// sharedSections marks the map's input sections that hold more than one
// function.
func sharedSections(fns []*image.Function, m *mapfile.Map) map[*mapfile.InputSection]bool {
	out := make(map[*mapfile.InputSection]bool)
	if m == nil {
		return out
	}
	seen := make(map[*mapfile.InputSection]bool)
	for _, fn := range fns {
		if fn.Size == 0 {
			continue
		}
		if s := m.SectionAt(fn.Addr); s != nil {
			out[s] = out[s] || seen[s]
			seen[s] = true
		}
	}
	return out
}

// fileSection names one input section of one file.
type fileSection struct{ file, section string }

// unwoundSections marks the code sections that have an .ARM.exidx input
// section in the map. GNU as names the unwind section of ".text"
// ".ARM.exidx" and that of any other section X ".ARM.exidx"+X.
func unwoundSections(m *mapfile.Map) map[fileSection]bool {
	out := make(map[fileSection]bool)
	if m == nil {
		return out
	}
	for _, s := range m.Sections {
		if code, ok := strings.CutPrefix(s.Name, ".ARM.exidx"); ok {
			if code == "" {
				code = ".text"
			}
			out[fileSection{s.File(), code}] = true
		}
	}
	return out
}

// inferAlign guesses an input section's alignment from where ld put it,
// for when its object can not be read. ld places a section at the first
// multiple of its alignment after the previous section of the same output
// section, so when there is padding before it, the alignment is the
// smallest power of two that rounds the previous end up to its address.
// Without padding the address only bounds it from above; Thumb code is
// aligned to 2 or 4 bytes by GCC, so the guess is 4 when the address
// allows: overestimating costs a little predicted padding, while
// underestimating could make a plan not fit.
func inferAlign(m *mapfile.Map, s *mapfile.InputSection) uint32 {
	low := s.Addr & -s.Addr
	if s.Addr == 0 {
		low = 1 << 31
	}
	var prev *mapfile.InputSection
	for _, o := range m.Sections {
		if o.Output == s.Output && o.Size > 0 && o.Addr < s.Addr && o.Addr+o.Size <= s.Addr && (prev == nil || o.Addr > prev.Addr) {
			prev = o
		}
	}
	if prev != nil && prev.Addr+prev.Size < s.Addr {
		end := prev.Addr + prev.Size
		for p := uint32(2); p != 0 && p <= low; p <<= 1 {
			if (end+p-1)&^(p-1) == s.Addr {
				return p
			}
		}
	}
	return min(low, 4)
}

// objectSections is the largest sh_addralign per section name of one
// object file.
type objectSections map[string]uint32

// alignReader reads input section alignments from the object files and
// archive members a map names, each file once.
type alignReader struct {
	mapDir  string
	objects map[string]*objectSections // by InputSection.File(); nil value: unreadable
	errs    map[string]error
	// archives caches each archive's bytes: a Zephyr image takes hundreds
	// of members from one libzephyr.a.
	archives map[string][]byte
}

func newAlignReader(mapDir string) *alignReader {
	return &alignReader{mapDir: mapDir, objects: make(map[string]*objectSections),
		errs: make(map[string]error), archives: make(map[string][]byte)}
}

func (r *alignReader) align(s *mapfile.InputSection) (uint32, error) {
	key := s.File()
	secs, ok := r.objects[key]
	if !ok {
		var err error
		secs, err = r.load(s)
		if err != nil {
			r.errs[key] = err
		}
		r.objects[key] = secs
	}
	if secs == nil {
		return 0, r.errs[key]
	}
	a, ok := (*secs)[s.Name]
	if !ok {
		return 0, fmt.Errorf("%s has no section %s", key, s.Name)
	}
	return max(a, 1), nil
}

func (r *alignReader) load(s *mapfile.InputSection) (*objectSections, error) {
	file := s.Object
	if s.Archive != "" {
		file = s.Archive
	}
	if file == "" || file == linkerStubs {
		return nil, fmt.Errorf("no object file")
	}
	path, err := r.find(file)
	if err != nil {
		return nil, err
	}
	var data []byte
	if s.Archive != "" {
		ar, ok := r.archives[path]
		if !ok {
			if ar, err = os.ReadFile(path); err != nil {
				return nil, err
			}
			r.archives[path] = ar
		}
		if data, err = archiveMember(ar, s.Member); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	} else if data, err = os.ReadFile(path); err != nil {
		return nil, err
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	secs := make(objectSections)
	for _, sec := range f.Sections {
		secs[sec.Name] = max(secs[sec.Name], uint32(sec.Addralign))
	}
	return &secs, nil
}

// find locates a file the map names: as given when absolute, else relative
// to the map's directory or its parent.
func (r *alignReader) find(file string) (string, error) {
	if filepath.IsAbs(file) {
		return file, nil
	}
	for _, dir := range []string{r.mapDir, filepath.Dir(r.mapDir)} {
		p := filepath.Join(dir, file)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found next to the map file", file)
}

// archiveMember returns the contents of the member called name in a
// System V / GNU ar archive (the format GNU ar writes: a "//" table holds
// long names, which members name as "/offset"). A name that occurs twice
// is ambiguous and refused, since the map does not say which one it means.
func archiveMember(data []byte, name string) ([]byte, error) {
	const magic = "!<arch>\n"
	if !bytes.HasPrefix(data, []byte(magic)) {
		if bytes.HasPrefix(data, []byte("!<thin>\n")) {
			return nil, fmt.Errorf("thin archive: its members are separate files")
		}
		return nil, fmt.Errorf("not an ar archive")
	}
	var longNames []byte
	var found []byte
	count := 0
	for off := len(magic); off+60 <= len(data); {
		hdr := data[off : off+60]
		if string(hdr[58:60]) != "`\n" {
			return nil, fmt.Errorf("bad member header at offset %d", off)
		}
		size, err := strconv.ParseUint(strings.TrimSpace(string(hdr[48:58])), 10, 63)
		if err != nil || uint64(off+60)+size > uint64(len(data)) {
			return nil, fmt.Errorf("bad member size at offset %d", off)
		}
		body := data[off+60 : off+60+int(size)]
		raw := strings.TrimRight(string(hdr[:16]), " ")
		member := strings.TrimSuffix(raw, "/")
		switch {
		case raw == "//":
			longNames = body
		case raw == "/" || raw == "/SYM64/":
		case strings.HasPrefix(raw, "/"):
			n, err := strconv.Atoi(raw[1:])
			if err != nil || n < 0 || n >= len(longNames) {
				return nil, fmt.Errorf("bad long member name %q", raw)
			}
			member = string(longNames[n:])
			if end := strings.Index(member, "/\n"); end >= 0 {
				member = member[:end]
			}
		}
		if member == name && raw != "/" && raw != "//" {
			found = body
			count++
		}
		off += 60 + int(size) + int(size&1)
	}
	switch count {
	case 0:
		return nil, fmt.Errorf("no member %s", name)
	case 1:
		return found, nil
	}
	return nil, fmt.Errorf("%d members named %s", count, name)
}
