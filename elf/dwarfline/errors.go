// SPDX-License-Identifier: Apache-2.0

package dwarfline

import "fmt"

// A DecodeError is DWARF the index cannot decode, as debug/dwarf reports
// one: the section, the offset in it, and what is wrong there. The
// addresses it leaves undescribed fall back to the symbol table, with a
// warning that quotes it.
type DecodeError struct {
	Section string // e.g. ".debug_info"
	Offset  uint64
	Err     string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("%s at 0x%x: %s", e.Section, e.Offset, e.Err)
}
