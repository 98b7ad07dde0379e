// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"fmt"
	"os"
	"path/filepath"
)

// namedFile is a file a command reads or writes, with what messages call
// it: the flag that names it ("-o", "--raw") or what it is ("the capture").
type namedFile struct{ what, path string }

// files lists the named files that are given: neither empty nor standard
// input or output ("-").
func files(fs ...namedFile) []namedFile {
	var out []namedFile
	for _, f := range fs {
		if f.path != "" && f.path != stdoutName {
			out = append(out, f)
		}
	}
	return out
}

// checkOutputs refuses, before anything is read or written, an output
// that is (the same file as) one of the inputs, or another output: the
// write would destroy what the user captured or built, or one output
// would replace the other. Every command that writes files calls it with
// all it reads and writes.
func checkOutputs(outputs, inputs []namedFile) error {
	outputs, inputs = files(outputs...), files(inputs...)
	for i, out := range outputs {
		for _, in := range inputs {
			if sameFile(out.path, in.path) {
				return fmt.Errorf("%s %s would overwrite %s %s%s: give another output file", out.what, out.path, in.what, in.path, sameFileNote(out.path, in.path))
			}
		}
		for _, other := range outputs[:i] {
			if sameFile(out.path, other.path) {
				return fmt.Errorf("%s %s and %s %s are the same file%s: give each its own", other.what, other.path, out.what, out.path, sameFileNote(out.path, other.path))
			}
		}
	}
	return nil
}

// sameFileNote says why two different names are one file.
func sameFileNote(a, b string) string {
	if a == b {
		return ""
	}
	return " (another name of the same file)"
}

// sameFile reports whether paths a and b name one file: the same inode
// when both exist (hard links, symbolic links, "./x" and "x"), else (an
// output not written yet) the same absolute path once cleaned and the
// directories' links resolved.
func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(fa, fb)
	}
	return resolvedPath(a) == resolvedPath(b)
}

// resolvedPath is path made absolute and clean, its directory's symbolic
// links resolved when the directory exists.
func resolvedPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}

// files are the build outputs the image flags name, as inputs of
// checkOutputs.
func (s sources) files() []namedFile {
	return []namedFile{{"the ELF", s.elf}, {"the map file", s.mapFile}, {"the devicetree", s.dts}, {"the Kconfig file", s.config}}
}
