// SPDX-License-Identifier: Apache-2.0

package loadtest

import (
	"encoding/binary"
	"hash/crc32"
)

// A datagram's payload: what identifies it and when it was sent, a check
// over both, then a fill pattern that depends on the sequence number, so
// that an echo with other bytes (a truncated, merged or foreign datagram) is
// recognised.
//
//	0  run id      uint32  random per run: echoes of another run do not match
//	4  sequence    uint32  per step, from 0
//	8  step index  uint16
//	10 pass        uint16
//	12 send time   int64   nanoseconds since the run started
//	20 check       uint32  CRC-32C of bytes 0..19
//	24 fill        byte i = sequence*7 + i
const HeaderSize = 24

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// stamp says which datagram this is.
type stamp struct {
	run      uint32
	seq      uint32
	step     uint16
	pass     uint16
	sentNano int64
}

// encode fills b (the whole payload) with s.
func (s stamp) encode(b []byte) {
	le := binary.LittleEndian
	le.PutUint32(b[0:], s.run)
	le.PutUint32(b[4:], s.seq)
	le.PutUint16(b[8:], s.step)
	le.PutUint16(b[10:], s.pass)
	le.PutUint64(b[12:], uint64(s.sentNano))
	le.PutUint32(b[20:], crc32.Checksum(b[:20], castagnoli))
	for i := HeaderSize; i < len(b); i++ {
		b[i] = byte(s.seq*7 + uint32(i))
	}
}

// decodeEcho reads an echo of a datagram of size bytes that run sent; ok
// is false for anything else.
func decodeEcho(b []byte, run uint32, size int) (s stamp, ok bool) {
	le := binary.LittleEndian
	if len(b) != size || len(b) < HeaderSize || le.Uint32(b[0:]) != run || le.Uint32(b[20:]) != crc32.Checksum(b[:20], castagnoli) {
		return s, false
	}
	s = stamp{run: run, seq: le.Uint32(b[4:]), step: le.Uint16(b[8:]), pass: le.Uint16(b[10:]), sentNano: int64(le.Uint64(b[12:]))}
	for i := HeaderSize; i < len(b); i++ {
		if b[i] != byte(s.seq*7+uint32(i)) {
			return s, false
		}
	}
	return s, true
}
