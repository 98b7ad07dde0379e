// SPDX-License-Identifier: Apache-2.0

package image

import (
	"cmp"
	"debug/elf"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/ianlancetaylor/demangle"
	"github.com/tcmprof/tcmprof/elf/dwarfline"
	"github.com/tcmprof/tcmprof/elf/symname"
)

// Function is one function of the image: a FUNC symbol (or a linker veneer)
// with its extent, the other symbols at its address, and where it comes from.
type Function struct {
	Name    string // ELF symbol name, e.g. "hash_buf.constprop.0"
	Base    string // Name without its clone suffix, e.g. "hash_buf"
	Clone   string // the clone suffix, e.g. ".constprop.0"; "" if none
	Display string // demangled name (the DWARF name when aliases exist), with " [clone …]" for clones
	Addr    uint32 // Thumb bit cleared
	Size    uint32
	Local   bool     // STB_LOCAL
	Aliases []string // the other FUNC symbol names at Addr
	Source  string   // source file: the DWARF CU's (absolute) or else the STT_FILE name
	Veneer  bool     // linker long-branch stub, e.g. __foo_veneer (GNU ld)
}

// isVeneerName recognises GNU ld's long-branch stubs, __<target>_veneer.
func isVeneerName(name string) bool {
	return len(name) > len("___veneer") && strings.HasPrefix(name, "__") && strings.HasSuffix(name, "_veneer")
}

// isMappingSymbol reports ARM ELF mapping symbols ($a, $t, $d, $t.1, …),
// which mark instruction-set changes, not functions.
func isMappingSymbol(name string) bool {
	return len(name) >= 2 && name[0] == '$' && strings.ContainsRune("atd", rune(name[1])) && (len(name) == 2 || name[2] == '.')
}

// funcSymbol is one FUNC (or veneer) symbol before grouping by address.
type funcSymbol struct {
	name   string
	addr   uint32
	size   uint32
	bind   elf.SymBind
	file   string // STT_FILE in force for a local symbol
	veneer bool
	end    uint32 // end of the symbol's section, bounding a size-0 symbol
}

type mappingSymbol struct {
	addr uint32
	code bool
}

// rawSymbols is what Load needs from the symbol table.
type rawSymbols struct {
	funcs []funcSymbol
	// marks holds the address of every other symbol that starts something
	// in an allocated section (objects, labels), sorted; a size-0 function
	// extends up to the next one.
	marks []uint32
	// mapping holds the ARM mapping symbols ($t/$a code, $d data) sorted
	// by address, to find where a veneer without a size ends.
	mapping []mappingSymbol
}

// dwarfSymbols are the function symbols as the DWARF index needs them:
// veneers, which DWARF does not describe, left out.
func (raw rawSymbols) dwarfSymbols() []dwarfline.Symbol {
	syms := make([]dwarfline.Symbol, 0, len(raw.funcs))
	for _, s := range raw.funcs {
		if !s.veneer {
			syms = append(syms, dwarfline.Symbol{Name: s.name, Addr: s.addr, Size: s.size})
		}
	}
	return syms
}

func collectFuncSymbols(f *elf.File, syms []elf.Symbol) rawSymbols {
	var raw rawSymbols
	var file string
	for _, s := range syms {
		typ := elf.ST_TYPE(s.Info)
		if typ == elf.STT_FILE {
			file = s.Name
			continue
		}
		if s.Section == elf.SHN_UNDEF || s.Section >= elf.SHN_LORESERVE || int(s.Section) >= len(f.Sections) {
			continue
		}
		sec := f.Sections[s.Section]
		if sec.Flags&elf.SHF_ALLOC == 0 || s.Name == "" {
			continue
		}
		if isMappingSymbol(s.Name) {
			raw.mapping = append(raw.mapping, mappingSymbol{addr: uint32(s.Value), code: s.Name[1] != 'd'})
			continue
		}
		addr := uint32(s.Value)
		veneer := isVeneerName(s.Name)
		if typ != elf.STT_FUNC && !veneer {
			raw.marks = append(raw.marks, addr)
			continue
		}
		addr &^= 1
		bind := elf.ST_BIND(s.Info)
		fs := funcSymbol{name: s.Name, addr: addr, size: uint32(s.Size), bind: bind, veneer: veneer,
			end: uint32(min(sec.Addr+sec.Size, 1<<32-1))}
		if bind == elf.STB_LOCAL {
			fs.file = file
		}
		raw.funcs = append(raw.funcs, fs)
	}
	slices.Sort(raw.marks)
	slices.SortStableFunc(raw.mapping, func(a, b mappingSymbol) int { return cmp.Compare(a.addr, b.addr) })
	return raw
}

// maxVeneerSize bounds a veneer whose symbol gives no size and whose end no
// mapping symbol marks: GNU ld's ARM long-branch stubs are at most 16 bytes
// (its PIC variants).
const maxVeneerSize = 16

// buildFunctions groups FUNC symbols by address into Functions sorted by
// Addr, with their extents. Their names and source are filled in later,
// from DWARF, by finishFunction.
func (im *Image) buildFunctions(raw rawSymbols) {
	// By address, symbols at one address in symbol-table order: sorting
	// the indices moves less than a stable sort of the symbols.
	order := make([]int32, len(raw.funcs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		return cmp.Or(cmp.Compare(raw.funcs[a].addr, raw.funcs[b].addr), cmp.Compare(a, b))
	})
	syms := make([]funcSymbol, len(order))
	n := 0 // distinct addresses
	for i, k := range order {
		syms[i] = raw.funcs[k]
		if i == 0 || syms[i].addr != syms[i-1].addr {
			n++
		}
	}
	fns := make([]Function, 0, n)
	im.funcs, im.funcSyms = make([]*Function, 0, n), make([][]funcSymbol, 0, n)
	for i := 0; i < len(syms); {
		j := i + 1
		for j < len(syms) && syms[j].addr == syms[i].addr {
			j++
		}
		group := syms[i:j:j]
		next := uint32(0) // start of the next function, 0 if none
		if j < len(syms) {
			next = syms[j].addr
		}
		fns = append(fns, newFunction(group, next, raw))
		im.funcs = append(im.funcs, &fns[len(fns)-1])
		im.funcSyms = append(im.funcSyms, group)
		i = j
	}
	im.funcNames = make([]dwarfline.Name, n)
	im.funcDone = make([]sync.Once, n)
}

// newFunction makes the function at the address of group with its
// extent; the symbol table alone decides it.
func newFunction(group []funcSymbol, next uint32, raw rawSymbols) Function {
	addr := group[0].addr
	fn := Function{Addr: addr}
	end := uint32(0) // where the symbols' sections end
	for _, s := range group {
		fn.Size = max(fn.Size, s.size)
		fn.Veneer = fn.Veneer || s.veneer
		end = max(end, s.end)
	}
	if fn.Size == 0 {
		// Hand-written assembly and some linker stubs have no .size: the
		// function runs up to the next symbol or the end of its section.
		if next > addr && next < end {
			end = next
		}
		end = min(end, nextAbove(raw.marks, addr, end))
		if fn.Veneer {
			end = min(end, veneerEnd(raw.mapping, addr, end), addr+maxVeneerSize)
		}
		if end > addr { // else a symbol outside its section: keep size 0
			fn.Size = end - addr
		}
	}
	return fn
}

// finishFunction fills in the names and source of function i, once: the
// symbol DWARF names is the primary one among aliases, and DWARF's name
// and compile unit are the display name and source. This decodes the
// compile unit holding the function's start, if not yet done.
func (im *Image) finishFunction(i int) {
	im.funcDone[i].Do(func() {
		fn, group := im.funcs[i], im.funcSyms[i]
		sub := im.dwarf.SubprogramAt(fn.Addr)
		var dwarfName, linkage string
		if sub != nil {
			dwarfName, linkage = sub.Name, sub.Linkage
		}
		p := group[pickPrimary(group, dwarfName, linkage)]
		fn.Name, fn.Local, fn.Source = p.name, p.bind == elf.STB_LOCAL, p.file
		fn.Base, fn.Clone = symname.SplitClone(p.name)
		seen := map[string]bool{p.name: true}
		for _, s := range group {
			if !seen[s.name] {
				seen[s.name] = true
				fn.Aliases = append(fn.Aliases, s.name)
			}
		}
		switch {
		case fn.Veneer:
			// The linker's stubs follow the last object's STT_FILE symbol
			// but come from no source file.
			fn.Source = ""
		case sub != nil && sub.Source != "":
			fn.Source = sub.Source
		case sub == nil:
			// Assembly (Zephyr's z_arm_svc in swap_helper.S): no
			// subprogram DIE, but a line table whose unit names the file
			// that zephyr_code_relocate needs.
			if src := im.dwarf.LineSource(fn.Addr); src != "" {
				fn.Source = src
			}
		}
		switch {
		case linkage != "":
			fn.Display = demangle.Filter(linkage)
		case dwarfName != "" && !strings.HasPrefix(fn.Base, "_Z"):
			fn.Display = dwarfName
		default:
			fn.Display = demangle.Filter(fn.Base)
		}
		fn.Display = symname.WithClone(fn.Display, fn.Clone)
		im.funcNames[i] = symbolFrameName(fn)
	})
}

// nextAbove returns the first of the sorted addrs above addr, or def.
func nextAbove(addrs []uint32, addr, def uint32) uint32 {
	if k := sort.Search(len(addrs), func(k int) bool { return addrs[k] > addr }); k < len(addrs) {
		return addrs[k]
	}
	return def
}

// veneerEnd returns where the veneer at addr ends by its mapping symbols:
// a GNU ld stub is code ($t) possibly followed by one literal ($d), so it
// ends at the next code symbol or at a second data symbol (what follows),
// or def.
func veneerEnd(mapping []mappingSymbol, addr, def uint32) uint32 {
	k, _ := slices.BinarySearchFunc(mapping, addr+1, func(m mappingSymbol, a uint32) int { return cmp.Compare(m.addr, a) })
	sawData := false
	for ; k < len(mapping); k++ {
		if mapping[k].code || sawData {
			return mapping[k].addr
		}
		sawData = true
	}
	return def
}

// pickPrimary chooses which of the symbols at one address names the
// function: the one DWARF names, else a global over a weak over a local
// one, else the first in the symbol table.
func pickPrimary(group []funcSymbol, dwarfName, linkage string) int {
	best, bestScore := 0, -1
	for i, s := range group {
		base, _ := symname.SplitClone(s.name)
		score := 0
		switch {
		case linkage != "" && (s.name == linkage || base == linkage):
			score = 8
		case dwarfName != "" && (s.name == dwarfName || base == dwarfName):
			score = 8
		}
		switch s.bind {
		case elf.STB_GLOBAL:
			score += 2
		case elf.STB_WEAK:
			score++
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

// Functions returns the image's functions sorted by Addr. The slice and its
// elements belong to the Image: do not modify them. Naming every function
// decodes the DWARF of every compile unit that holds one (in parallel,
// once); FunctionAt decodes only the unit it needs.
func (im *Image) Functions() []*Function {
	im.allFuncs.Do(func() {
		starts := make([]uint32, len(im.funcs))
		for i, fn := range im.funcs {
			starts[i] = fn.Addr
		}
		im.dwarf.Preload(starts)
		for i := range im.funcs {
			im.finishFunction(i)
		}
	})
	return im.funcs
}

// FunctionAt returns the function whose extent holds addr (bit 0 ignored),
// or nil.
func (im *Image) FunctionAt(addr uint32) *Function {
	if i := im.functionIndex(addr &^ 1); i >= 0 {
		im.finishFunction(i)
		return im.funcs[i]
	}
	return nil
}

// functionIndex returns the index in funcs of the function holding pc, -1
// if none.
func (im *Image) functionIndex(pc uint32) int {
	lo, hi := 0, len(im.funcs)
	for lo < hi { // first function with Addr > pc
		m := int(uint(lo+hi) >> 1)
		if im.funcs[m].Addr <= pc {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo > 0 && pc-im.funcs[lo-1].Addr < im.funcs[lo-1].Size {
		return lo - 1
	}
	return -1
}
