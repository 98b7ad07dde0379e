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

	knownFields = FieldPC | FieldLR | FieldExc | FieldThread | FieldStack
)

// String lists the fields as the --fields flag spells them: "pc,lr,exc,thread,stack".
func (f Fields) String() string {
	var names []string
	for _, n := range fieldNames {
		if f&n.f != 0 {
			names = append(names, n.name)
		}
	}
	if rest := f &^ knownFields; rest != 0 {
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

// recordCoder codes a sequence of records (protocol §3, DATA): each field
// against the same field of the record before, and with FieldStack the
// stack words against one of the stackRefWindow records before. The
// sequence is one DATA frame, or a whole capture file.
type recordCoder struct {
	fields Fields
	prev   Record
	// recent holds the last stackRefWindow records' stacks: record
	// count-back at recent[(count-back) % stackRefWindow].
	recent [stackRefWindow]Record
	count  int
}

func newRecordCoder(fields Fields) *recordCoder { return &recordCoder{fields: fields} }

// ref is the record back records before the next one.
func (c *recordCoder) ref(back int) *Record {
	return &c.recent[(c.count-back)%stackRefWindow]
}

func (c *recordCoder) push(r Record) {
	c.prev = r
	if c.fields&FieldStack != 0 {
		c.recent[c.count%stackRefWindow] = r
	}
	c.count++
}

// append appends r coded against the records before it and makes it one
// of them. The Index is not coded: records are consecutive.
func (c *recordCoder) append(b []byte, r Record) []byte {
	prev := &c.prev
	b = binary.AppendUvarint(b, uint64(zigzag(int32(r.PC-prev.PC)>>1)))
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
		b = c.appendStack(b, &r)
	}
	c.push(r)
	return b
}

// appendStack appends r's SP and word count and, with words, the
// reference that codes them shortest (none unless one is strictly shorter,
// the nearest of equals) and the runs.
func (c *recordCoder) appendStack(b []byte, r *Record) []byte {
	b = binary.AppendUvarint(b, uint64(zigzag(int32(r.SP-c.prev.SP))))
	b = binary.AppendUvarint(b, uint64(len(r.Stack)))
	if len(r.Stack) == 0 {
		return b
	}
	bestRef, best := 0, stackRuns(nil, r, nil)
	for back := 1; back <= min(stackRefWindow, c.count); back++ {
		if runs := stackRuns(nil, r, c.ref(back)); len(runs) < len(best) {
			bestRef, best = back, runs
		}
	}
	b = binary.AppendUvarint(b, uint64(bestRef))
	return append(b, best...)
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

// read decodes one record coded against the records before it, makes it
// one of them and returns it with the number of bytes read.
func (c *recordCoder) read(b []byte) (Record, int, error) {
	var r Record
	prev := &c.prev
	in := &varints{b: b}
	next := in.next
	v, err := next()
	if err != nil {
		return r, 0, err
	}
	r.PC = prev.PC + uint32(unzigzag(v))<<1
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
		if err := c.readStack(in, &r); err != nil {
			return r, 0, err
		}
	}
	c.push(r)
	return r, in.off, nil
}

// readStack decodes the STACK part of r (protocol §3).
func (c *recordCoder) readStack(in *varints, r *Record) error {
	next := in.next
	v, err := next()
	if err != nil {
		return err
	}
	r.SP = c.prev.SP + uint32(unzigzag(v))
	words, err := next()
	if err != nil {
		return err
	}
	if words > MaxStackWords {
		return errStackWords
	}
	if words == 0 {
		return nil
	}
	back, err := next()
	if err != nil {
		return err
	}
	var ref *Record
	if back != 0 {
		if back > stackRefWindow || int(back) > c.count {
			return errStackRef
		}
		ref = c.ref(int(back))
	}
	r.Stack = make([]uint32, words)
	for i := uint32(0); i < words; {
		same, err := next()
		if err != nil {
			return err
		}
		diff, err := next()
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
			v, err := next()
			if err != nil {
				return err
			}
			base, _ := coveredWord(ref, r.SP+4*i)
			r.Stack[i] = base + uint32(unzigzag(v))
			i++
		}
	}
	return nil
}
