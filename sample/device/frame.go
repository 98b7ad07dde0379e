// SPDX-License-Identifier: Apache-2.0

// Package device takes captures from the firmware-sampler: the wire
// protocol (firmware-sampler/docs/protocol.md), its COBS framing and
// decoder, the serial transport and the drain session. What a run leaves,
// the sample.Capture and its file, is package sample's; devicetest is a
// fake device that speaks the protocol over a pty.

package device

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/tcmprof/tcmprof/internal/wording"
	"github.com/tcmprof/tcmprof/sample"
	"hash/crc32"
)

// Protocol limits and version from firmware-sampler/docs/protocol.md;
// those a capture obeys too (the build-id's length, stack words, record
// sizes) are package sample's.
const (
	ProtoMajor = 1
	ProtoMinor = 4

	// MaxPayload is the largest payload (type ‖ body ‖ crc) of a frame.
	MaxPayload = 512
	// maxEncoded is the largest COBS form of a payload.
	maxEncoded = MaxPayload + (MaxPayload+253)/254
	// minPayload is a type byte plus the CRC.
	minPayload = 5
	// DefaultStackWords is what a device uses when START asks for 0.
	DefaultStackWords = 32
	// MaxJitterPct is the largest interval jitter a START may ask for
	// (the firmware's TCMP_MAX_JITTER_PCT); DefaultJitterPct is the
	// firmware's Kconfig default (TCMPROF_SAMPLER_JITTER_PCT), the ±25 %
	// that keeps sampling from locking onto periodic activity.
	MaxJitterPct     = 50
	DefaultJitterPct = 25
	// MaxRateHz is the highest sampling rate any sampler build takes: the
	// top of the Zephyr module's TCMPROF_SAMPLER_MAX_RATE_HZ range. A
	// build's own limit (DefaultMaxRateHz unless configured) may be lower.
	MaxRateHz        = 1_000_000
	DefaultMaxRateHz = 100_000
)

// FrameType is the first payload byte. Device frames are below 0x80,
// host commands at or above.
type FrameType uint8

// Frame types.
const (
	TypeHeader   FrameType = 0x01
	TypeData     FrameType = 0x02
	TypeEnd      FrameType = 0x03
	TypeReply    FrameType = 0x04
	TypeThreads  FrameType = 0x05
	TypeStackTop FrameType = 0x06 // protocol 1.3
	TypeStart    FrameType = 0x81
	TypeStop     FrameType = 0x82
	TypeStatus   FrameType = 0x83
	TypeDrain    FrameType = 0x84
	TypeDone     FrameType = 0x85
)

var frameTypeNames = map[FrameType]string{
	TypeHeader:   "HEADER",
	TypeData:     "DATA",
	TypeEnd:      "END",
	TypeReply:    "REPLY",
	TypeThreads:  "THREADS",
	TypeStackTop: "STACK_TOP",
	TypeStart:    "START",
	TypeStop:     "STOP",
	TypeStatus:   "STATUS",
	TypeDrain:    "DRAIN",
	TypeDone:     "DONE",
}

func (t FrameType) String() string { return wording.Name(frameTypeNames, t, "type 0x%02x") }

// Frame is one decoded frame: *HeaderFrame, *Data, *End, *Reply,
// *Threads, *StackTopFrame, *Start, *Stop, *Status, *Drain, *Done or
// *Unknown.
type Frame interface {
	Type() FrameType
	appendBody(dst []byte) []byte
}

// Data is a DATA frame: Records are numbered First, First+1, ...
type Data struct {
	First  uint32
	Fields sample.Fields // the run's fields; not on the wire, the decoder supplies them
	Coding sample.Coding // the run's record coding; not on the wire either
	// Continues says the records are coded against the state the DATA
	// frame that ends at First left (CodingV14); false for a key frame,
	// which starts the coding again, and in older codings.
	Continues bool
	Records   []sample.Record
	// start is the coding state before the first record of a frame that
	// continues (a DataWriter's).
	start *sample.RecordCoder
}

// EndReason says why an END was sent.
type EndReason uint8

// END reasons.
const (
	EndDrained       EndReason = 0
	EndStreamStopped EndReason = 1
)

// End is the END frame closing a drain or a stream run.
type End struct {
	Reason                 EndReason
	First, Next            uint32 // records [First, Next) were sent
	Taken, Dropped, Stored uint32
}

// ReplyStatus is the status in a REPLY.
type ReplyStatus uint8

// REPLY statuses.
const (
	StatusOK          ReplyStatus = 0
	StatusUnknown     ReplyStatus = 1
	StatusBadArg      ReplyStatus = 2
	StatusBusy        ReplyStatus = 3
	StatusUnavailable ReplyStatus = 4
	StatusMalformed   ReplyStatus = 5
)

var replyStatusNames = map[ReplyStatus]string{
	StatusOK:          "OK",
	StatusUnknown:     "UNKNOWN",
	StatusBadArg:      "BAD_ARG",
	StatusBusy:        "BUSY",
	StatusUnavailable: "UNAVAILABLE",
	StatusMalformed:   "MALFORMED",
}

func (s ReplyStatus) String() string { return wording.Name(replyStatusNames, s, "status %d") }

// Reply is the device's answer to a command.
type Reply struct {
	Command FrameType // the command answered; 0 when it could not be read
	Status  ReplyStatus
}

// HeaderFrame is the HEADER frame. Its body is the capture's
// sample.Header: a capture keeps the device's last one as it came.
type HeaderFrame struct{ sample.Header }

// StackTopFrame is one STACK_TOP frame (protocol 1.3); its body is the
// capture's sample.StackTop, which a capture keeps by thread.
type StackTopFrame struct{ sample.StackTop }

// Thread names one thread id; names are at most 31 bytes.
type Thread struct {
	ID   uint32
	Name string
}

// Threads is one THREADS frame; a table may span several.
type Threads struct {
	Entries []Thread
}

// Start is the START command.
type Start struct {
	RateHz     uint32 // 0 = the device default
	JitterPct  uint8
	Fields     sample.Fields
	Mode       sample.Mode
	Count      uint32 // 0 = until full or stopped
	DurationMS uint32 // 0 = none
	StackWords uint8  // with FieldStack: K, MinStackWords..MaxStackWords; 0 = DefaultStackWords
	// Coding asks for a record coding (protocol 1.2, in a byte older
	// devices ignore); the HEADER says which one the device uses.
	Coding sample.Coding
}

// Stop is the STOP command.
type Stop struct{}

// Status is the STATUS command; the device answers with a HEADER.
type Status struct{}

// Drain is the DRAIN command: records [From, From+Count); Count 0 = to the last stored.
type Drain struct {
	From, Count uint32
}

// Done is the DONE command: the device releases the held records.
type Done struct{}

// Unknown is a frame of a type this version does not know.
type Unknown struct {
	FrameType FrameType
	Body      []byte
}

func (*HeaderFrame) Type() FrameType   { return TypeHeader }
func (*Data) Type() FrameType          { return TypeData }
func (*End) Type() FrameType           { return TypeEnd }
func (*Reply) Type() FrameType         { return TypeReply }
func (*Threads) Type() FrameType       { return TypeThreads }
func (*StackTopFrame) Type() FrameType { return TypeStackTop }
func (*Start) Type() FrameType         { return TypeStart }
func (*Stop) Type() FrameType          { return TypeStop }
func (*Status) Type() FrameType        { return TypeStatus }
func (*Drain) Type() FrameType         { return TypeDrain }
func (*Done) Type() FrameType          { return TypeDone }
func (u *Unknown) Type() FrameType {
	return u.FrameType
}

// AppendFrame appends f as it goes on the wire: 0x00, COBS(type ‖ body ‖
// crc), 0x00. It fails only when the payload would exceed MaxPayload.
func AppendFrame(dst []byte, f Frame) ([]byte, error) {
	payload := f.appendBody([]byte{byte(f.Type())})
	if len(payload)+4 > MaxPayload {
		return dst, fmt.Errorf("%v frame payload of %d bytes exceeds %d", f.Type(), len(payload)+4, MaxPayload)
	}
	payload = binary.LittleEndian.AppendUint32(payload, crc32.ChecksumIEEE(payload))
	dst = append(dst, 0)
	dst = appendCOBS(dst, payload)
	return append(dst, 0), nil
}

// EncodeFrame returns f as it goes on the wire (see AppendFrame).
func EncodeFrame(f Frame) ([]byte, error) { return AppendFrame(nil, f) }

func (h *HeaderFrame) appendBody(b []byte) []byte {
	b = append(b, h.ProtoMajor, h.ProtoMinor, h.SamplerVersion[0], h.SamplerVersion[1], h.SamplerVersion[2],
		byte(h.State), byte(h.Mode), byte(h.Fields), h.JitterPct, byte(h.Coding))
	for _, v := range []uint32{h.CPUHz, h.TimerHz, h.IntervalTicks, h.Capacity, h.Taken, h.Dropped, h.Stored, h.HeldFrom} {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	b = append(b, byte(len(h.BuildID)))
	b = append(b, h.BuildID...)
	return append(b, h.StackWords)
}

// FillData is the device's fill rule (protocol.md) for one frame that
// starts a chain: the DATA frame of the records at the start of recs,
// numbered from first, that a device sends together. The rest go in
// later frames (see DataWriter).
func FillData(first uint32, fields sample.Fields, coding sample.Coding, recs []sample.Record) *Data {
	return NewDataWriter(fields, coding).Fill(first, recs)
}

// DataWriter frames the records of a run one DATA frame after another as
// a device does: in CodingV14 a frame continues the coding of the one
// before when it takes the records after it, except every
// sample.V14KeyInterval-th, which is a key frame again.
type DataWriter struct {
	fields sample.Fields
	coding sample.Coding
	coder  *sample.RecordCoder // the state after the last frame (CodingV14)
	next   uint32              // the index after the last frame's records
	chain  int                 // frames since the last key frame, 0 before any
}

// NewDataWriter frames records of fields in coding.
func NewDataWriter(fields sample.Fields, coding sample.Coding) *DataWriter {
	return &DataWriter{fields: fields, coding: coding}
}

// Fill is the next DATA frame: the records at the start of recs,
// numbered from first, that the fill rule (protocol.md) puts in it.
// Without FieldStack in codings 0 and 1 it adds records while a
// worst-case record (MaxRecordSize) still fits in the payload; with
// FieldStack, and in CodingV14, while the next record itself fits.
func (w *DataWriter) Fill(first uint32, recs []sample.Record) *Data {
	d := &Data{First: first, Fields: w.fields, Coding: w.coding}
	size := 1 + 4 + 2 + 4 // type, first index, count, CRC
	c := sample.NewRecordCoder(w.fields, w.coding)
	if w.coding == sample.CodingV14 {
		size++ // the key byte
		d.Continues = w.chain != 0 && w.chain < sample.V14KeyInterval && first == w.next
		if d.Continues {
			start := *w.coder
			d.start, c = &start, w.coder
		}
	}
	fitsAny := w.fields&sample.FieldStack != 0 || w.coding == sample.CodingV14
	var scratch []byte
	n := 0
	for ; n < len(recs); n++ {
		if !fitsAny && size+sample.MaxRecordSize > MaxPayload {
			break
		}
		saved := *c
		scratch = c.Append(scratch[:0], recs[n])
		if size+len(scratch) > MaxPayload {
			*c = saved
			break
		}
		size += len(scratch)
	}
	d.Records = recs[:n]
	if w.coding == sample.CodingV14 {
		w.coder, w.next = c, first+uint32(n)
		w.chain++
		if !d.Continues {
			w.chain = 1
		}
	}
	return d
}

func (d *Data) appendBody(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, d.First)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(d.Records)))
	c := sample.NewRecordCoder(d.Fields, d.Coding)
	if d.Coding == sample.CodingV14 {
		b = append(b, boolByte(d.Continues))
		if d.Continues {
			start := *d.start
			c = &start
		}
	}
	for _, r := range d.Records {
		b = c.Append(b, r)
	}
	return b
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

func (e *End) appendBody(b []byte) []byte {
	b = append(b, byte(e.Reason))
	for _, v := range []uint32{e.First, e.Next, e.Taken, e.Dropped, e.Stored} {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

func (r *Reply) appendBody(b []byte) []byte { return append(b, byte(r.Command), byte(r.Status)) }

func (t *Threads) appendBody(b []byte) []byte {
	b = append(b, byte(len(t.Entries)))
	for _, e := range t.Entries {
		b = binary.LittleEndian.AppendUint32(b, e.ID)
		b = append(b, byte(len(e.Name)))
		b = append(b, e.Name...)
	}
	return b
}

func (t *StackTopFrame) appendBody(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, t.Thread)
	b = binary.LittleEndian.AppendUint32(b, t.Top)
	b = append(b, byte(len(t.Words)))
	for _, w := range t.Words {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return b
}

func (s *Start) appendBody(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, s.RateHz)
	b = append(b, s.JitterPct, byte(s.Fields), byte(s.Mode), byte(s.Coding))
	b = binary.LittleEndian.AppendUint32(b, s.Count)
	b = binary.LittleEndian.AppendUint32(b, s.DurationMS)
	if s.Fields&sample.FieldStack == 0 && s.StackWords == 0 {
		return b // the body of 1.0
	}
	return append(b, s.StackWords) // appended in 1.1
}

func (*Stop) appendBody(b []byte) []byte   { return b }
func (*Status) appendBody(b []byte) []byte { return b }
func (d *Drain) appendBody(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, d.From)
	return binary.LittleEndian.AppendUint32(b, d.Count)
}
func (*Done) appendBody(b []byte) []byte      { return b }
func (u *Unknown) appendBody(b []byte) []byte { return append(b, u.Body...) }

// Errors of ParsePayload.
var (
	ErrShortPayload = errors.New("payload shorter than 5 bytes")
	ErrLongPayload  = errors.New("payload longer than 512 bytes")
	ErrCRC          = errors.New("CRC mismatch")
	// ErrNewerProtocol is wrapped by the error for a HEADER of a newer
	// protocol major version, which this host must not misread.
	ErrNewerProtocol = errors.New("newer protocol")
	// ErrBrokenChain is the error for a DATA frame that continues the
	// coding of records this host did not read (CodingV14: a frame
	// before it was lost); the records up to the next key frame are lost
	// with it.
	ErrBrokenChain = errors.New("DATA frame continues the coding of records that did not arrive")
)

// dataChain is CodingV14's state between the DATA frames of a chain: the
// coder as the last frame read left it and the index after its records.
type dataChain struct {
	coder *sample.RecordCoder
	next  uint32
}

// ParsePayload decodes one frame payload (type ‖ body ‖ crc, after COBS).
// fields and coding say how DATA records are coded; the wire does not
// repeat them.
// A body longer than its type defines is accepted (minor versions append);
// a shorter one is an error.
// A DATA frame that continues the coding of an earlier one (CodingV14)
// cannot be read alone: ParsePayload answers ErrBrokenChain (a Decoder
// reads it).
func ParsePayload(p []byte, fields sample.Fields, coding sample.Coding) (Frame, error) {
	return parsePayload(p, fields, coding, nil)
}

// parsePayload is ParsePayload with the chain a continuing DATA frame
// needs (nil: none); a DATA frame read in CodingV14 leaves its state in
// chain.
func parsePayload(p []byte, fields sample.Fields, coding sample.Coding, chain *dataChain) (Frame, error) {
	if len(p) < minPayload {
		return nil, ErrShortPayload
	}
	if len(p) > MaxPayload {
		return nil, ErrLongPayload
	}
	n := len(p) - 4
	if crc32.ChecksumIEEE(p[:n]) != binary.LittleEndian.Uint32(p[n:]) {
		return nil, ErrCRC
	}
	t, body := FrameType(p[0]), p[1:n]
	f, err := parseBody(t, body, fields, coding, chain)
	if err != nil {
		return nil, fmt.Errorf("%v frame: %w", t, err)
	}
	return f, nil
}

// bodyReader reads little-endian fields and remembers the first shortage.
type bodyReader struct {
	b   []byte
	bad bool
}

// take returns the next n bytes, or nil (and marks the shortage) when the
// body has fewer.
func (r *bodyReader) take(n int) []byte {
	if len(r.b) < n {
		r.bad = true
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *bodyReader) u8() uint8 {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *bodyReader) u16() uint16 {
	if b := r.take(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (r *bodyReader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

// bytes copies the next n bytes, so the frame does not alias the decoder's buffer.
func (r *bodyReader) bytes(n int) []byte { return append([]byte(nil), r.take(n)...) }

var errShortBody = errors.New("body too short")

func parseBody(t FrameType, body []byte, fields sample.Fields, coding sample.Coding, chain *dataChain) (Frame, error) {
	r := &bodyReader{b: body}
	var f Frame
	switch t {
	case TypeHeader:
		h := &HeaderFrame{sample.Header{ProtoMajor: r.u8(), ProtoMinor: r.u8()}}
		h.SamplerVersion = [3]uint8{r.u8(), r.u8(), r.u8()}
		h.State, h.Mode, h.Fields, h.JitterPct = sample.State(r.u8()), sample.Mode(r.u8()), sample.Fields(r.u8()), r.u8()
		h.Coding = sample.Coding(r.u8()) // reserved (0) before 1.2
		h.CPUHz, h.TimerHz, h.IntervalTicks, h.Capacity = r.u32(), r.u32(), r.u32(), r.u32()
		h.Taken, h.Dropped, h.Stored, h.HeldFrom = r.u32(), r.u32(), r.u32(), r.u32()
		n := int(r.u8())
		if n > sample.MaxBuildID {
			return nil, fmt.Errorf("build-id of %d bytes (at most %d)", n, sample.MaxBuildID)
		}
		h.BuildID = r.bytes(n)
		if len(r.b) > 0 { // appended in 1.1
			h.StackWords = r.u8()
		}
		if h.ProtoMajor > ProtoMajor && !r.bad {
			return nil, fmt.Errorf("%w: the sampler speaks protocol version %d.%d, newer than this tcmprof reads (%d.%d); update tcmprof",
				ErrNewerProtocol, h.ProtoMajor, h.ProtoMinor, ProtoMajor, ProtoMinor)
		}
		f = h
	case TypeData:
		d := &Data{First: r.u32(), Fields: fields, Coding: coding}
		k := int(r.u16())
		if r.bad {
			break
		}
		if k == 0 {
			return nil, errors.New("no records")
		}
		c := sample.NewRecordCoder(fields, coding)
		if coding == sample.CodingV14 {
			d.Continues = r.u8() != 0
			if r.bad {
				break
			}
			if d.Continues {
				if chain == nil || chain.coder == nil || chain.next != d.First {
					return nil, ErrBrokenChain
				}
				start := *chain.coder
				d.start, c = &start, chain.coder
				chain.coder = nil // broken until this frame reads in full
			}
		}
		d.Records = make([]sample.Record, 0, min(k, len(r.b)))
		for i := 0; i < k; i++ {
			rec, n, err := c.Read(r.b)
			if err != nil {
				return nil, fmt.Errorf("record %d of %d: %w", i, k, err)
			}
			r.b = r.b[n:]
			rec.Index = d.First + uint32(i)
			d.Records = append(d.Records, rec)
		}
		if chain != nil && coding == sample.CodingV14 {
			chain.coder, chain.next = c, d.First+uint32(k)
		}
		f = d
	case TypeEnd:
		f = &End{Reason: EndReason(r.u8()), First: r.u32(), Next: r.u32(), Taken: r.u32(), Dropped: r.u32(), Stored: r.u32()}
	case TypeReply:
		f = &Reply{Command: FrameType(r.u8()), Status: ReplyStatus(r.u8())}
	case TypeThreads:
		t := &Threads{}
		count := int(r.u8())
		for i := 0; i < count && !r.bad; i++ {
			id := r.u32()
			name := r.bytes(int(r.u8()))
			t.Entries = append(t.Entries, Thread{ID: id, Name: string(name)})
		}
		f = t
	case TypeStackTop:
		st := &StackTopFrame{sample.StackTop{Thread: r.u32(), Top: r.u32()}}
		n := int(r.u8())
		if n > sample.MaxStackTopWords {
			return nil, fmt.Errorf("%d stack-top words (at most %d)", n, sample.MaxStackTopWords)
		}
		if uint64(n)*4 > uint64(st.Top) {
			return nil, fmt.Errorf("%d stack-top words below address %#x", n, st.Top)
		}
		for i := 0; i < n && !r.bad; i++ {
			st.Words = append(st.Words, r.u32())
		}
		f = st
	case TypeStart:
		s := &Start{RateHz: r.u32(), JitterPct: r.u8(), Fields: sample.Fields(r.u8()), Mode: sample.Mode(r.u8())}
		s.Coding = sample.Coding(r.u8()) // reserved (0) before 1.2
		s.Count, s.DurationMS = r.u32(), r.u32()
		if len(r.b) > 0 { // appended in 1.1
			s.StackWords = r.u8()
		}
		f = s
	case TypeStop:
		f = &Stop{}
	case TypeStatus:
		f = &Status{}
	case TypeDrain:
		f = &Drain{From: r.u32(), Count: r.u32()}
	case TypeDone:
		f = &Done{}
	default:
		f = &Unknown{FrameType: t, Body: append([]byte(nil), body...)}
	}
	if r.bad {
		return nil, errShortBody
	}
	return f, nil
}
