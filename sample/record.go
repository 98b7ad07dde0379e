// SPDX-License-Identifier: Apache-2.0

package sample

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Fields is the set of per-record fields of a run (protocol §2).
type Fields uint8

// Record fields; FieldPC is always set. FieldStack needs FieldLR: the host
// unwinds from PC, SP and LR.
const (
	FieldPC     Fields = 1 << 0
	FieldLR     Fields = 1 << 1
	FieldExc    Fields = 1 << 2
	FieldThread Fields = 1 << 3
	FieldStack  Fields = 1 << 4

	// AllFields are every field this version knows.
	AllFields = FieldPC | FieldLR | FieldExc | FieldThread | FieldStack
)

// String lists the fields as the --fields flag spells them: "pc,lr,exc,thread,stack".
func (f Fields) String() string {
	var names []string
	for _, n := range fieldNames {
		if f&n.f != 0 {
			names = append(names, n.name)
		}
	}
	if rest := f &^ AllFields; rest != 0 {
		names = append(names, fmt.Sprintf("0x%02x", uint8(rest)))
	}
	return strings.Join(names, ",")
}

var fieldNames = []struct {
	f    Fields
	name string
}{{FieldPC, "pc"}, {FieldLR, "lr"}, {FieldExc, "exc"}, {FieldThread, "thread"}, {FieldStack, "stack"}}

// ParseFields parses a comma-separated field list ("pc", "pc,lr",
// "pc,lr,exc,thread", "pc,stack"); "ctx" is short for exc,thread. PC is
// always added, and LR with stack (the unwinder starts from it).
func ParseFields(s string) (Fields, error) {
	f := FieldPC
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(strings.ToLower(name))
		switch name {
		case "pc":
			f |= FieldPC
		case "lr":
			f |= FieldLR
		case "exc":
			f |= FieldExc
		case "thread":
			f |= FieldThread
		case "ctx":
			f |= FieldExc | FieldThread
		case "stack":
			f |= FieldStack | FieldLR
		default:
			return 0, fmt.Errorf("unknown field %q (want pc, lr, exc, thread, ctx or stack)", name)
		}
	}
	return f, nil
}

// Record is one sample. Fields not recorded in the run are zero.
type Record struct {
	Index  uint32 // record number since START
	PC, LR uint32
	Exc    uint16 // 0 = thread mode, else the active exception number
	Thread uint32
	// SP and Stack are the STACK field: the interrupted stack pointer and
	// the words at SP, SP+4, ... that the device copied (at most the run's
	// stack words, fewer when the stack's top came first; nil for none).
	SP    uint32
	Stack []uint32
}

func zigzag(d int32) uint32   { return uint32(d<<1) ^ uint32(d>>31) }
func unzigzag(v uint32) int32 { return int32(v>>1) ^ -int32(v&1) }

var (
	errVarint     = errors.New("truncated or over-long varint")
	errExcRange   = errors.New("exception number above 511")
	errStackWords = fmt.Errorf("more than %d stack words", MaxStackWords)
	errStackRef   = errors.New("stack reference to a record that is not there")
	errStackRun   = errors.New("stack runs do not add up to the word count")
	errStackSame  = errors.New("stack run refers to a word its reference does not hold")
)

// uvarint32 reads an unsigned LEB128 of at most 5 bytes and 32 bits.
func uvarint32(b []byte) (uint32, int, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 || n > 5 || v > 0xFFFFFFFF {
		return 0, 0, errVarint
	}
	return uint32(v), n, nil
}

// Coding is how the records of a DATA frame are coded (protocol §3). A
// host asks for one in START; the HEADER says which one the device uses,
// so a device that does not know the one asked for (a 1.1 device knows
// only CodingV10) is still read right.
type Coding uint8

const (
	// CodingV10 (protocols 1.0 and 1.1): every field against the same
	// field of the record before, a stack against the one of the 16
	// records before that codes it shortest. Capture files keep it.
	CodingV10 Coding = 0
	// CodingV12 (protocol 1.2): the PC against the nearest of the last four
	// PCs, a stack against the previous record of its thread, the words
	// the two share below the reference's top as one count.
	CodingV12 Coding = 1
	// CodingV14 (protocol 1.4): the coding state runs on from one DATA
	// frame to the next (key frames start it again): the PC against the
	// nearest of the last 32 PCs, the thread as its place among the
	// recent ones, a stack in runs against its thread's last stack
	// whatever frame that came in, literal words against the nearest of
	// 32 candidates (see coding14.go).
	CodingV14 Coding = 2
)

func (c Coding) String() string {
	switch c {
	case CodingV10:
		return "1.0"
	case CodingV12:
		return "1.2"
	case CodingV14:
		return "1.4"
	}
	return fmt.Sprintf("coding %d", uint8(c))
}

// pcSlots is how many recent PCs a CodingV12 PC is coded against; the
// slot's number takes the low two bits of the varint.
const pcSlots = 4

// RecordCoder codes a sequence of records (protocol §3, DATA): the
// sequence is one DATA frame, or a whole capture file (CodingV10). Each
// record is coded against those before it, so one coder codes one
// sequence, in order, one way. A copy of it saves its state (device's
// FillData tries a record and takes it back): it shares only records'
// stacks, which it never changes.
type RecordCoder struct {
	fields Fields
	coding Coding
	prev   Record
	// recent holds the last StackRefWindow records' stacks: record
	// count-back at recent[(count-back) % StackRefWindow].
	recent [StackRefWindow]Record
	count  int
	// pcs are the last pcSlots PCs, the newest first (CodingV12).
	pcs [pcSlots]uint32
	// v14 is CodingV14's state, which outlives a DATA frame.
	v14 v14State
}

// NewRecordCoder codes a sequence of records of fields with coding.
func NewRecordCoder(fields Fields, coding Coding) *RecordCoder {
	return &RecordCoder{fields: fields, coding: coding}
}

// ref is the record back records before the next one.
func (c *RecordCoder) ref(back int) *Record {
	return &c.recent[(c.count-back)%StackRefWindow]
}

// threadRef is the stack reference of a CodingV12 record of thread with
// n words at sp: the nearest of the StackRefWindow records before it of
// the same thread (without the THREAD field every thread is 0) whose
// words overlap these addresses, nil for none. Overlap keeps a thread's
// samples on the interrupt stack (handler mode) and on its own apart,
// and finds the same stack in a run without THREAD.
func (c *RecordCoder) threadRef(thread, sp uint32, n int) *Record {
	if c.fields&FieldThread == 0 {
		thread = 0
	}
	for back := 1; back <= min(StackRefWindow, c.count); back++ {
		r := c.ref(back)
		rt := r.Thread
		if c.fields&FieldThread == 0 {
			rt = 0
		}
		if rt == thread && int64(r.SP) < int64(sp)+4*int64(n) && int64(sp) < int64(r.SP)+4*int64(len(r.Stack)) {
			return r
		}
	}
	return nil
}

func (c *RecordCoder) push(r Record) {
	c.prev = r
	if c.fields&FieldStack != 0 {
		c.recent[c.count%StackRefWindow] = r
	}
	if c.coding == CodingV12 {
		copy(c.pcs[1:], c.pcs[:pcSlots-1])
		c.pcs[0] = r.PC
	}
	c.count++
}

// nearestPC is the CodingV12 PC code of pc: the slot of the recent PC
// whose halfword delta has the smallest zigzag value (the first of equals)
// in the low two bits, that value above them.
func (c *RecordCoder) nearestPC(pc uint32) uint64 {
	best, slot := uint64(1)<<62, 0
	for j, h := range c.pcs {
		if v := uint64(zigzag(int32(pc-h) >> 1)); v < best {
			best, slot = v, j
		}
	}
	return best<<2 | uint64(slot)
}

// Append appends r coded against the records before it and makes it one
// of them. The Index is not coded: records are consecutive.
func (c *RecordCoder) Append(b []byte, r Record) []byte {
	if c.coding == CodingV14 {
		return c.appendV14(b, r)
	}
	prev := &c.prev
	if c.coding == CodingV12 {
		b = binary.AppendUvarint(b, c.nearestPC(r.PC))
	} else {
		b = binary.AppendUvarint(b, uint64(zigzag(int32(r.PC-prev.PC)>>1)))
	}
	if c.fields&FieldLR != 0 {
		b = binary.AppendUvarint(b, uint64(zigzag(int32(r.LR-prev.LR))))
	}
	if c.fields&FieldExc != 0 {
		b = binary.AppendUvarint(b, uint64(r.Exc))
	}
	if c.fields&FieldThread != 0 {
		b = binary.AppendUvarint(b, uint64(zigzag(int32(r.Thread-prev.Thread))))
	}
	if c.fields&FieldStack != 0 {
		if c.coding == CodingV12 {
			b = c.appendThreadStack(b, &r)
		} else {
			b = c.appendStack(b, &r)
		}
	}
	c.push(r)
	return b
}

// appendStack appends r's SP and word count and, with words, the
// reference that codes them shortest (none unless one is strictly shorter,
// the nearest of equals) and the runs (CodingV10).
func (c *RecordCoder) appendStack(b []byte, r *Record) []byte {
	b = binary.AppendUvarint(b, uint64(zigzag(int32(r.SP-c.prev.SP))))
	b = binary.AppendUvarint(b, uint64(len(r.Stack)))
	if len(r.Stack) == 0 {
		return b
	}
	bestRef, best := 0, stackRuns(nil, r, nil)
	for back := 1; back <= min(StackRefWindow, c.count); back++ {
		if runs := stackRuns(nil, r, c.ref(back)); len(runs) < len(best) {
			bestRef, best = back, runs
		}
	}
	b = binary.AppendUvarint(b, uint64(bestRef))
	return append(b, best...)
}

// stackSplit is how a CodingV12 stack of sp and n words divides against
// ref: below is the number of its words under ref's top (the words ref
// could cover), common how many of those, counted down from the highest,
// equal ref's words at the same addresses. The words under them and
// those above ref's top are literals.
func stackSplit(sp uint32, words []uint32, ref *Record) (below, common int) {
	below = stackBelow(sp, len(words), ref)
	for common < below {
		w, ok := coveredWord(ref, sp+4*uint32(below-common-1))
		if !ok || w != words[below-common-1] {
			break
		}
		common++
	}
	return below, common
}

// stackBelow is how many of the n words at sp lie under ref's top (0
// without a reference).
func stackBelow(sp uint32, n int, ref *Record) int {
	if ref == nil {
		return 0
	}
	top := int64(ref.SP) + 4*int64(len(ref.Stack))
	return int(min(max((top-int64(sp))/4, 0), int64(n)))
}

// appendThreadStack appends r's STACK part in CodingV12: SP and the word
// count as in CodingV10, and with words the common count and the literals.
func (c *RecordCoder) appendThreadStack(b []byte, r *Record) []byte {
	b = binary.AppendUvarint(b, uint64(zigzag(int32(r.SP-c.prev.SP))))
	b = binary.AppendUvarint(b, uint64(len(r.Stack)))
	if len(r.Stack) == 0 {
		return b
	}
	ref := c.threadRef(r.Thread, r.SP, len(r.Stack))
	below, common := stackSplit(r.SP, r.Stack, ref)
	b = binary.AppendUvarint(b, uint64(common))
	for i, w := range r.Stack {
		if i >= below-common && i < below {
			continue
		}
		base, _ := coveredWord(ref, r.SP+4*uint32(i))
		b = binary.AppendUvarint(b, uint64(zigzag(int32(w-base))))
	}
	return b
}

// coveredWord is ref's word at addr, when ref's stack holds that address.
func coveredWord(ref *Record, addr uint32) (uint32, bool) {
	if ref == nil {
		return 0, false
	}
	off := addr - ref.SP // wraps to a large value below SP
	if off >= 4*uint32(len(ref.Stack)) {
		return 0, false
	}
	return ref.Stack[off/4], true
}

// stackRuns appends the runs of r's words against ref (nil: none): pairs
// of varint(same), varint(diff) and diff literal words, each
// varint(zigzag(word - the reference's word at its address, or 0)). Runs
// are maximal: same runs the words equal to a word ref holds at the same
// address, diff runs the rest.
func stackRuns(b []byte, r *Record, ref *Record) []byte {
	same := func(i int) bool {
		w, ok := coveredWord(ref, r.SP+4*uint32(i))
		return ok && w == r.Stack[i]
	}
	for i := 0; i < len(r.Stack); {
		s := 0
		for i+s < len(r.Stack) && same(i+s) {
			s++
		}
		d := 0
		for i+s+d < len(r.Stack) && !same(i+s+d) {
			d++
		}
		b = binary.AppendUvarint(b, uint64(s))
		b = binary.AppendUvarint(b, uint64(d))
		for k := i + s; k < i+s+d; k++ {
			base, _ := coveredWord(ref, r.SP+4*uint32(k))
			b = binary.AppendUvarint(b, uint64(zigzag(int32(r.Stack[k]-base))))
		}
		i += s + d
	}
	return b
}

// varints reads consecutive varints of b; off is how far it got.
type varints struct {
	b   []byte
	off int
}

func (v *varints) next() (uint32, error) {
	x, n, err := uvarint32(v.b[v.off:])
	v.off += n
	return x, err
}

// nextPC reads a CodingV12 PC code: a zigzagged halfword delta (31 bits)
// above a two-bit slot, so up to 33 bits, still at most 5 bytes.
func (v *varints) nextPC() (uint64, error) {
	x, n := binary.Uvarint(v.b[v.off:])
	if n <= 0 || n > 5 || x >= 1<<33 {
		return 0, errVarint
	}
	v.off += n
	return x, nil
}

// Read decodes one record coded against the records before it, makes it
// one of them and returns it with the number of bytes read. Its Index is
// left 0: the sequence's first index is not coded, the caller numbers it.
func (c *RecordCoder) Read(b []byte) (Record, int, error) {
	if c.coding == CodingV14 {
		return c.readV14(b)
	}
	var r Record
	prev := &c.prev
	in := &varints{b: b}
	next := in.next
	if c.coding == CodingV12 {
		v, err := in.nextPC()
		if err != nil {
			return r, 0, err
		}
		r.PC = c.pcs[v&(pcSlots-1)] + uint32(unzigzag(uint32(v>>2)))<<1
	} else {
		v, err := next()
		if err != nil {
			return r, 0, err
		}
		r.PC = prev.PC + uint32(unzigzag(v))<<1
	}
	var v uint32
	var err error
	if c.fields&FieldLR != 0 {
		if v, err = next(); err != nil {
			return r, 0, err
		}
		r.LR = prev.LR + uint32(unzigzag(v))
	}
	if c.fields&FieldExc != 0 {
		if v, err = next(); err != nil {
			return r, 0, err
		}
		if v > 511 {
			return r, 0, errExcRange
		}
		r.Exc = uint16(v)
	}
	if c.fields&FieldThread != 0 {
		if v, err = next(); err != nil {
			return r, 0, err
		}
		r.Thread = prev.Thread + uint32(unzigzag(v))
	}
	if c.fields&FieldStack != 0 {
		read := c.readStack
		if c.coding == CodingV12 {
			read = c.readThreadStack
		}
		if err := read(in, &r); err != nil {
			return r, 0, err
		}
	}
	c.push(r)
	return r, in.off, nil
}

// readStackHead reads what both codings' STACK parts begin with: SP as a
// delta from the previous record's, and the number of words copied.
func (c *RecordCoder) readStackHead(in *varints, r *Record) (words uint32, err error) {
	v, err := in.next()
	if err != nil {
		return 0, err
	}
	r.SP = c.prev.SP + uint32(unzigzag(v))
	if words, err = in.next(); err != nil {
		return 0, err
	}
	if words > MaxStackWords {
		return 0, errStackWords
	}
	return words, nil
}

// readStack decodes the STACK part of r (protocol §3).
func (c *RecordCoder) readStack(in *varints, r *Record) error {
	next := in.next
	words, err := c.readStackHead(in, r)
	if err != nil || words == 0 {
		return err
	}
	back, err := next()
	if err != nil {
		return err
	}
	var ref *Record
	if back != 0 {
		if back > StackRefWindow || int(back) > c.count {
			return errStackRef
		}
		ref = c.ref(int(back))
	}
	r.Stack = make([]uint32, words)
	return in.readRuns(r, ref, func(i uint32) (uint32, error) {
		v, err := next()
		base, _ := coveredWord(ref, r.SP+4*i)
		return base + uint32(unzigzag(v)), err
	})
}

// readRuns reads the words of r.Stack in runs against ref (codings 0 and
// 2): varint(same), varint(diff), then diff literals, each read by
// literal (which gets the word's index), until the words are covered.
func (in *varints) readRuns(r, ref *Record, literal func(i uint32) (uint32, error)) error {
	words := uint32(len(r.Stack))
	for i := uint32(0); i < words; {
		same, err := in.next()
		if err != nil {
			return err
		}
		diff, err := in.next()
		if err != nil {
			return err
		}
		if same+diff == 0 || uint64(i)+uint64(same)+uint64(diff) > uint64(words) {
			return errStackRun
		}
		for ; same > 0; same-- {
			w, ok := coveredWord(ref, r.SP+4*i)
			if !ok {
				return errStackSame
			}
			r.Stack[i] = w
			i++
		}
		for ; diff > 0; diff-- {
			if r.Stack[i], err = literal(i); err != nil {
				return err
			}
			i++
		}
	}
	return nil
}

// readThreadStack decodes the STACK part of r in CodingV12 (protocol §3).
func (c *RecordCoder) readThreadStack(in *varints, r *Record) error {
	words, err := c.readStackHead(in, r)
	if err != nil || words == 0 {
		return err
	}
	common, err := in.next()
	if err != nil {
		return err
	}
	ref := c.threadRef(r.Thread, r.SP, int(words))
	r.Stack = make([]uint32, words)
	below := stackBelow(r.SP, int(words), ref)
	if int(common) > below {
		return errStackSame
	}
	for i := range r.Stack {
		w, ok := coveredWord(ref, r.SP+4*uint32(i))
		if i >= below-int(common) && i < below {
			if !ok {
				return errStackSame
			}
			r.Stack[i] = w
			continue
		}
		v, err := in.next()
		if err != nil {
			return err
		}
		r.Stack[i] = w + uint32(unzigzag(v))
	}
	return nil
}
