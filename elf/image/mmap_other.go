// SPDX-License-Identifier: Apache-2.0

//go:build !unix

package image

import "os"

// readFile reads the ELF at path whole; see mmap_unix.go for why Unix maps
// it instead.
func readFile(path string) ([]byte, error) { return os.ReadFile(path) }
