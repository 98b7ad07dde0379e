// SPDX-License-Identifier: Apache-2.0

package sample

import (
	"encoding/binary"
	"errors"
)

// CodingV14 (protocol §3, coding 2): the state below lives as long as a
// chain of DATA frames (a key frame starts it empty), so a stack finds
// its thread's last one whatever frame that came in. Every "nearest of"
// picks the candidate whose code is smallest; the candidate's number
// takes the code's low bits.
const (
	// v14SlotBits is the bits of a PC slot and of a literal's candidate.
	v14SlotBits = 5
	// v14Slots is the PCs a PC is coded against and the candidates of a
	// literal stack word (the reference's word, the word before, and the
	// last v14Slots-2 literals).
	v14Slots = 1 << v14SlotBits
	// v14LitBits is the bits of a literal's candidate number: the
	// reference's word, the word before, and the last 6 literals.
	v14LitBits = 3
	// v14DictBits is the bits of a place in the dictionary of literals:
	// the last literal of each of its 64 hash buckets.
	v14DictBits = 6
	// v14Threads is the recent threads a THREAD value may name by place.
	v14Threads = 8
	// v14Refs is the stacks kept as references, one per thread and mode.
	v14Refs = 8
	// V14KeyInterval is how many DATA frames of a chain a device sends
	// before it starts the coding again with a key frame: a lost frame
	// costs at most the frames up to the next key.
	V14KeyInterval = 32
	// MaxRecordSizeV14 is a CodingV14 record's worst case without STACK:
	// PC (37 bits, 6 bytes), LR (5), EXC (2), THREAD (a place of 0 and a
	// delta, 6).
	MaxRecordSizeV14 = 6 + 5 + 2 + 6
	// MaxStackRecordSizeV14 is a CodingV14 STACK record's worst case: the
	// other fields, SP (5), the word count (1), one run pair (2) and
	// MaxStackWords literals of 6 bytes.
	MaxStackRecordSizeV14 = MaxRecordSizeV14 + 5 + 1 + 2 + 6*MaxStackWords
)

// v14State is what CodingV14 codes against besides the previous record.
// Arrays, not slices, so that a copy of the RecordCoder saves it.
type v14State struct {
	pcs     ring                     // the last PCs
	lits    ring                     // the last literal stack words
	dict    [1 << v14DictBits]uint32 // literal stack words by hash
	threads [v14Threads]uint32
	nThread int
	refs    [v14Refs]Record // the last stack of each thread and mode, the newest first
	nRef    int
}

// ring holds the last v14Slots values pushed, 0 before any.
type ring struct {
	v    [v14Slots]uint32
	head uint8
}

func (g *ring) push(v uint32) {
	g.head = (g.head + 1) % v14Slots
	g.v[g.head] = v
}

// at is the j-th newest value (0 the newest).
func (g *ring) at(j int) uint32 { return g.v[(int(g.head)-j)&(v14Slots-1)] }

// dictPlace is w's bucket in the dictionary of literals: the top bits of
// a multiplicative hash.
func dictPlace(w uint32) uint32 { return (w * 0x9E3779B1) >> (32 - v14DictBits) }

// literal is the code of literal stack word w: its dictionary place
// above a 1 when the dictionary holds w there, else its nearest
// candidate's code above a 0. It makes w the newest literal and the
// dictionary's word in its place.
func (c *RecordCoder) literal(r *Record, i int, ref *Record) uint64 {
	w, s := r.Stack[i], &c.v14
	code := s.dictOr(w, nearest(w, false, func(j int) uint32 { return c.literalCandidate(r, i, ref, j) }))
	s.lits.push(w)
	return code
}

// dictOr is the code of w that a dictionary hit may replace: w's place
// above a 1 when the dictionary holds w there, else code above a 0. Then
// w is its place's word.
func (s *v14State) dictOr(w uint32, code uint64) uint64 {
	p := dictPlace(w)
	code <<= 1
	if s.dict[p] == w {
		code = uint64(p)<<1 | 1
	}
	s.dict[p] = w
	return code
}

// fromDict reads a code of dictOr: the dictionary's word for a hit, else
// other(x), x the code above the 0; the word then takes its place. bits
// is the width of the codes other reads.
func (s *v14State) fromDict(in *varints, bits int, other func(x uint64) uint32) (uint32, error) {
	x, n := binary.Uvarint(in.b[in.off:])
	if n <= 0 || n > 6 || x >= 1<<(bits+1) || x&1 != 0 && x>>1 >= 1<<v14DictBits {
		return 0, errCode
	}
	in.off += n
	var w uint32
	if x&1 != 0 {
		w = s.dict[x>>1]
	} else {
		w = other(x >> 1)
	}
	s.dict[dictPlace(w)] = w
	return w, nil
}

var (
	errThreadPlace = errors.New("thread refers to a place among recent threads that is empty")
	errCode        = errors.New("truncated or over-long code")
)

// refKey says whose stack r is: its thread (0 without THREAD) and
// whether it is in handler mode (on the interrupt stack; never without
// EXC).
func (c *RecordCoder) refKey(r *Record) (thread uint32, handler bool) {
	if c.fields&FieldThread != 0 {
		thread = r.Thread
	}
	return thread, c.fields&FieldExc != 0 && r.Exc != 0
}

// lastStack is the newest kept stack of r's thread and mode, or nil:
// r's LR and SP are coded against its own.
func (c *RecordCoder) lastStack(r *Record) *Record {
	return c.keptStack(r, func(*Record) bool { return true })
}

// stackRef is the newest kept stack of r's thread and mode whose words
// overlap r's, or nil: r's words are coded against it. Overlap tells
// apart the stacks of a run without THREAD.
func (c *RecordCoder) stackRef(r *Record) *Record {
	return c.keptStack(r, func(k *Record) bool {
		return int64(k.SP) < int64(r.SP)+4*int64(len(r.Stack)) && int64(r.SP) < int64(k.SP)+4*int64(len(k.Stack))
	})
}

func (c *RecordCoder) keptStack(r *Record, ok func(k *Record) bool) *Record {
	thread, handler := c.refKey(r)
	s := &c.v14
	for i := range s.nRef {
		if t, h := c.refKey(&s.refs[i]); t == thread && h == handler && ok(&s.refs[i]) {
			return &s.refs[i]
		}
	}
	return nil
}

// keepRef keeps r's stack as the newest, in place of its reference ref
// (nil: none); without one the oldest of v14Refs goes when they are all
// taken.
func (c *RecordCoder) keepRef(r Record, ref *Record) {
	s := &c.v14
	i := min(s.nRef, v14Refs-1)
	if ref != nil {
		for i = 0; &s.refs[i] != ref; i++ {
		}
	} else {
		s.nRef = min(s.nRef+1, v14Refs)
	}
	copy(s.refs[1:i+1], s.refs[:i])
	s.refs[0] = r
}

// threadPlace is 1 + thread's place among the recent threads, 0 when it
// is not among them; useThread then makes it the newest.
func (s *v14State) threadPlace(thread uint32) int {
	for i := range s.nThread {
		if s.threads[i] == thread {
			return i + 1
		}
	}
	return 0
}

func (s *v14State) useThread(thread uint32) {
	i := s.threadPlace(thread) - 1
	if i < 0 {
		i = min(s.nThread, v14Threads-1)
		s.nThread = min(s.nThread+1, v14Threads)
	}
	copy(s.threads[1:i+1], s.threads[:i])
	s.threads[0] = thread
}

// nearest is the code of v against candidate(0..v14Slots-1): the
// smallest of zigzag(v - candidate) << 5 | j, so the lowest-numbered of
// equally near ones. PCs pass halfword deltas (half set).
func nearest(v uint32, half bool, candidate func(j int) uint32) uint64 {
	best := uint64(1) << 40
	bits := v14SlotBits
	if !half {
		bits = v14LitBits
	}
	for j := range 1 << bits {
		d := int32(v - candidate(j))
		if half {
			d >>= 1
		}
		if code := uint64(zigzag(d))<<bits | uint64(j); code < best {
			best = code
		}
	}
	return best
}

// literalCandidate is candidate j of stack word i of r against ref: the
// reference's word at its address (0 where it has none), the word before
// it in r (0 for the first), then the last literals, the newest first.
func (c *RecordCoder) literalCandidate(r *Record, i int, ref *Record, j int) uint32 {
	switch j {
	case 0:
		w, _ := coveredWord(ref, r.SP+4*uint32(i))
		return w
	case 1:
		if i == 0 {
			return 0
		}
		return r.Stack[i-1]
	}
	return c.v14.lits.at(j - 2)
}

// excInThread says whether r's EXC goes with its THREAD (a run with
// both): the thread's place code says in its low bit whether the
// exception number is not 0, and only then does the number follow.
func (c *RecordCoder) excInThread() bool {
	return c.fields&(FieldExc|FieldThread) == FieldExc|FieldThread
}

// appendV14 appends r in CodingV14: PC, EXC, THREAD, LR, STACK.
func (c *RecordCoder) appendV14(b []byte, r Record) []byte {
	r.Index = 0 // not coded: the state holds what a decoder has too
	s := &c.v14
	b = binary.AppendUvarint(b, nearest(r.PC, true, s.pcs.at))
	if c.fields&FieldExc != 0 && !c.excInThread() {
		b = binary.AppendUvarint(b, uint64(r.Exc))
	}
	if c.fields&FieldThread != 0 {
		place := uint64(s.threadPlace(r.Thread))
		if c.excInThread() {
			place = place<<1 | uint64(boolBit(r.Exc != 0))
		}
		b = binary.AppendUvarint(b, place)
		if s.threadPlace(r.Thread) == 0 {
			b = binary.AppendUvarint(b, uint64(zigzag(int32(r.Thread-c.prev.Thread))))
		}
		if c.excInThread() && r.Exc != 0 {
			b = binary.AppendUvarint(b, uint64(r.Exc))
		}
		s.useThread(r.Thread)
	}
	var last *Record
	if c.fields&FieldStack != 0 {
		last = c.lastStack(&r)
	}
	if c.fields&FieldLR != 0 {
		base := c.prev.LR
		if last != nil {
			base = last.LR
		}
		code := uint64(zigzag(int32(r.LR - base)))
		if c.fields&FieldStack != 0 {
			// LR is often a return address a stack held before.
			code = s.dictOr(r.LR, code)
		}
		b = binary.AppendUvarint(b, code)
	}
	if c.fields&FieldStack != 0 {
		b = c.appendStackV14(b, &r, last)
	}
	c.prev = r
	s.pcs.push(r.PC)
	return b
}

// appendStackV14 appends SP (against last's), the word count, and the
// words in runs against the reference, each literal against the nearest
// of its candidates; then keeps r's stack.
func (c *RecordCoder) appendStackV14(b []byte, r, last *Record) []byte {
	base := c.prev.SP
	if last != nil {
		base = last.SP
	}
	b = binary.AppendUvarint(b, uint64(zigzag(int32(r.SP-base)))<<v14CountBits|uint64(len(r.Stack)))
	ref := c.stackRef(r)
	defer c.keepRef(*r, ref)
	for i := 0; i < len(r.Stack); {
		s := sameRun(r, i, ref)
		if s < v14MinRun {
			s = 0
		}
		d := 0
		for i+s+d < len(r.Stack) {
			if sameRun(r, i+s+d, ref) >= v14MinRun {
				break
			}
			d++
		}
		b = binary.AppendUvarint(b, uint64(s))
		b = binary.AppendUvarint(b, uint64(d))
		for k := i + s; k < i+s+d; k++ {
			b = binary.AppendUvarint(b, c.literal(r, k, ref))
		}
		i += s + d
	}
	return b
}

// v14MinRun is the shortest same run a device sends: a single word equal
// to the reference's costs a byte as a literal, a run pair two.
const v14MinRun = 2

// sameRun is how many words of r from word i equal ref's words at the
// same addresses.
func sameRun(r *Record, i int, ref *Record) int {
	n := 0
	for ; i+n < len(r.Stack); n++ {
		w, ok := coveredWord(ref, r.SP+4*uint32(i+n))
		if !ok || w != r.Stack[i+n] {
			break
		}
	}
	return n
}

// v14CountBits is the bits of a stack's word count below its SP delta.
const v14CountBits = 7

func boolBit(v bool) int {
	if v {
		return 1
	}
	return 0
}

// nextCode reads a code of a value of up to 32 bits above a number of
// bits bits (at most 7): at most 6 bytes, below 2^(32+bits). It returns
// the value and the number.
func (v *varints) nextCode(bits int) (uint32, int, error) {
	x, n := binary.Uvarint(v.b[v.off:])
	if n <= 0 || n > 6 || x >= 1<<(32+bits) {
		return 0, 0, errCode
	}
	v.off += n
	return uint32(x >> bits), int(x & (1<<bits - 1)), nil
}

// readV14 decodes one CodingV14 record (see appendV14).
func (c *RecordCoder) readV14(b []byte) (Record, int, error) {
	var r Record
	s := &c.v14
	in := &varints{b: b}
	v, j, err := in.nextCode(v14SlotBits)
	if err != nil {
		return r, 0, err
	}
	r.PC = s.pcs.at(j) + uint32(unzigzag(v))<<1
	readExc := func() error {
		v, err := in.next()
		if err != nil {
			return err
		}
		if v > 511 {
			return errExcRange
		}
		r.Exc = uint16(v)
		return nil
	}
	if c.fields&FieldExc != 0 && !c.excInThread() {
		if err := readExc(); err != nil {
			return r, 0, err
		}
	}
	if c.fields&FieldThread != 0 {
		place, err := in.next()
		if err != nil {
			return r, 0, err
		}
		handler := false
		if c.excInThread() {
			place, handler = place>>1, place&1 != 0
		}
		switch {
		case place == 0:
			if v, err = in.next(); err != nil {
				return r, 0, err
			}
			r.Thread = c.prev.Thread + uint32(unzigzag(v))
		case int(place) > s.nThread:
			return r, 0, errThreadPlace
		default:
			r.Thread = s.threads[place-1]
		}
		if handler {
			if err := readExc(); err != nil {
				return r, 0, err
			}
		}
		s.useThread(r.Thread)
	}
	var last *Record
	if c.fields&FieldStack != 0 {
		last = c.lastStack(&r)
	}
	if c.fields&FieldLR != 0 {
		base := c.prev.LR
		if last != nil {
			base = last.LR
		}
		if c.fields&FieldStack != 0 {
			r.LR, err = s.fromDict(in, 32, func(x uint64) uint32 { return base + uint32(unzigzag(uint32(x))) })
		} else {
			v, err = in.next()
			r.LR = base + uint32(unzigzag(v))
		}
		if err != nil {
			return r, 0, err
		}
	}
	if c.fields&FieldStack != 0 {
		if err := c.readStackV14(in, &r, last); err != nil {
			return r, 0, err
		}
	}
	c.prev = r
	s.pcs.push(r.PC)
	return r, in.off, nil
}

// readStackV14 decodes the STACK part of a CodingV14 record and keeps
// its stack.
func (c *RecordCoder) readStackV14(in *varints, r, last *Record) error {
	v, words, err := in.nextCode(v14CountBits)
	if err != nil {
		return err
	}
	base := c.prev.SP
	if last != nil {
		base = last.SP
	}
	r.SP = base + uint32(unzigzag(v))
	if words > MaxStackWords {
		return errStackWords
	}
	if words > 0 {
		r.Stack = make([]uint32, words)
	}
	ref := c.stackRef(r)
	err = in.readRuns(r, ref, func(i uint32) (uint32, error) {
		w, err := c.v14.fromDict(in, 32+v14LitBits, func(x uint64) uint32 {
			return c.literalCandidate(r, int(i), ref, int(x&(1<<v14LitBits-1))) + uint32(unzigzag(uint32(x>>v14LitBits)))
		})
		c.v14.lits.push(w)
		return w, err
	})
	if err != nil {
		return err
	}
	c.keepRef(*r, ref)
	return nil
}
