// SPDX-License-Identifier: Apache-2.0

package device

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"github.com/tcmprof/tcmprof/sample"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func seq(from, to int) []byte {
	var b []byte
	for i := from; i <= to; i++ {
		b = append(b, byte(i))
	}
	return b
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// The examples of the COBS article (Wikipedia, "Consistent Overhead Byte
// Stuffing"), which follow Cheshire & Baker.
func TestCOBSKnownVectors(t *testing.T) {
	tests := []struct{ raw, enc []byte }{
		{[]byte{}, []byte{0x01}},
		{[]byte{0x00}, []byte{0x01, 0x01}},
		{[]byte{0x00, 0x00}, []byte{0x01, 0x01, 0x01}},
		{[]byte{0x00, 0x11, 0x00}, []byte{0x01, 0x02, 0x11, 0x01}},
		{[]byte{0x11, 0x22, 0x00, 0x33}, []byte{0x03, 0x11, 0x22, 0x02, 0x33}},
		{[]byte{0x11, 0x22, 0x33, 0x44}, []byte{0x05, 0x11, 0x22, 0x33, 0x44}},
		{[]byte{0x11, 0x00, 0x00, 0x00}, []byte{0x02, 0x11, 0x01, 0x01, 0x01}},
		{seq(1, 254), cat([]byte{0xFF}, seq(1, 254))},
		{cat([]byte{0}, seq(1, 254)), cat([]byte{0x01, 0xFF}, seq(1, 254))},
		{seq(1, 255), cat([]byte{0xFF}, seq(1, 254), []byte{0x02, 0xFF})},
		{cat(seq(2, 255), []byte{0}), cat([]byte{0xFF}, seq(2, 255), []byte{0x01, 0x01})},
		{cat(seq(3, 255), []byte{0, 1}), cat([]byte{0xFE}, seq(3, 255), []byte{0x02, 0x01})},
	}
	for _, tt := range tests {
		enc := appendCOBS(nil, tt.raw)
		if !bytes.Equal(enc, tt.enc) {
			t.Errorf("appendCOBS(% x)\n got % x\nwant % x", tt.raw, enc, tt.enc)
		}
		dec, ok := decodeCOBS(nil, tt.enc)
		if !ok || !bytes.Equal(dec, tt.raw) {
			t.Errorf("decodeCOBS(% x) = % x, %v; want % x", tt.enc, dec, ok, tt.raw)
		}
	}
	// The non-minimal form with a trailing 0x01 after a full block decodes the same.
	if dec, ok := decodeCOBS(nil, cat([]byte{0xFF}, seq(1, 254), []byte{0x01})); !ok || !bytes.Equal(dec, seq(1, 254)) {
		t.Errorf("trailing 0x01 form: % x, %v", dec, ok)
	}
	for _, bad := range [][]byte{{0x03, 0x11}, {0x02, 0x00}, {0x00}} {
		if _, ok := decodeCOBS(nil, bad); ok {
			t.Errorf("decodeCOBS(% x) accepted invalid input", bad)
		}
	}
}

func TestCOBSRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		raw := make([]byte, rng.IntN(1200))
		for j := range raw {
			if rng.IntN(4) > 0 {
				raw[j] = byte(rng.IntN(256))
			}
		}
		enc := appendCOBS(nil, raw)
		if bytes.IndexByte(enc, 0) >= 0 {
			t.Fatalf("encoding of % x contains 0x00", raw)
		}
		if len(enc) > len(raw)+1+len(raw)/254 {
			t.Fatalf("encoding of %d bytes is %d bytes", len(raw), len(enc))
		}
		dec, ok := decodeCOBS(nil, enc)
		if !ok || !bytes.Equal(dec, raw) {
			t.Fatalf("round trip of % x failed", raw)
		}
	}
}

// sampleFrames has one of every frame type, with edge values.
func sampleFrames() []Frame {
	all := sample.FieldPC | sample.FieldLR | sample.FieldExc | sample.FieldThread
	return []Frame{
		&HeaderFrame{Header: sample.Header{ProtoMajor: 1, SamplerVersion: [3]uint8{0, 1, 0}, State: sample.StateHolding, Mode: sample.ModeSnapshot,
			Fields: sample.FieldPC | sample.FieldLR, JitterPct: 10, CPUHz: 600_000_000, TimerHz: 24_000_000, IntervalTicks: 24000,
			Capacity: 8192, Taken: 9000, Dropped: 808, Stored: 8192, HeldFrom: 0, BuildID: seq(1, 20)}},
		&HeaderFrame{Header: sample.Header{ProtoMajor: 1, Fields: sample.FieldPC}},
		&Data{First: 7, Fields: all, Records: []sample.Record{
			{Index: 7, PC: 0x60001234, LR: 0x60001001, Exc: 0, Thread: 0x20001000},
			{Index: 8, PC: 0x00000100, LR: 0xFFFFFFF9, Exc: 511, Thread: 0x20000010},
			{Index: 9, PC: 0xFFFFFFFE, LR: 0, Exc: 16, Thread: 0xFFFFFFFF},
			{Index: 10, PC: 0, LR: 0x80000000, Exc: 1, Thread: 0},
		}},
		&Data{First: 0xFFFFFF00, Fields: sample.FieldPC, Records: []sample.Record{{Index: 0xFFFFFF00, PC: 0x60000000}}},
		&End{Reason: EndStreamStopped, First: 1, Next: 2, Taken: 3, Dropped: 4, Stored: 5},
		&Reply{Command: TypeDrain, Status: StatusUnavailable},
		&Threads{Entries: []Thread{{1, "main"}, {0x20001000, strings.Repeat("x", 31)}, {2, ""}}},
		&Start{RateHz: 10000, JitterPct: 25, Fields: sample.FieldPC | sample.FieldLR, Mode: sample.ModeStream, Count: 16384, DurationMS: 1500},
		&Stop{}, &Status{}, &Drain{From: 100, Count: 50}, &Done{},
		&Unknown{FrameType: 0x42, Body: []byte{1, 2, 3}},
	}
}

func TestFrameRoundTrip(t *testing.T) {
	for _, f := range sampleFrames() {
		wire, err := EncodeFrame(f)
		if err != nil {
			t.Fatal(err)
		}
		if wire[0] != 0 || wire[len(wire)-1] != 0 || bytes.IndexByte(wire[1:len(wire)-1], 0) >= 0 {
			t.Fatalf("%v: bad framing % x", f.Type(), wire)
		}
		fields := sample.FieldPC
		if d, ok := f.(*Data); ok {
			fields = d.Fields
		}
		evs := NewDecoder(fields).Feed(wire)
		if len(evs) != 1 || evs[0].Frame == nil {
			t.Fatalf("%v: decoded %+v", f.Type(), evs)
		}
		if !reflect.DeepEqual(evs[0].Frame, f) {
			t.Errorf("%v round trip:\n got %+v\nwant %+v", f.Type(), evs[0].Frame, f)
		}
	}
}

func TestFrameTooLarge(t *testing.T) {
	recs := make([]sample.Record, 200)
	for i := range recs {
		recs[i] = sample.Record{Index: uint32(i), PC: uint32(i) * 0x1000000, LR: uint32(i) * 0x3000001}
	}
	if _, err := EncodeFrame(&Data{Fields: sample.FieldPC | sample.FieldLR, Records: recs}); err == nil {
		t.Error("a 200-record PC+LR frame of far-apart addresses encoded; want a size error")
	}
}

func TestParsePayloadErrors(t *testing.T) {
	good, _ := EncodeFrame(&End{Reason: EndDrained, First: 1, Next: 9})
	payload, _ := decodeCOBS(nil, good[1:len(good)-1])
	corrupt := append([]byte(nil), payload...)
	corrupt[3] ^= 0x10
	short, _ := decodeCOBS(nil, mustEncode(t, &Unknown{FrameType: TypeEnd, Body: []byte{0, 1}})[1:])
	newer := mustEncode(t, &HeaderFrame{sample.Header{ProtoMajor: 2, ProtoMinor: 3}})
	newerPayload, _ := decodeCOBS(nil, newer[1:len(newer)-1])
	tests := []struct {
		name string
		p    []byte
		want string
	}{
		{"short", []byte{1, 2, 3}, "shorter than 5"},
		{"long", make([]byte, 513), "longer than 512"},
		{"crc", corrupt, "CRC"},
		{"short body", short[:len(short)-1], "END frame: body too short"},
		{"newer major", newerPayload, fmt.Sprintf("protocol version 2.3, newer than this tcmprof reads (%d.%d)", ProtoMajor, ProtoMinor)},
	}
	for _, tt := range tests {
		_, err := ParsePayload(tt.p, sample.FieldPC, sample.CodingV10)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
	if _, err := ParsePayload(payload, sample.FieldPC, sample.CodingV10); err != nil {
		t.Errorf("good payload: %v", err)
	}
}

func mustEncode(t testing.TB, f Frame) []byte {
	t.Helper()
	b, err := EncodeFrame(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// streamOf is a realistic mix: log text between frames, frames sharing a
// 0x00, a corrupted frame, binary garbage and text longer than a frame.
func streamOf(t testing.TB) (stream []byte, frames []Frame, logs []string) {
	var b bytes.Buffer
	b.WriteString("*** Booting Zephyr OS ***\r\n")
	logs = append(logs, "*** Booting Zephyr OS ***")
	fields := sample.FieldPC | sample.FieldLR | sample.FieldExc | sample.FieldThread
	afterText := true
	for i, f := range sampleFrames() {
		switch f := f.(type) {
		case *HeaderFrame:
			f.Fields = fields // DATA frames are read with the last HEADER's fields
		case *Data:
			if f.Fields != fields {
				continue
			}
		}
		w := mustEncode(t, f)
		if i%2 == 1 && !afterText {
			w = w[1:] // the leading 0x00 may be left out after a frame's trailing one
		}
		afterText = false
		b.Write(w)
		frames = append(frames, f)
		if i == 4 {
			b.WriteString("\x1b[0m<inf> app: tick\r\nsecond line\n")
			logs = append(logs, "\x1b[0m<inf> app: tick", "second line")
			afterText = true
		}
	}
	bad := mustEncode(t, &Reply{Command: TypeStart})
	bad[3] ^= 0x40
	b.Write(bad)
	b.Write([]byte{0x00, 0x01, 0x02, 0x03, 0x00}) // garbage: COBS-valid, too short
	for i := 0; i < 12; i++ {                     // 612 bytes of text with no 0x00: longer than any frame
		line := strings.Repeat(string(rune('a'+i)), 49)
		b.WriteString(line + "\n")
		logs = append(logs, line)
	}
	b.Write(mustEncode(t, &Done{}))
	frames = append(frames, &Done{})
	return b.Bytes(), frames, logs
}

func collect(d *Decoder, stream []byte, chunk int) (frames []Frame, logs []string) {
	for len(stream) > 0 {
		n := min(chunk, len(stream))
		for _, ev := range d.Feed(stream[:n]) {
			if ev.Frame != nil {
				frames = append(frames, ev.Frame)
			} else if ev.Log != "" {
				logs = append(logs, ev.Log)
			}
		}
		stream = stream[n:]
	}
	return frames, logs
}

func TestDecoderStreamAtEveryChunkSize(t *testing.T) {
	stream, wantFrames, wantLogs := streamOf(t)
	var first sample.DecodeStats
	for chunk := 1; chunk <= len(stream); chunk++ {
		d := NewDecoder(sample.FieldPC | sample.FieldLR | sample.FieldExc | sample.FieldThread)
		frames, logs := collect(d, stream, chunk)
		if len(frames) != len(wantFrames) {
			t.Fatalf("chunk %d: %d frames, want %d", chunk, len(frames), len(wantFrames))
		}
		for i := range frames {
			if !reflect.DeepEqual(frames[i], wantFrames[i]) {
				t.Fatalf("chunk %d: frame %d:\n got %+v\nwant %+v", chunk, i, frames[i], wantFrames[i])
			}
		}
		if !reflect.DeepEqual(logs, wantLogs) {
			t.Fatalf("chunk %d: logs = %q, want %q", chunk, logs, wantLogs)
		}
		st := d.Stats()
		if chunk == 1 {
			first = st
			if st.CRCErrors != 1 || st.GarbageBytes != 3 || st.LogLines != uint64(len(wantLogs)) ||
				st.Frames != uint64(len(wantFrames)) || st.Bytes != uint64(len(stream)) {
				t.Fatalf("stats %+v", st)
			}
		} else if st != first {
			t.Fatalf("chunk %d: stats %+v, with 1-byte chunks %+v", chunk, st, first)
		}
	}
}

func TestDecoderIdleFlushesLogText(t *testing.T) {
	d := NewDecoder(sample.FieldPC)
	if evs := d.Feed([]byte("partial")); len(evs) != 0 {
		t.Fatalf("events before a line end: %+v", evs)
	}
	if evs := d.Idle(); len(evs) != 0 {
		t.Fatalf("Idle emitted a line without its newline: %+v", evs)
	}
	d.Feed([]byte(" line\r\nmore"))
	evs := d.Idle()
	if len(evs) != 1 || evs[0].Log != "partial line" {
		t.Fatalf("Idle: %+v", evs)
	}
	evs = d.Feed(cat([]byte(" text"), mustEncode(t, &Done{})))
	if len(evs) != 2 || evs[0].Log != "more text" || evs[1].Frame == nil {
		t.Fatalf("after Idle: %+v", evs)
	}
}

func TestDecoderReportsUnreadableFrame(t *testing.T) {
	d := NewDecoder(sample.FieldPC)
	evs := d.Feed(mustEncode(t, &HeaderFrame{sample.Header{ProtoMajor: 9}}))
	if len(evs) != 1 || evs[0].Err == nil || !strings.Contains(evs[0].Err.Error(), "newer") {
		t.Fatalf("events %+v", evs)
	}
	if d.Stats().BadFrames != 1 {
		t.Errorf("stats %+v", d.Stats())
	}
}

func TestDecoderHeaderSetsFields(t *testing.T) {
	d := NewDecoder(sample.FieldPC)
	data := &Data{First: 0, Fields: sample.FieldPC | sample.FieldLR, Records: []sample.Record{{PC: 0x100, LR: 0x201}, {Index: 1, PC: 0x104, LR: 0x301}}}
	evs := d.Feed(cat(mustEncode(t, &HeaderFrame{sample.Header{ProtoMajor: 1, Fields: sample.FieldPC | sample.FieldLR}}), mustEncode(t, data)))
	if len(evs) != 2 || !reflect.DeepEqual(evs[1].Frame, data) {
		t.Fatalf("events %+v", evs)
	}
}

func FuzzDecoder(f *testing.F) {
	stream, _, _ := streamOf(f)
	f.Add(stream, uint8(7), uint8(sample.FieldPC|sample.FieldLR|sample.FieldExc|sample.FieldThread))
	f.Add([]byte(strings.Repeat("x", 2000)), uint8(1), uint8(sample.FieldPC))
	f.Add(bytes.Repeat([]byte{0xFF, 0x01}, 700), uint8(3), uint8(sample.FieldPC|sample.FieldLR))
	f.Add([]byte{}, uint8(0), uint8(0))
	golden, _ := filepath.Glob(filepath.Join(goldenDir, "*.bin"))
	for _, name := range golden {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b, uint8(5), uint8(sample.FieldPC|sample.FieldLR|sample.FieldExc|sample.FieldThread))
			f.Add(b, uint8(9), uint8(sample.AllFields))
		}
	}
	// chunk: the feed size in bits 0-5, Idle calls with bit 7, the 1.2
	// record coding with bit 6.
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8, fields uint8) {
		d := NewDecoder(sample.Fields(fields))
		if chunk&0x40 != 0 {
			d.SetCoding(sample.CodingV12)
		}
		segCap := cap(d.seg)
		step := int(chunk)%64 + 1
		var all []Event
		for p := in; len(p) > 0; {
			n := min(step, len(p))
			all = append(all, d.Feed(p[:n])...)
			if chunk&0x80 != 0 {
				all = append(all, d.Idle()...)
			}
			if len(d.seg) > maxEncoded || cap(d.seg) != segCap {
				t.Fatalf("segment buffer grew to len %d cap %d", len(d.seg), cap(d.seg))
			}
			p = p[n:]
		}
		if d.Stats().Bytes != uint64(len(in)) {
			t.Fatalf("counted %d bytes of %d", d.Stats().Bytes, len(in))
		}
		for _, ev := range all {
			if ev.Frame == nil {
				continue
			}
			// Every frame found re-encodes and decodes to itself.
			df, coding := sample.FieldPC, sample.CodingV10
			var chain dataChain
			if dd, ok := ev.Frame.(*Data); ok {
				df, coding = dd.Fields, dd.Coding
				if dd.Continues { // it reads only after the frame before it
					start := *dd.start
					chain = dataChain{coder: &start, next: dd.First}
				}
			}
			w, err := EncodeFrame(ev.Frame)
			if err != nil {
				// Without STACK re-encoding is never longer: the decoder
				// accepts only non-minimal varints. A stack's runs can be
				// cut shorter by hand than the encoder's maximal runs.
				if df&sample.FieldStack != 0 {
					continue
				}
				t.Fatal(err)
			}
			rd := NewDecoder(df)
			rd.SetCoding(coding)
			rd.chain = chain
			evs := rd.Feed(w)
			if len(evs) != 1 || !reflect.DeepEqual(evs[0].Frame, ev.Frame) {
				t.Fatalf("frame %+v does not survive re-encoding (% x)", ev.Frame, hex.EncodeToString(w))
			}
		}
	})
}
