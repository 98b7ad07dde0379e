// SPDX-License-Identifier: Apache-2.0

package devicetest

import (
	"os"
	"testing"

	"github.com/creack/pty"
)

// ServePty serves d on a new pseudo-terminal for a test and returns the
// path of its other end, which the code under test opens as a serial port
// the way `tcmprof capture --port /dev/pts/N` does, that end's file, and the
// channel Serve's result arrives on. The test keeps slave open until its
// cleanup closes both ends, so the device's reads see no hang-up before the
// host opens the port; a caller that has opened the port may close slave
// earlier. Without ptys the test is skipped.
func ServePty(t testing.TB, d *Device) (path string, slave *os.File, served <-chan error) {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	result := make(chan error, 1)
	go func() { result <- d.Serve(master) }()
	t.Cleanup(func() { master.Close(); slave.Close() })
	return slave.Name(), slave, result
}
