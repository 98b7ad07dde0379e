// SPDX-License-Identifier: Apache-2.0

// Package atomicfile writes the files a user keeps (captures, profiles,
// plans) so that a failed or interrupted run never leaves a half-written
// file: the data goes to a temporary file in the same directory, which is
// synced and renamed over the target only when everything was written.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"unicode/utf8"
)

// Write calls write with a temporary file beside path and renames it over
// path when write succeeds. path then holds either its old content or the
// whole new one, with mode 0644 (CreateTemp's files are private).
func Write(path string, write func(io.Writer) error) error {
	var s Set
	if err := s.Add(path, write); err != nil {
		return err
	}
	return s.Commit()
}

// Set writes several files all or none, as one command's outputs: Add
// writes each to a temporary file beside it, Commit renames them all over
// their targets. When an Add fails, the temporaries written so far are
// removed and every target keeps its old content.
type Set struct {
	staged []staged
}

type staged struct{ tmp, path string }

// Add writes path's new content to a temporary file beside it. On error it
// removes every temporary of the set: the set is abandoned.
func (s *Set) Add(path string, write func(io.Writer) error) (err error) {
	defer func() {
		if err != nil {
			s.Abort()
		}
	}()
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("writing %s: is a directory", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), tempPattern(filepath.Base(path)))
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the temporary name means nothing to the user
		}
		return fmt.Errorf("writing %s: %w", path, err)
	}
	s.staged = append(s.staged, staged{tmp.Name(), path})
	err = write(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// maxTempStem bounds how much of the target's name its temporary keeps:
// with the dot, ".tmp" and CreateTemp's number (at most 10 digits) the
// temporary's name stays within the 255 bytes a file name may have, so any
// name the user may give can be written.
const maxTempStem = 255 - len(".") - len(".tmp") - 10

// tempPattern is the CreateTemp pattern of a temporary beside the file
// named base: ".base.tmp*", base cut (at a character boundary) when it is
// too long for that to be a valid name.
func tempPattern(base string) string {
	if len(base) > maxTempStem {
		cut := maxTempStem
		for cut > 0 && !utf8.RuneStart(base[cut]) {
			cut--
		}
		base = base[:cut]
	}
	return "." + base + ".tmp*"
}

// Commit renames every staged file over its target. Only a rename can
// fail here (all content is written): the files renamed before it keep
// their new content, the others their old one, and the error says which.
func (s *Set) Commit() error {
	for i, st := range s.staged {
		if err := os.Rename(st.tmp, st.path); err != nil {
			var done []string
			for _, d := range s.staged[:i] {
				done = append(done, d.path)
			}
			s.staged = s.staged[i:]
			s.Abort()
			if len(done) > 0 {
				return fmt.Errorf("%w (already written: %v)", err, done)
			}
			return err
		}
		if d, derr := os.Open(filepath.Dir(st.path)); derr == nil {
			d.Sync() // make the rename durable; not every file system supports it
			d.Close()
		}
	}
	s.staged = nil
	return nil
}

// Abort removes the temporaries of a set not committed.
func (s *Set) Abort() {
	for _, st := range s.staged {
		os.Remove(st.tmp)
	}
	s.staged = nil
}
