// SPDX-License-Identifier: Apache-2.0

//go:build unix

package device

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockPort takes an exclusive flock on the serial device at path, on a
// descriptor of its own, so that two tcmprof processes never talk to one
// sampler at once (their frames would interleave, and each would take the
// other's answers). The serial library's TIOCEXCL does not stop root, and
// the lock does. The lock lasts until the returned closer is closed; a nil
// closer means the device could not be opened for locking, and opening it
// for real will say why.
//
// The descriptor is a bare one, not an *os.File: Go puts an *os.File on a
// tty in its network poller, and then every byte the device sends wakes
// the runtime (edge-triggered) although nothing reads it there; at 100 kHz
// that was a thousand wake-ups a second.
func lockPort(path string) (io.Closer, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOCTTY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil
	}
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		syscall.Close(fd)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errPortInUse(path)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return portLock(fd), nil
}

// portLock is the descriptor that holds a port's flock.
type portLock int

func (l portLock) Close() error { return syscall.Close(int(l)) }

// portHolders lists "PID n (command)" for the other processes that have
// the device at path open.
func portHolders(path string) []string {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []string
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		fds, err := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		if err != nil {
			continue // gone, or not ours to look at
		}
		for _, fd := range fds {
			if link, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name())); err == nil && link == target {
				out = append(out, fmt.Sprintf("PID %d (%s)", pid, commandOf(pid)))
				break
			}
		}
	}
	return out
}

// commandOf is a process's command line, its first two words: enough to
// tell "tcmprof capture" from "minicom".
func commandOf(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(b) == 0 {
		return "?"
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	args[0] = filepath.Base(args[0])
	if len(args) > 2 {
		args = args[:2]
	}
	return strings.Join(args, " ")
}
