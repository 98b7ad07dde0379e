// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"os"
	"os/exec"
	"path"
	"strings"
	"testing"
)

// spdxLine is the licence (LICENSE) as every source file states it.
const spdxLine = "SPDX-License-Identifier: Apache-2.0"

// licensed reports whether a file of the tree must carry spdxLine: Go, C,
// C++, assembly, linker scripts, Python, shell, Makefiles, CMake and
// Kconfig. Golden files are outputs compared byte for byte (their
// generator carries it instead), and .ci/ belongs to the CI.
func licensed(p string) bool {
	base, ext := path.Base(p), path.Ext(p)
	if strings.HasPrefix(p, ".ci/") || strings.Contains("/"+p, "/testdata/golden/") && ext != ".py" {
		return false
	}
	switch ext {
	case ".go", ".c", ".h", ".cpp", ".S", ".ld", ".py", ".sh", ".cmake":
		return true
	}
	return base == "Makefile" || base == "CMakeLists.txt" || strings.HasPrefix(base, "Kconfig")
}

// TestSourcesCarryTheLicence: every source file, committed or new, says
// its licence in its first lines, as Zephyr's do.
func TestSourcesCarryTheLicence(t *testing.T) {
	out, err := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	checked := 0
	for _, p := range strings.Fields(string(out)) {
		if !licensed(p) {
			continue
		}
		f, err := os.Open(p)
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		found := false
		for i := 0; i < 3 && sc.Scan(); i++ {
			found = found || strings.Contains(sc.Text(), spdxLine)
		}
		f.Close()
		if !found {
			t.Errorf("%s: no %q in its first lines", p, spdxLine)
		}
		checked++
	}
	if checked < 100 {
		t.Errorf("only %d source files checked: is this the repository root?", checked)
	}
}
