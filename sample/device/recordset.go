// SPDX-License-Identifier: Apache-2.0

package device

import "github.com/tcmprof/tcmprof/sample"

// The session's record store: what a drain or a stream run has received
// so far, and what it still misses. It is apart from session.go because
// it knows nothing of frames or the line, only of indices.

// recordSet holds the records of one run by index, in blocks: a stream
// run grows by whole blocks and never copies what it holds (growing one
// slice of an hour's records copied them again and again).
type recordSet struct {
	want     sample.Range // the indices expected; grows in stream mode
	grow     bool
	blocks   []*recordBlock
	received uint64
}

// blockLen is the records of one block.
const blockLen = 1 << 16

// recordBlock holds blockLen records field by field (the index is the
// slot's). A field's column is allocated when a record first has a value
// for it, so a block of a PC+LR stream holds 8 bytes a record, not a
// Record's 48: at 100,000 records a second fresh memory costs a page
// fault per 4 KB, and columns of numbers are nothing for the collector
// to scan.
type recordBlock struct {
	have           [blockLen / 64]uint64
	pc, lr, thread *[blockLen]uint32
	exc            *[blockLen]uint16
	sp             *[blockLen]uint32
	stack          *[blockLen][]uint32
}

// store puts v in slot i of *col, allocating the column when v is the
// first value it needs to hold (set: v is not zero).
func store[T uint16 | uint32 | []uint32](col **[blockLen]T, i uint32, v T, set bool) {
	if *col == nil && !set {
		return
	}
	if *col == nil {
		*col = new([blockLen]T)
	}
	(*col)[i] = v
}

// load sets *v to slot i of col, if the block has that column.
func load[T uint16 | uint32 | []uint32](col *[blockLen]T, i uint32, v *T) {
	if col != nil {
		*v = col[i]
	}
}

func (b *recordBlock) has(i uint32) bool { return b.have[i/64]&(1<<(i%64)) != 0 }

func (b *recordBlock) put(i uint32, r *sample.Record) {
	b.have[i/64] |= 1 << (i % 64)
	store(&b.pc, i, r.PC, r.PC != 0)
	store(&b.lr, i, r.LR, r.LR != 0)
	store(&b.exc, i, r.Exc, r.Exc != 0)
	store(&b.thread, i, r.Thread, r.Thread != 0)
	store(&b.sp, i, r.SP, r.SP != 0)
	store(&b.stack, i, r.Stack, r.Stack != nil)
}

// get returns the record in slot i, whose index is index.
func (b *recordBlock) get(i, index uint32) sample.Record {
	r := sample.Record{Index: index}
	load(b.pc, i, &r.PC)
	load(b.lr, i, &r.LR)
	load(b.exc, i, &r.Exc)
	load(b.thread, i, &r.Thread)
	load(b.sp, i, &r.SP)
	load(b.stack, i, &r.Stack)
	return r
}

// maxStreamRecords bounds a stream run's memory (an hour at 10 kHz is 36 M).
const maxStreamRecords = 1 << 27

func newRecordSet(want sample.Range) *recordSet {
	rs := &recordSet{want: sample.Range{Start: want.Start, End: want.Start}}
	rs.extendTo(want.End)
	return rs
}

// has reports whether the i-th index of the set (i < want.Len()) arrived.
func (rs *recordSet) has(i uint32) bool { return rs.blocks[i/blockLen].has(i % blockLen) }

func (rs *recordSet) add(r sample.Record) {
	if r.Index < rs.want.Start {
		return
	}
	if r.Index >= rs.want.End {
		if !rs.grow {
			return
		}
		rs.extendTo(r.Index + 1)
		if r.Index >= rs.want.End {
			return
		}
	}
	i := r.Index - rs.want.Start
	if b := rs.blocks[i/blockLen]; !b.has(i % blockLen) {
		b.put(i%blockLen, &r)
		rs.received++
	}
}

// extendTo makes the set expect the records up to end (exclusive), within
// maxStreamRecords.
func (rs *recordSet) extendTo(end uint32) {
	if end <= rs.want.End || end-rs.want.Start > maxStreamRecords {
		return
	}
	for n := end - rs.want.Start; uint32(len(rs.blocks))*blockLen < n; {
		rs.blocks = append(rs.blocks, new(recordBlock))
	}
	rs.want.End = end
}

func (rs *recordSet) hasAll(r sample.Range) bool {
	for i := r.Start; i < r.End; i++ {
		if i < rs.want.Start || i >= rs.want.End || !rs.has(i-rs.want.Start) {
			return false
		}
	}
	return true
}

func (rs *recordSet) records() []sample.Record {
	out := make([]sample.Record, 0, rs.received)
	for i := uint32(0); i < rs.want.Len(); i++ {
		if b := rs.blocks[i/blockLen]; b.has(i % blockLen) {
			out = append(out, b.get(i%blockLen, rs.want.Start+i))
		}
	}
	return out
}

func (rs *recordSet) missing() []sample.Range {
	var out []sample.Range
	for i := uint32(0); i < rs.want.Len(); i++ {
		if rs.has(i) {
			continue
		}
		j := i + 1
		for ; j < rs.want.Len(); j++ {
			if rs.has(j) {
				break
			}
		}
		out = append(out, sample.Range{Start: rs.want.Start + i, End: rs.want.Start + j})
		i = j
	}
	return out
}
