// SPDX-License-Identifier: Apache-2.0

package rxtime

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestStampIsWhenTheKernelReceived: a datagram read long after it arrived
// carries the time it arrived, which lies between its send and the moment
// the socket was seen holding it; a socket without Enable gets no stamp.
//
// Loopback delivery may finish after sendto returns (the kernel defers it
// to a softirq on a busy host), so the stamp is bounded from above by when
// the datagram was seen queued, never by sendto's return. And the kernel
// switches stamping on receipt on a moment after the first socket asks
// for it (a deferred static-key switch, later on a busy host); until then
// a datagram is stamped when it is read. The test waits for the switch.
func TestStampIsWhenTheKernelReceived(t *testing.T) {
	listen := func() *net.UDPConn {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	stamped, plain, sender := listen(), listen(), listen()
	if err := Enable(stamped); err != nil {
		t.Fatal(err)
	}
	read := func(c *net.UDPConn) (time.Time, bool) {
		buf, oob := make([]byte, 16), make([]byte, OOBSize)
		c.SetReadDeadline(time.Now().Add(time.Minute))
		_, oobn, _, _, err := c.ReadMsgUDP(buf, oob)
		if err != nil {
			t.Fatal(err)
		}
		return Parse(oob[:oobn])
	}
	waitStampingOnReceipt(t, sender, stamped, read)

	before := time.Now()
	for _, to := range []*net.UDPConn{stamped, plain} {
		if _, err := sender.WriteToUDP([]byte("x"), to.LocalAddr().(*net.UDPAddr)); err != nil {
			t.Fatal(err)
		}
	}
	waitQueued(t, stamped)
	queued := time.Now()
	// The read comes later by at least this much, however fast the host.
	time.Sleep(50 * time.Millisecond)
	readAt := time.Now()
	at, ok := read(stamped)
	// The stamp has no monotonic reading: these compare wall-clock times.
	if !ok || at.Before(before) || at.After(queued) || !at.Before(readAt) {
		t.Errorf("stamp %v (ok %v); sent from %v, queued by %v, read from %v", at, ok, before, queued, readAt)
	}
	if _, ok := read(plain); ok {
		t.Error("a socket without SO_TIMESTAMPNS got a stamp")
	}
}

// waitStampingOnReceipt sends probes to stamped until one carries a stamp
// from before it was read: then the kernel stamps datagrams on receipt.
func waitStampingOnReceipt(t *testing.T, sender, stamped *net.UDPConn, read func(*net.UDPConn) (time.Time, bool)) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := sender.WriteToUDP([]byte("p"), stamped.LocalAddr().(*net.UDPAddr)); err != nil {
			t.Fatal(err)
		}
		waitQueued(t, stamped)
		queued := time.Now()
		at, ok := read(stamped)
		if !ok {
			t.Fatal("a socket with SO_TIMESTAMPNS got no stamp")
		}
		if !at.After(queued) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute of probes the kernel still stamps datagrams when they are read (last: %v, queued by %v)", at, queued)
		}
	}
}

// waitQueued returns once a datagram is queued on c, without reading it:
// the kernel stamped it before queueing it.
func waitQueued(t *testing.T, c *net.UDPConn) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var perr error
	var n int
	if err := rc.Control(func(fd uintptr) {
		for {
			n, perr = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(time.Minute.Milliseconds()))
			if perr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if perr != nil || n != 1 {
		t.Fatalf("the datagram never arrived (poll: %d, %v)", n, perr)
	}
}
