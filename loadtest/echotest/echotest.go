// SPDX-License-Identifier: Apache-2.0

// Package echotest runs UDP echo servers on loopback whose answers are
// known, for the tests of loadtest and of the bench command: a model with a
// set service rate and receive queue (known capacity), the same with a
// receive cost (receive livelock), a plain echo that can duplicate or
// reorder, and a silent listener.
package echotest

import (
	"net"
	"sync"
	"testing"
	"time"
)

// modelEcho is the UDP echo of StartModel on loopback whose capacity is known by
// construction: a CPU that spends rxCost on every datagram it receives
// (first, as a receive interrupt does, whether or not the datagram is then
// kept) and echoCost on every one it answers, with a receive queue of
// queueLen datagrams (tail drop). Its CPU time is real time, handed out in
// ticks of about a millisecond; time it is idle is not saved up.
//
// With rxCost 0 it serves 1/echoCost datagrams per second however many are
// offered (the plateau). With rxCost > 0, offered λ leaves 1 − λ·rxCost of
// each second for echoes: goodput min(λ, (1 − λ·rxCost)/echoCost) falls as
// λ grows past the peak — receive livelock.
type modelEcho struct {
	rxCost, echoCost time.Duration
	queueLen         int

	conn *net.UDPConn
	done sync.WaitGroup
}

type datagram struct {
	data []byte
	from *net.UDPAddr
}

// StartModel listens on 127.0.0.1 and serves as modelEcho describes
// until the test ends.
func StartModel(t testing.TB, rxCost, echoCost time.Duration, queueLen int) *net.UDPAddr {
	t.Helper()
	conn := listen(t)
	conn.SetReadBuffer(4 << 20)
	m := &modelEcho{rxCost: rxCost, echoCost: echoCost, queueLen: queueLen, conn: conn}
	// The "wire": datagrams the CPU has not looked at yet.
	wire := make(chan datagram, 1<<16)
	stop := make(chan struct{})
	m.done.Add(2)
	go func() {
		defer m.done.Done()
		defer close(wire)
		buf := make([]byte, 2048)
		for {
			n, from, err := conn.ReadFromUDP(buf)
			if err != nil {
				return
			}
			select {
			case wire <- datagram{append([]byte(nil), buf[:n]...), from}:
			default: // the wire is full: lost before the CPU sees it
			}
		}
	}()
	go func() {
		defer m.done.Done()
		m.serve(wire, stop)
	}()
	t.Cleanup(func() {
		close(stop)
		conn.Close()
		m.done.Wait()
	})
	return conn.LocalAddr().(*net.UDPAddr)
}

func (m *modelEcho) serve(wire <-chan datagram, stop <-chan struct{}) {
	var queue []datagram
	var budget time.Duration
	last := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		now := time.Now()
		budget += now.Sub(last)
		last = now
		for more := true; more; {
			select {
			case d, ok := <-wire:
				if !ok {
					return
				}
				budget -= m.rxCost
				if len(queue) < m.queueLen {
					queue = append(queue, d)
				}
			default:
				more = false
			}
		}
		for len(queue) > 0 && budget >= m.echoCost {
			budget -= m.echoCost
			m.conn.WriteToUDP(queue[0].data, queue[0].from)
			queue = queue[1:]
		}
		if len(queue) == 0 {
			budget = min(budget, m.echoCost) // an idle CPU saves no time
		}
	}
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
