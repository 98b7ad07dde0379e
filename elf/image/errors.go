// SPDX-License-Identifier: Apache-2.0

package image

// A FormatError is an ELF tcmprof cannot use, as debug/elf reports one:
// which file, what is wrong with it, and the error of debug/elf's that
// said so, if one did.
type FormatError struct {
	Path string // the name the ELF was loaded as
	Msg  string // "" when Err says it all
	Err  error
}

func (e *FormatError) Error() string {
	s := e.Path
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *FormatError) Unwrap() error { return e.Err }

// A NoteError is an ELF note section whose notes do not read (BuildID).
type NoteError struct {
	Section string
	Msg     string
}

func (e *NoteError) Error() string { return e.Section + ": " + e.Msg }
