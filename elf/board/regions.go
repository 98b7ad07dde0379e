// SPDX-License-Identifier: Apache-2.0

package board

import "fmt"

// RegionKind says what kind of memory an address lives in. The kind, not the
// region's name, is what placement and reports reason about: a sample in
// "itcm" ran at zero wait states, one in "flash" went through the I-cache.
type RegionKind string

const (
	KindFlash RegionKind = "flash" // XIP flash (QSPI on Teensy), cached
	KindITCM  RegionKind = "itcm"  // instruction tightly coupled memory
	KindDTCM  RegionKind = "dtcm"  // data tightly coupled memory
	KindOCRAM RegionKind = "ocram" // on-chip RAM behind the AXI bus
	KindRAM   RegionKind = "ram"   // any other RAM (e.g. SDRAM) a devicetree declares
	// KindTestbench is code that plays the world outside the chip in an
	// emulated set-up (the QEMU demo's PC model and controller hardware):
	// it runs there but is not part of the firmware, so it is never
	// planned into ITCM.
	KindTestbench RegionKind = "testbench"
	// KindVeneer is not a memory: it classifies an address inside a linker
	// long-branch veneer, which may sit in flash or in ITCM. See Classify.
	KindVeneer RegionKind = "veneer"
)

// Region is one contiguous memory range of a board.
type Region struct {
	Name  string
	Kind  RegionKind
	Start uint32
	Size  uint32
}

// Contains reports whether addr lies in r. It is written so that a region
// ending at 0xFFFFFFFF+1 does not overflow.
func (r Region) Contains(addr uint32) bool {
	return addr >= r.Start && addr-r.Start < r.Size
}

// End is the first address past r, as a uint64 so that it can be 1<<32.
func (r Region) End() uint64 { return uint64(r.Start) + uint64(r.Size) }

func (r Region) String() string {
	return fmt.Sprintf("%s(%s) %#08x+%#x", r.Name, r.Kind, r.Start, r.Size)
}

// Classify returns the kind of code at addr: KindVeneer when isVeneer says
// addr is inside a linker veneer (the symbol table knows that, the memory map
// does not), otherwise the kind of the region that holds addr. ok is false
// when addr is in no region of b. isVeneer may be nil.
func (b *Board) Classify(addr uint32, isVeneer func(addr uint32) bool) (kind RegionKind, ok bool) {
	if isVeneer != nil && isVeneer(addr) {
		return KindVeneer, true
	}
	r, ok := b.RegionOf(addr)
	if !ok {
		return "", false
	}
	return r.Kind, true
}
