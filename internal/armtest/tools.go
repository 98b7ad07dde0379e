// SPDX-License-Identifier: Apache-2.0

package armtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// NeedTools skips the test when one of tools is not installed, naming the
// Debian package that provides it (DebianPackage).
func NeedTools(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: `make deps` or `sudo apt-get install %s` installs it", tool, DebianPackage(tool))
		}
	}
}

// NeedQEMU skips a test that boots firmware in QEMU: under -short, the one
// rule for every QEMU test, and when the emulator or the toolchain that
// builds the firmware (tools) is missing.
func NeedQEMU(t testing.TB, tools ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("boots firmware in QEMU: not under -short")
	}
	NeedTools(t, append([]string{"qemu-system-arm"}, tools...)...)
}

// DebianPackage is the Debian package that installs tool: the one the
// Makefile's DEB_CHECKS (what `make deps` installs) names for it. The ARM
// binutils come with the cross compiler's package, and a tool the list does
// not name is taken to be packaged under its own name (make, for one).
func DebianPackage(tool string) string {
	packages, _ := debChecks()
	if p, ok := packages[tool]; ok {
		return p
	}
	if strings.HasPrefix(tool, "arm-none-eabi-") {
		if p, ok := packages["arm-none-eabi-gcc"]; ok {
			return p
		}
	}
	return tool
}

var debChecks = sync.OnceValues(func() (map[string]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "..", "..", "Makefile"))
	if err != nil {
		return nil, err
	}
	return parseDebChecks(string(data))
})

var debChecksVar = regexp.MustCompile(`(?m)^DEB_CHECKS\s*:=((?:.*\\\n)*.*)$`)

// parseDebChecks reads the Makefile's DEB_CHECKS: entries
// "command-or-path:package", continued over lines with backslashes.
func parseDebChecks(makefile string) (map[string]string, error) {
	m := debChecksVar.FindStringSubmatch(makefile)
	if m == nil {
		return nil, fmt.Errorf("the Makefile has no DEB_CHECKS")
	}
	packages := make(map[string]string)
	for _, entry := range strings.Fields(strings.ReplaceAll(m[1], "\\\n", " ")) {
		what, pkg, ok := strings.Cut(entry, ":")
		if !ok || what == "" || pkg == "" {
			return nil, fmt.Errorf("DEB_CHECKS entry %q is not what:package", entry)
		}
		packages[what] = pkg
	}
	return packages, nil
}
