// SPDX-License-Identifier: Apache-2.0

//go:build unix

package image

import (
	"os"
	"syscall"
)

// readFile maps the ELF at path read-only rather than reading it: a Zephyr
// image is mostly DWARF of which one lookup touches a few pages, and
// reading 10-30 MB costs more than answering. The mapping is never
// unmapped: slices of it escape (Bytes, File) and an Image lives for the
// command that opened it. Linkers write a new file rather than rewriting
// the old one in place, so a rebuild while tcmprof runs does not change
// the mapped pages under it.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if !st.Mode().IsRegular() || size == 0 || size != int64(int(size)) {
		return os.ReadFile(path) // nothing to map: let ReadFile say why, or return the bytes
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_PRIVATE)
	if err != nil {
		return os.ReadFile(path)
	}
	return data, nil
}
