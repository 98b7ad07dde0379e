// SPDX-License-Identifier: Apache-2.0

package board

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/internal/armtest"
)

var teensyDTS = filepath.Join(armtest.ExtrasSrc, "teensy41-zephyr.dts")

var teensyDTSRegions = []Region{
	{"ITCM", KindITCM, 0x00000000, 0x20000},
	{"DTCM", KindDTCM, 0x20000000, 0x20000},
	{"OCRAM2", KindOCRAM, 0x20200000, 0x80000},
	{"OCRAM", KindOCRAM, 0x20280000, 0x40000},
	{"w25q64jvxgim", KindFlash, 0x60000000, 0x800000},
}

func readDTSFile(t *testing.T, path string) *Board {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := ReadZephyrDTS(f)
	if err != nil {
		t.Fatalf("ReadZephyrDTS(%s): %v", path, err)
	}
	return b
}

// TestReadZephyrDTS reads the teensy41 fixture, then the same tree as dtc
// re-emits it (references resolved to path strings and phandles), and
// expects the built-in teensy41 map from both.
func TestReadZephyrDTS(t *testing.T) {
	armtest.NeedTools(t, "dtc")
	if out, err := exec.Command("dtc", "-I", "dts", "-O", "dtb", "-o", os.DevNull, teensyDTS).CombinedOutput(); err != nil {
		t.Fatalf("dtc rejects the fixture: %v\n%s", err, out)
	}
	normalized, err := exec.Command("dtc", "-I", "dts", "-O", "dts", teensyDTS).Output()
	if err != nil {
		t.Fatalf("dtc -O dts: %v", err)
	}
	if !strings.Contains(string(normalized), `zephyr,itcm = "/soc/flexram@400b0000/itcm@0"`) {
		t.Fatalf("dtc no longer emits chosen paths as strings:\n%s", normalized)
	}
	viaDTC := filepath.Join(t.TempDir(), "zephyr.dts")
	if err := os.WriteFile(viaDTC, normalized, 0o644); err != nil {
		t.Fatal(err)
	}
	builtin, _ := ByName("teensy41")
	for _, path := range []string{teensyDTS, viaDTC} {
		b := readDTSFile(t, path)
		if b.Name != "PJRC TEENSY 4.1 board" {
			t.Errorf("%s: name %q", path, b.Name)
		}
		if !reflect.DeepEqual(b.Regions, teensyDTSRegions) {
			t.Errorf("%s: regions\n%v\nwant\n%v", path, b.Regions, teensyDTSRegions)
		}
		for i, r := range b.Regions {
			br := builtin.Regions[i]
			if r.Kind != br.Kind || r.Start != br.Start || r.Size != br.Size {
				t.Errorf("%s: region %v differs from built-in teensy41 %v", path, r, br)
			}
		}
		if !reflect.DeepEqual(b.BootCritical, builtin.BootCritical) {
			t.Errorf("%s: boot-critical %v", path, b.BootCritical)
		}
		// Without the copy routines the boot closure would run on past
		// arch_data_copy into z_cstart and pin the whole kernel in flash.
		if !reflect.DeepEqual(b.BootCopy, builtin.BootCopy) {
			t.Errorf("%s: boot copy %v, want %v", path, b.BootCopy, builtin.BootCopy)
		}
	}
}

func TestReadZephyrDTSErrors(t *testing.T) {
	good, err := os.ReadFile(teensyDTS)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(old, new string) string {
		if !strings.Contains(string(good), old) {
			t.Fatalf("fixture lacks %q", old)
		}
		return strings.Replace(string(good), old, new, 1)
	}
	// line is the source line the error names, 0 for one about the tree.
	for _, tc := range []struct {
		name, src, want string
		line            int
	}{
		{"empty", "", "no chosen", 0},
		{"unterminated comment", "/dts-v1/; /* x", "line 1: unterminated comment", 1},
		{"missing semicolon", edit(`model = "PJRC TEENSY 4.1 board";`, `model = "PJRC TEENSY 4.1 board"`), "line 13: expected \";\"", 13},
		{"dangling label", edit("zephyr,itcm = &itcm;", "zephyr,itcm = &nosuch;"), `no node labelled "nosuch"`, 0},
		{"bad path", edit("zephyr,itcm = &itcm;", `zephyr,itcm = "/soc/nosuch@0";`), "no node at path /soc/nosuch@0", 0},
		{"odd reg", edit("reg = < 0x0 0x20000 >;", "reg = < 0x0 0x20000 0x1 >;"), "reg has 3 cells", 0},
		{"64-bit", edit("reg = < 0x20000000 0x20000 >;", "reg = < 0xffff0000 0x20000 >;"), "does not fit in 32 bits", 0},
		{"expression", edit("reg = < 0x0 0x20000 >;", "reg = < 0x0 (128 * 1024) >;"), "unexpected \"(\"", 0},
		{"overlap", edit("reg = < 0x20000000 0x20000 >;", "reg = < 0x10000 0x20000 >;"), "overlap", 0},
		{"no window", edit("reg = < 0x402a8000 0x4000 >, < 0x60000000 0x800000 >;", "reg = < 0x402a8000 0x4000 >;"), "no memory window", 0},
		{"directive", edit("/dts-v1/;", "/dts-v1/;\n/ { /delete-node/ &itcm; };"), "/delete-node/ is not supported", 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadZephyrDTS(strings.NewReader(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			var de *DevicetreeError
			var ie *InvalidError
			switch {
			case errors.As(err, &ie):
				if tc.name != "overlap" || ie.Board != "PJRC TEENSY 4.1 board" {
					t.Errorf("%v is an InvalidError of board %q", err, ie.Board)
				}
			case !errors.As(err, &de):
				t.Errorf("%v (%T) is not a DevicetreeError", err, err)
			case tc.line > 0 && de.Line != tc.line:
				t.Errorf("%v: Line %d, want %d", err, de.Line, tc.line)
			}
		})
	}
}

func FuzzReadZephyrDTS(f *testing.F) {
	good, err := os.ReadFile(teensyDTS)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(good))
	f.Add("/ { chosen { zephyr,sram = &{/m@0}; }; m@0 { reg = <0 0x100>; }; };")
	f.Fuzz(func(t *testing.T, src string) {
		if b, err := ReadZephyrDTS(strings.NewReader(src)); err == nil {
			if err := b.Validate(); err != nil {
				t.Fatalf("ReadZephyrDTS returned an invalid board: %v", err)
			}
		}
	})
}
