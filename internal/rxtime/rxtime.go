// SPDX-License-Identifier: Apache-2.0

// Package rxtime reads the time at which the kernel received a UDP
// datagram (SO_TIMESTAMPNS), rather than the time at which a goroutine got
// round to reading it. On a loaded host a reader is held back for tens of
// milliseconds now and then; the kernel's stamp is not moved by that, so
// whatever is computed from arrival times (a goodput window, a model of
// a device's queue) does not depend on how busy the host is.
package rxtime

import (
	"net"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// OOBSize is the control-message buffer a read needs to carry the stamp.
var OOBSize = unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{})))

// Enable asks the kernel to stamp every datagram conn receives.
func Enable(conn *net.UDPConn) error {
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return err
	}
	return serr
}

// Parse finds the SCM_TIMESTAMPNS stamp among the control messages of one
// read. The stamp is wall-clock time (CLOCK_REALTIME): it carries no
// monotonic reading.
func Parse(oob []byte) (time.Time, bool) {
	if len(oob) == 0 {
		return time.Time{}, false
	}
	cms, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, false
	}
	for _, cm := range cms {
		if cm.Header.Level == unix.SOL_SOCKET && cm.Header.Type == unix.SCM_TIMESTAMPNS && len(cm.Data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := *(*unix.Timespec)(unsafe.Pointer(&cm.Data[0]))
			return time.Unix(ts.Unix()), true
		}
	}
	return time.Time{}, false
}
