// SPDX-License-Identifier: Apache-2.0

package image

import (
	"encoding/binary"
	"fmt"

	"debug/elf"
)

// ntGNUBuildID is the note type of a GNU build-id (NT_GNU_BUILD_ID).
const ntGNUBuildID = 3

// BuildID returns the GNU build-id of f (ld --build-id): 20 bytes for the
// default sha1. It returns nil, nil when f has none, which is the Zephyr
// default unless the tcmprof module (CONFIG_TCMPROF_SAMPLER_BUILD_ID, on by
// default) or CONFIG_LINKER_GNU_BUILD_ID adds one. A capture records the
// build-id so that profiling it later against another build is detected.
func BuildID(f *elf.File) ([]byte, error) {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		data, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", s.Name, err)
		}
		id, found, msg := findGNUBuildID(data, f.ByteOrder)
		if msg != "" {
			return nil, &NoteError{Section: s.Name, Msg: msg}
		}
		if found {
			return id, nil
		}
	}
	return nil, nil
}

// findGNUBuildID walks the notes of one SHT_NOTE section: each is namesz,
// descsz, type, then name and desc, each padded to 4 bytes. malformed
// says what is wrong with them, "" if nothing is.
func findGNUBuildID(data []byte, order binary.ByteOrder) (id []byte, found bool, malformed string) {
	pad := func(n uint32) uint64 { return (uint64(n) + 3) &^ 3 }
	for len(data) > 0 {
		if len(data) < 12 {
			return nil, false, fmt.Sprintf("truncated note header (%d bytes)", len(data))
		}
		namesz, descsz, typ := order.Uint32(data), order.Uint32(data[4:]), order.Uint32(data[8:])
		data = data[12:]
		if pad(namesz)+pad(descsz) > uint64(len(data)) {
			return nil, false, fmt.Sprintf("note of %d+%d bytes overruns its section", namesz, descsz)
		}
		name := data[:namesz]
		desc := data[pad(namesz) : pad(namesz)+uint64(descsz)]
		data = data[pad(namesz)+pad(descsz):]
		if typ == ntGNUBuildID && string(name) == "GNU\x00" {
			return append([]byte(nil), desc...), true, ""
		}
	}
	return nil, false, ""
}
