// SPDX-License-Identifier: Apache-2.0

// Package echotest runs UDP echo servers on loopback whose answers are
// known, for the tests of loadtest and of the bench command: a model with a
// set service rate and receive queue (known capacity), the same with a
// receive cost (receive livelock), a plain echo that can duplicate or
// reorder, and a silent listener.
package echotest

import (
	"errors"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/tcmprof/tcmprof/internal/rxtime"
)

// modelEcho is the UDP echo of StartModel on loopback whose capacity is
// known by construction: a CPU that spends rxCost on every datagram it
// receives (first, as a receive interrupt does, whether or not the datagram
// is then kept) and echoCost on every one it answers, with a receive queue
// of queueLen datagrams (tail drop).
//
// The CPU runs on the kernel's receive times (rxtime), not on the time at
// which this goroutine gets round to a datagram: which datagrams it keeps
// and when each echo is due follow from the arrival times alone, exactly,
// however busy the host is. Only the sending of an echo can be late, when
// the host holds this goroutine back.
//
// With rxCost 0 it serves 1/echoCost datagrams per second however many are
// offered (the plateau). With rxCost > 0, offered λ leaves 1 − λ·rxCost of
// each second for echoes: goodput min(λ, (1 − λ·rxCost)/echoCost) falls as
// λ grows past the peak — receive livelock.
type modelEcho struct {
	rxCost, echoCost time.Duration
	queueLen         int

	conn *net.UDPConn
	pc   *ipv4.PacketConn

	mu     sync.Mutex
	echoes []Echo

	// clock is how far the CPU's time has been accounted for; rxWork is
	// receive work not done yet (it comes before any echo), queue the kept
	// datagrams, head first, and headLeft the echo work left on the head.
	clock    time.Time
	rxWork   time.Duration
	queue    []datagram
	headLeft time.Duration
}

type datagram struct {
	data []byte
	from *net.UDPAddr
}

// Echo is one answer a model sent: the payload, when the model had it done
// (Due), and the wall-clock times just before and just after the send. On
// loopback the receiver's kernel stamps the echo inside the send, between
// Before and After; Before is later than Due when the host held the model
// back.
type Echo struct {
	Data               []byte
	Due, Before, After time.Time
}

// Model is a running model echo.
type Model struct {
	Addr *net.UDPAddr
	m    *modelEcho
}

// Echoes returns every echo the model has sent so far, in order.
func (m *Model) Echoes() []Echo {
	m.m.mu.Lock()
	defer m.m.mu.Unlock()
	return slices.Clone(m.m.echoes)
}

// StartModel listens on 127.0.0.1 and serves as modelEcho describes
// until the test ends.
func StartModel(t testing.TB, rxCost, echoCost time.Duration, queueLen int) *Model {
	t.Helper()
	conn := listen(t)
	conn.SetReadBuffer(4 << 20)
	if err := rxtime.Enable(conn); err != nil {
		t.Fatal(err)
	}
	m := &modelEcho{rxCost: rxCost, echoCost: echoCost, queueLen: queueLen, conn: conn, pc: ipv4.NewPacketConn(conn)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.serve()
	}()
	t.Cleanup(func() {
		conn.Close()
		<-done
	})
	return &Model{Addr: conn.LocalAddr().(*net.UDPAddr), m: m}
}

// serve takes datagrams in as they arrived and sends each echo when the
// model says it is done, until the socket is closed.
func (m *modelEcho) serve() {
	msgs := make([]ipv4.Message, 64)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, 2048)}
		msgs[i].OOB = make([]byte, rxtime.OOBSize)
	}
	take := func(flags int) (int, error) {
		n, err := m.pc.ReadBatch(msgs, flags)
		for _, msg := range msgs[:max(n, 0)] {
			at, ok := rxtime.Parse(msg.OOB[:msg.NN])
			if !ok {
				at = time.Now()
			}
			m.arrive(datagram{append([]byte(nil), msg.Buffers[0][:msg.N]...), msg.Addr.(*net.UDPAddr)}, at)
		}
		return n, err
	}
	for {
		// Every datagram that arrived before now is in the socket by the
		// time the clock is read: once they are taken in, the CPU's time
		// up to now is known.
		now := time.Now()
		for {
			if n, err := take(unix.MSG_DONTWAIT); n <= 0 || err != nil {
				break
			}
		}
		m.advance(now)
		// Wait for the next datagram, at most until the next echo is due.
		m.conn.SetReadDeadline(m.nextDue())
		_, err := take(0)
		m.conn.SetReadDeadline(time.Time{})
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return
		}
	}
}

// arrive runs the CPU up to a datagram's arrival, charges its receive
// work and keeps it if the queue has room.
func (m *modelEcho) arrive(d datagram, at time.Time) {
	m.advance(at)
	m.rxWork += m.rxCost
	if len(m.queue) < m.queueLen {
		m.queue = append(m.queue, d)
		if len(m.queue) == 1 {
			m.headLeft = m.echoCost
		}
	}
}

// advance runs the CPU up to to: receive work first, then the queue's
// echoes in order, each sent when its work is done; an idle CPU saves no
// time.
func (m *modelEcho) advance(to time.Time) {
	for m.clock.Before(to) {
		span := to.Sub(m.clock)
		switch {
		case m.rxWork > 0:
			d := min(m.rxWork, span)
			m.rxWork -= d
			m.clock = m.clock.Add(d)
		case len(m.queue) > 0:
			d := min(m.headLeft, span)
			m.headLeft -= d
			m.clock = m.clock.Add(d)
			if m.headLeft == 0 {
				m.send(m.queue[0])
				m.queue = m.queue[1:]
				m.headLeft = m.echoCost
			}
		default:
			m.clock = to
		}
	}
}

// send answers d, whose echo is done at m.clock, and logs it.
func (m *modelEcho) send(d datagram) {
	e := Echo{Data: d.data, Due: m.clock, Before: time.Now()}
	m.conn.WriteToUDP(d.data, d.from)
	e.After = time.Now()
	m.mu.Lock()
	m.echoes = append(m.echoes, e)
	m.mu.Unlock()
}

// nextDue is when the head's echo is done if nothing arrives before; zero
// (no deadline) when the queue is empty.
func (m *modelEcho) nextDue() time.Time {
	if len(m.queue) == 0 {
		return time.Time{}
	}
	return m.clock.Add(m.rxWork + m.headLeft)
}

// StartSilent listens on 127.0.0.1 and reads datagrams without answering.
func StartSilent(t testing.TB) *net.UDPAddr {
	t.Helper()
	conn := listen(t)
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := conn.ReadFromUDP(buf); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { conn.Close() })
	return conn.LocalAddr().(*net.UDPAddr)
}

// StartEcho is a plain echo that answers every datagram at once, twice
// when dup is set, and holds every other datagram back until the next one
// when swap is set (so that they arrive reordered).
func StartEcho(t testing.TB, dup, swap bool) *net.UDPAddr {
	t.Helper()
	conn := listen(t)
	go func() {
		buf := make([]byte, 2048)
		var held []byte
		for {
			n, from, err := conn.ReadFromUDP(buf)
			if err != nil {
				return
			}
			d := append([]byte(nil), buf[:n]...)
			if swap {
				if held == nil {
					held = d
					continue
				}
				conn.WriteToUDP(d, from)
				d, held = held, nil
			}
			conn.WriteToUDP(d, from)
			if dup {
				conn.WriteToUDP(d, from)
			}
		}
	}()
	t.Cleanup(func() { conn.Close() })
	return conn.LocalAddr().(*net.UDPAddr)
}

// listen opens a UDP socket on a free loopback port.
func listen(t testing.TB) *net.UDPConn {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// FreeUDPPort returns a loopback UDP port that was free a moment ago, for
// a peer that binds its own (socat).
func FreeUDPPort(t testing.TB) int {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}
