// SPDX-License-Identifier: Apache-2.0

package thumb

// A FormatError is an ELF whose code CallEdges and TailCalls cannot read:
// not 32-bit ARM code, or a section (Section names it) that does not fit
// in a 32-bit address space.
type FormatError struct {
	Section string // "" when the file as a whole is at fault
	Msg     string
}

func (e *FormatError) Error() string {
	if e.Section != "" {
		return "section " + e.Section + " " + e.Msg
	}
	return "call graph: " + e.Msg
}
