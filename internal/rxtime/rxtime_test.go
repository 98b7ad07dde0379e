// SPDX-License-Identifier: Apache-2.0

package rxtime

import (
	"net"
	"testing"
	"time"
)

// TestStampIsWhenTheKernelReceived: a datagram read long after it arrived
// carries the time it arrived, which lies between its send and the read;
// a socket without Enable gets no stamp.
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
	before := time.Now()
	for _, to := range []*net.UDPConn{stamped, plain} {
		if _, err := sender.WriteToUDP([]byte("x"), to.LocalAddr().(*net.UDPAddr)); err != nil {
			t.Fatal(err)
		}
	}
	sent := time.Now()
	// The reads come later by at least this much, however fast the host.
	time.Sleep(50 * time.Millisecond)
	read := func(c *net.UDPConn) (time.Time, bool) {
		buf, oob := make([]byte, 16), make([]byte, OOBSize)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, oobn, _, _, err := c.ReadMsgUDP(buf, oob)
		if err != nil {
			t.Fatal(err)
		}
		return Parse(oob[:oobn])
	}
	readAt := time.Now()
	at, ok := read(stamped)
	// The stamp has no monotonic reading: these compare wall-clock times.
	if !ok || at.Before(before) || at.After(sent) || !at.Before(readAt) {
		t.Errorf("stamp %v (ok %v); sent between %v and %v, read from %v", at, ok, before, sent, readAt)
	}
	if _, ok := read(plain); ok {
		t.Error("a socket without SO_TIMESTAMPNS got a stamp")
	}
}
