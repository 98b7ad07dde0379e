// SPDX-License-Identifier: Apache-2.0

package board

import "fmt"

// A DevicetreeError says why a devicetree gives no board: its source is
// malformed or uses what ReadZephyrDTS does not support (Line says where),
// or a node it needs does not describe its memory in a way it understands.
type DevicetreeError struct {
	Line int // of the source; 0 when the error is about the tree it holds
	Msg  string
}

func (e *DevicetreeError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("devicetree line %d: %s", e.Line, e.Msg)
	}
	return "devicetree: " + e.Msg
}

// dtsErrorf is a DevicetreeError about the tree.
func dtsErrorf(format string, args ...any) error {
	return &DevicetreeError{Msg: fmt.Sprintf(format, args...)}
}

// An InvalidError says what is wrong with a board's memory map (Validate).
type InvalidError struct {
	Board string
	Msg   string
}

func (e *InvalidError) Error() string { return "board " + e.Board + ": " + e.Msg }
