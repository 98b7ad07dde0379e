// SPDX-License-Identifier: Apache-2.0

// Package simtest writes execution traces in the format of the QEMU plugin
// (firmware-sampler/qemu/plugin/README.md), for tests that need traces
// whose contents they choose.
package simtest

import "encoding/binary"

// Writer builds a trace in memory, record by record, as the plugin would
// write it.
type Writer struct {
	buf                 []byte
	blocks, execs, cuts uint64
}

// NewWriter starts a trace with buildID (nil for none) in its header.
func NewWriter(buildID []byte) *Writer {
	w := &Writer{}
	w.buf = append(w.buf, "TCMTRACE"...)
	w.Word(1 << 16) // version 1.0
	w.Word(uint32(len(buildID)))
	id := append([]byte(nil), buildID...)
	for len(id)%4 != 0 {
		id = append(id, 0)
	}
	w.buf = append(w.buf, id...)
	return w
}

// Word appends a raw word, for tests of damaged traces.
func (w *Writer) Word(v uint32) { w.buf = binary.LittleEndian.AppendUint32(w.buf, v) }

// Block defines the next block: instructions of the given sizes from
// start. It returns the block's id.
func (w *Writer) Block(start uint32, sizes ...uint8) uint32 {
	id := uint32(w.blocks)
	w.Word(0x80000000 | uint32(len(sizes)))
	w.Word(id)
	w.Word(start)
	var packed uint32
	for i, s := range sizes {
		packed |= uint32(s) << (8 * (i % 4))
		if i%4 == 3 || i == len(sizes)-1 {
			w.Word(packed)
			packed = 0
		}
	}
	w.blocks++
	return id
}

// Exec records executions of blocks.
func (w *Writer) Exec(ids ...uint32) {
	for _, id := range ids {
		w.Word(id)
		w.execs++
	}
}

// Cut records that the latest execution stopped at the single
// instruction of block id, which then ran alone.
func (w *Writer) Cut(id uint32) {
	w.Word(0x90000000)
	w.Word(id)
	w.cuts++
}

// Bytes ends the trace (END with its counts) and returns it.
func (w *Writer) Bytes() []byte {
	out := binary.LittleEndian.AppendUint32(append([]byte(nil), w.buf...), 0xF0000000)
	for _, v := range []uint64{w.execs, w.blocks, w.cuts} {
		out = binary.LittleEndian.AppendUint64(out, v)
	}
	return out
}

// Unended returns the trace so far without END, as a killed QEMU leaves it.
func (w *Writer) Unended() []byte { return append([]byte(nil), w.buf...) }
