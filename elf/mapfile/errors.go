// SPDX-License-Identifier: Apache-2.0

package mapfile

import "fmt"

// A SyntaxError is a map file Parse cannot read: a line whose addresses
// do not read (Line says which), or a file that is not a GNU ld map at
// all (Line 0).
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("map line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// A MismatchError says that a map is not the map of an image's link
// (CheckImage): an allocated output section both list lies elsewhere or
// has another size in each (Section names it), or they share no
// allocated section (Section is "").
type MismatchError struct {
	Section          string
	MapAddr, MapSize uint64
	ELFAddr, ELFSize uint64
}

func (e *MismatchError) Error() string {
	if e.Section == "" {
		return "the map and the ELF have no allocated section in common"
	}
	return fmt.Sprintf("section %s is %d bytes at 0x%08x in the map but %d bytes at 0x%08x in the ELF",
		e.Section, e.MapSize, e.MapAddr, e.ELFSize, e.ELFAddr)
}
