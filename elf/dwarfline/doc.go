// SPDX-License-Identifier: Apache-2.0

// Package dwarfline answers, from a firmware ELF's DWARF, which source
// line and which chain of inlined functions an address is in
// (AppendFrames), and how DWARF names the function starting at an address
// (SubprogramAt), for package image's Image to combine with the symbol
// table.
//
// The DWARF of a Zephyr image with networking and USB runs to 10-30 MB,
// while a capture touches a few hundred functions and `symbolize` may be
// asked about one address. So New only indexes it: which compile unit
// holds which addresses: from .debug_aranges, as llvm-symbolizer does
// (New reads only that section: a unit's header is read when the unit
// is). A unit's line program and subprogram / inline tree are decoded the
// first time an address falls in it, and Preload decodes the units of many
// addresses in parallel. The first address .debug_aranges places in no
// unit has every unit header read, and the units it misses placed by their
// own DIE's DW_AT_ranges or low_pc/high_pc. Units that neither place (no
// producer we know omits both, but addr2line copes, llvm-symbolizer does
// not) are decoded and indexed by what they contain the first time an
// address falls in no unit still.
//
// Each unit is read through a debug/dwarf Data of its own, over its slice
// of .debug_info: a Data over the whole section parses every unit's
// abbreviations when it is made, a third of the loading of a Zephyr image, and
// sets up a DWARF 5 unit lazily and unguarded on a Reader's first visit,
// so one Data cannot serve units decoded in parallel. A unit's own Data
// reports DIE offsets from the unit's start; references between units
// (DW_FORM_ref_addr, from LTO) are offsets in the whole section, told apart
// by the form the unit's abbreviations give them.
package dwarfline
