// SPDX-License-Identifier: Apache-2.0

package profiletest

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tcmprof/tcmprof/internal/armtest"
	"github.com/tcmprof/tcmprof/internal/golden"
)

// toolchain names the compiler and linker that build the firmware: the
// first line of each one's --version, as toolchain.txt records them.
func toolchain(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, tool := range []string{"arm-none-eabi-gcc", "arm-none-eabi-ld"} {
		out, err := exec.Command(tool, "--version").Output()
		if err != nil {
			t.Fatalf("%s --version: %v", tool, err)
		}
		first, _, _ := bytes.Cut(out, []byte("\n"))
		b.Write(first)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// TestCheckedInFirmware rebuilds the firmware from profile/testdata and
// fails if the checked-in copy (CheckedInDir), or what the oracles print
// about it, differs: the sources or the recipe changed without the copy.
// Refresh it with
//
//	go test ./profile/profiletest -run TestCheckedInFirmware -update
//
// then the goldens made from it. Another toolchain than the one that built
// the copy may lay the firmware out otherwise, rightly: the test is then
// skipped, naming both (under -update it rewrites the copy with this one).
func TestCheckedInFirmware(t *testing.T) {
	armtest.NeedTools(t, "arm-none-eabi-gcc", "arm-none-eabi-g++", "arm-none-eabi-ar", "arm-none-eabi-ld",
		"arm-none-eabi-objdump", "arm-none-eabi-nm", "arm-none-eabi-readelf")
	have := toolchain(t)
	recorded, err := os.ReadFile(filepath.Join(CheckedInDir, "toolchain.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !golden.Updating() && !bytes.Equal(have, recorded) {
		t.Skipf("the checked-in firmware was built by\n%sthis machine has\n%sand another toolchain may rightly lay it out otherwise",
			recorded, have)
	}
	fw := Build(t)
	for _, name := range checkedInFiles {
		data, err := os.ReadFile(filepath.Join(fw.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join(CheckedInDir, name), data)
	}
	for _, o := range oracles {
		out, err := runOracle(fw.ELF, o.tool, o.args...)
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join(CheckedInDir, o.file), out)
	}
	golden.Check(t, filepath.Join(CheckedInDir, "toolchain.txt"), have)
	if t.Failed() {
		t.Log("the checked-in firmware is not what its sources build: refresh it with\n" +
			"\tgo test ./profile/profiletest -run TestCheckedInFirmware -update\n" +
			"then the goldens made from it with\n\tgo test ./cmd ./profile ./live -update")
	}
}

// TestCheckedInNeedsNoTools reads the checked-in copy with no program
// on PATH, and checks what it answers against Go's debug/elf: the
// build-id note and the function symbols' addresses.
func TestCheckedInNeedsNoTools(t *testing.T) {
	t.Setenv("PATH", "")
	fw, err := checkedIn()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(fw.ELF)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	note := f.Section(".note.gnu.build-id")
	if note == nil {
		t.Fatal("the checked-in fw.elf has no .note.gnu.build-id")
	}
	data, err := note.Data()
	if err != nil {
		t.Fatal(err)
	}
	// namesz, descsz, type, then "GNU\x00" and the id.
	if len(data) < 16 {
		t.Fatalf("build-id note of %d bytes", len(data))
	}
	if got, want := fw.BuildID(t), data[16:]; !bytes.Equal(got, want) {
		t.Errorf("BuildID = %x, the note holds %x", got, want)
	}
	_, addrOf := armtest.FuncSymbols(t, f)
	for _, name := range []string{"hash_buf", "leaf_add", "net_checksum", "fast_scale", "idle_loop"} {
		if got, want := fw.Entry(t, name), addrOf[name]; got != want {
			t.Errorf("Entry(%s) = 0x%x, the symbol table says 0x%x", name, got, want)
		}
	}
}
