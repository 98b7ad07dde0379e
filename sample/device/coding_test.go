// SPDX-License-Identifier: Apache-2.0

package device

import (
	"errors"
	"github.com/tcmprof/tcmprof/sample"
	"math/rand/v2"
	"reflect"
	"testing"
)

// codingWorkload is records shaped like a firmware's: PCs in a few hot
// functions far apart (flash, ITCM, a testbench 8 MB up), three threads
// whose stacks keep their outer frames while the inner ones change, some
// samples in handler mode on the interrupt stack, copies cut by K at
// varying depths (so a stack's copy may end above or below the last one
// of its thread), and SPs outside any stack (no words).
func codingWorkload(n int, seed uint64) []sample.Record {
	rng := rand.New(rand.NewPCG(seed, 1))
	hot := []uint32{0x60002000, 0x6000a400, 0x00000400, 0x60800000, 0x6000f000}
	type thread struct {
		id, top uint32
		words   []uint32 // the stack from its top down, innermost last
	}
	threads := []*thread{{id: 0x20001000, top: 0x20202000}, {id: 0x20003400, top: 0x20204000}, {id: 0x20000c80, top: 0x20206000}}
	for _, th := range threads {
		for i := 0; i < 40; i++ {
			th.words = append(th.words, 0x60000001+rng.Uint32N(0x10000))
		}
	}
	const k = 32
	recs := make([]sample.Record, n)
	for i := range recs {
		th := threads[rng.IntN(len(threads))]
		// The inner frames change: pop a few words, push a few new ones.
		th.words = th.words[:max(4, len(th.words)-rng.IntN(6))]
		for range rng.IntN(6) {
			th.words = append(th.words, rng.Uint32())
		}
		r := sample.Record{
			PC:     hot[rng.IntN(len(hot))] + 2*rng.Uint32N(64),
			LR:     hot[rng.IntN(len(hot))] + 2*rng.Uint32N(64) + 1,
			Thread: th.id,
		}
		switch rng.IntN(10) {
		case 0: // handler mode, near the interrupt stack's top
			r.Exc = 16 + 31
			r.SP = 0x20210ff0
			r.Stack = []uint32{4, 0x60004101, 0xfffffffd, 0x12345678}
		case 1: // an SP the port knows no stack for
			r.SP = 0x10000000
		default:
			d := len(th.words)
			r.SP = th.top - 4*uint32(d)
			for j := d - 1; j >= max(0, d-k); j-- {
				r.Stack = append(r.Stack, th.words[j])
			}
		}
		recs[i] = r
	}
	return recs
}

// frameAll frames recs as a device would and decodes the frames again;
// returns what came back and the bytes on the wire.
func frameAll(t *testing.T, fields sample.Fields, coding sample.Coding, recs []sample.Record) ([]sample.Record, int) {
	t.Helper()
	d := NewDecoder(fields)
	d.SetCoding(coding)
	w := NewDataWriter(fields, coding)
	var got []sample.Record
	size := 0
	for first := 0; first < len(recs); {
		data := w.Fill(uint32(first), recs[first:])
		w, err := EncodeFrame(data)
		if err != nil {
			t.Fatal(err)
		}
		size += len(w)
		evs := d.Feed(w)
		if len(evs) != 1 || evs[0].Frame == nil {
			t.Fatalf("frame at %d: %+v", first, evs)
		}
		got = append(got, evs[0].Frame.(*Data).Records...)
		first += len(data.Records)
	}
	return got, size
}

// Every coding brings back every record exactly, for every field set; on
// records with hot code in a few places and stacks that keep their outer
// frames, each newer coding is smaller than the one before, with and
// without stacks.
func TestCodingsRoundTrip(t *testing.T) {
	recs := codingWorkload(3000, 7)
	for _, fields := range []sample.Fields{sample.FieldPC, sample.FieldPC | sample.FieldLR, sample.FieldPC | sample.FieldExc, sample.FieldPC | sample.FieldLR | sample.FieldExc | sample.FieldThread,
		sample.FieldPC | sample.FieldLR | sample.FieldStack, sample.AllFields} {
		want := make([]sample.Record, len(recs))
		for i, r := range recs {
			w := sample.Record{Index: uint32(i), PC: r.PC}
			if fields&sample.FieldLR != 0 {
				w.LR = r.LR
			}
			if fields&sample.FieldExc != 0 {
				w.Exc = r.Exc
			}
			if fields&sample.FieldThread != 0 {
				w.Thread = r.Thread
			}
			if fields&sample.FieldStack != 0 {
				w.SP, w.Stack = r.SP, r.Stack
			}
			want[i] = w
		}
		var size [3]int
		for i, coding := range []sample.Coding{sample.CodingV10, sample.CodingV12, sample.CodingV14} {
			got, n := frameAll(t, fields, coding, want)
			if !reflect.DeepEqual(got, want) {
				for j := range got {
					if !reflect.DeepEqual(got[j], want[j]) {
						t.Fatalf("%v, coding %v: record %d = %+v, want %+v", fields, coding, j, got[j], want[j])
					}
				}
				t.Fatalf("%v, coding %v: %d records back of %d", fields, coding, len(got), len(want))
			}
			size[i] = n
		}
		t.Logf("%v: %.2f bytes per record in 1.0, %.2f in 1.2, %.2f in 1.4", fields,
			float64(size[0])/float64(len(recs)), float64(size[1])/float64(len(recs)), float64(size[2])/float64(len(recs)))
		if size[1] >= size[0] || size[2] >= size[1] {
			t.Errorf("%v: bytes in codings 1.0, 1.2, 1.4: %v", fields, size)
		}
	}
}

// A lost frame in the coding of 1.4 costs the frames that continue its
// coding, up to the next key frame, and nothing else: each of them is a
// bad frame (ErrBrokenChain), and the key frame and those after it read
// record for record.
func TestCodingV14LostFrame(t *testing.T) {
	recs := codingWorkload(3000, 11)
	for i := range recs {
		recs[i].Index = uint32(i)
	}
	w := NewDataWriter(sample.AllFields, sample.CodingV14)
	var frames []*Data
	for first := 0; first < len(recs); {
		d := w.Fill(uint32(first), recs[first:])
		frames = append(frames, d)
		first += len(d.Records)
	}
	if len(frames) < 2*sample.V14KeyInterval {
		t.Fatalf("only %d frames", len(frames))
	}
	const lost = 3
	dec := NewDecoder(sample.AllFields)
	dec.SetCoding(sample.CodingV14)
	for i, f := range frames {
		if i == lost {
			continue
		}
		evs := dec.Feed(mustEncode(t, f))
		if len(evs) != 1 {
			t.Fatalf("frame %d: %d events", i, len(evs))
		}
		wantKey := i%sample.V14KeyInterval == 0
		if f.Continues == wantKey {
			t.Fatalf("frame %d: continues %v", i, f.Continues)
		}
		if i > lost && i < sample.V14KeyInterval {
			if !errors.Is(evs[0].Err, ErrBrokenChain) {
				t.Errorf("frame %d after the lost one: %+v", i, evs[0])
			}
			continue
		}
		got, ok := evs[0].Frame.(*Data)
		if !ok || !reflect.DeepEqual(got.Records, f.Records) {
			t.Fatalf("frame %d: %+v", i, evs[0])
		}
	}
	if st := dec.Stats(); st.BadFrames != sample.V14KeyInterval-lost-1 {
		t.Errorf("%d bad frames, want %d", st.BadFrames, sample.V14KeyInterval-lost-1)
	}
}
