// SPDX-License-Identifier: Apache-2.0

package image

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"os"
	"regexp"
	"testing"

	"github.com/tcmprof/tcmprof/internal/armtest"
)

// TestBuildIDAgainstReadelf compares BuildID with `readelf -n` on an image
// linked with --build-id=sha1, and expects nil from one linked without.
func TestBuildIDAgainstReadelf(t *testing.T) {
	e := armtest.BuildExtras(t)
	m := regexp.MustCompile(`Build ID: ([0-9a-f]+)`).FindStringSubmatch(armtest.Output(t, "arm-none-eabi-readelf", "-n", e.ELF))
	if m == nil {
		t.Fatal("readelf -n shows no build ID; the fixture lost --build-id")
	}
	f, err := elf.Open(e.ELF)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id, err := BuildID(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(id) != 20 || hex.EncodeToString(id) != m[1] {
		t.Errorf("BuildID = %x (%d bytes), readelf says %s", id, len(id), m[1])
	}

	g, err := elf.Open(e.NoID)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if id, err := BuildID(g); id != nil || err != nil {
		t.Errorf("BuildID without --build-id = %x, %v; want nil, nil", id, err)
	}
}

// TestBuildIDMalformedNote: a note whose sizes overrun its section is a
// NoteError naming the section.
func TestBuildIDMalformedNote(t *testing.T) {
	data, err := os.ReadFile(armtest.BuildExtras(t).ELF)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	sec := f.Section(".note.gnu.build-id")
	if sec == nil {
		t.Fatal("the fixture lost its build-id note")
	}
	binary.LittleEndian.PutUint32(data[sec.Offset+4:], 0x1000) // descsz
	if f, err = elf.NewFile(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	id, err := BuildID(f)
	if ne, ok := err.(*NoteError); !ok || ne.Section != ".note.gnu.build-id" || id != nil {
		t.Errorf("BuildID = %x, %#v; want a NoteError about .note.gnu.build-id", id, err)
	}
}

func TestFindGNUBuildIDMalformed(t *testing.T) {
	le := binary.LittleEndian
	note := func(namesz, descsz, typ uint32, rest ...byte) []byte {
		b := le.AppendUint32(nil, namesz)
		b = le.AppendUint32(b, descsz)
		return append(le.AppendUint32(b, typ), rest...)
	}
	other := note(4, 4, 1, 'G', 'N', 'U', 0, 1, 2, 3, 4)
	good := note(4, 2, 3, 'G', 'N', 'U', 0, 0xab, 0xcd, 0, 0)
	for _, tc := range []struct {
		name  string
		data  []byte
		id    string
		found bool
		err   bool
	}{
		{"after another note", append(other, good...), "abcd", true, false},
		{"only another note", other, "", false, false},
		{"truncated header", good[:8], "", false, true},
		{"desc overruns", note(4, 64, 3, 'G', 'N', 'U', 0), "", false, true},
		{"huge sizes", note(0xffffffff, 0xffffffff, 3), "", false, true},
	} {
		id, found, malformed := findGNUBuildID(tc.data, le)
		if hex.EncodeToString(id) != tc.id || found != tc.found || (malformed != "") != tc.err {
			t.Errorf("%s: %x, %v, %q", tc.name, id, found, malformed)
		}
	}
}
