// SPDX-License-Identifier: Apache-2.0

package armtest

import "testing"

// TestDebianPackages reads the repository's Makefile: a skip names the
// package `make deps` would install, so the list must parse and name the
// tools the tests look for.
func TestDebianPackages(t *testing.T) {
	packages, err := debChecks()
	if err != nil {
		t.Fatal(err)
	}
	if got := packages["/usr/lib/arm-none-eabi/newlib/libc.a"]; got != "libnewlib-arm-none-eabi" {
		t.Errorf("DEB_CHECKS gives newlib's libc.a to %q", got)
	}
	for tool, want := range map[string]string{
		"arm-none-eabi-gcc":     "gcc-arm-none-eabi",
		"arm-none-eabi-objdump": "gcc-arm-none-eabi", // binutils-arm-none-eabi comes with it
		"qemu-system-arm":       "qemu-system-arm",
		"llvm-symbolizer":       "llvm",
		"gdb-multiarch":         "gdb-multiarch",
		"make":                  "make",
	} {
		if got := DebianPackage(tool); got != want {
			t.Errorf("DebianPackage(%q) = %q, want %q", tool, got, want)
		}
	}
}

func TestParseDebChecksRejectsAnEntryWithoutPackage(t *testing.T) {
	if _, err := parseDebChecks("DEB_CHECKS := gcc:gcc \\\n  tmux\n"); err == nil {
		t.Error("an entry without :package parsed")
	}
	if _, err := parseDebChecks("CHECKS := gcc:gcc\n"); err == nil {
		t.Error("a Makefile without DEB_CHECKS parsed")
	}
}
