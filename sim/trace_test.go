// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/sim/simtest"
)

func goodTrace() []byte {
	w := simtest.NewWriter([]byte{1, 2, 3, 4, 5})
	a := w.Block(flash, 2, 4, 2, 2, 4)
	b := w.Block(flash+0x40, 2)
	w.Exec(a, b, a)
	w.Cut(w.Block(flash+8, 2))
	w.Exec(b)
	return w.Bytes()
}

// readAll returns the executed blocks as (start, instructions).
func readAll(trace []byte) ([][2]uint32, error) {
	r, err := NewReader(bytes.NewReader(trace))
	if err != nil {
		return nil, err
	}
	var got [][2]uint32
	for {
		b, err := r.Next()
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got = append(got, [2]uint32{b.Start, uint32(b.Len())})
	}
}

func TestReaderRoundTrip(t *testing.T) {
	got, err := readAll(goodTrace())
	if err != nil {
		t.Fatal(err)
	}
	// The cut execution of a ran its first 3 instructions (flash..+8).
	want := [][2]uint32{{flash, 5}, {flash + 0x40, 1}, {flash, 3}, {flash + 8, 1}, {flash + 0x40, 1}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	r, _ := NewReader(bytes.NewReader(goodTrace()))
	if !bytes.Equal(r.BuildID, []byte{1, 2, 3, 4, 5}) {
		t.Errorf("build-id %x", r.BuildID)
	}
	b := &Block{Start: flash, Sizes: []uint8{2, 4, 2}}
	if b.Addr(0) != flash || b.Addr(2) != flash+6 {
		t.Errorf("Addr: %#x %#x", b.Addr(0), b.Addr(2))
	}
}

// The plugin's bytes for a small trace, written out by hand from the
// format in firmware-sampler/qemu/plugin/README.md.
func TestReaderGoldenBytes(t *testing.T) {
	golden := []byte{
		'T', 'C', 'M', 'T', 'R', 'A', 'C', 'E',
		0, 0, 1, 0, // version 1.0
		2, 0, 0, 0, 0xbe, 0xef, 0, 0, // build-id be ef, padded
		2, 0, 0, 0x80, 0, 0, 0, 0, 0x10, 0, 0, 0x60, 4, 2, 0, 0, // BLOCK 2 insns, id 0, 0x60000010, sizes 4 2
		0, 0, 0, 0, 0, 0, 0, 0, // EXEC 0, EXEC 0
		0, 0, 0, 0xf0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // END 2 execs, 1 block, 0 cuts
	}
	w := simtest.NewWriter([]byte{0xbe, 0xef})
	w.Exec(w.Block(0x60000010, 4, 2), 0)
	if !bytes.Equal(w.Bytes(), golden) {
		t.Fatalf("simtest writer:\n%x\nwant\n%x", w.Bytes(), golden)
	}
	got, err := readAll(golden)
	if err != nil || len(got) != 2 || got[0] != [2]uint32{0x60000010, 2} {
		t.Errorf("read %v, %v", got, err)
	}
}

func TestReaderErrors(t *testing.T) {
	trace := func(f func(w *simtest.Writer)) []byte {
		w := simtest.NewWriter(nil)
		f(w)
		return w.Bytes()
	}
	for _, tc := range []struct {
		name, want string
		trace      []byte
	}{
		{"empty", "empty or truncated", nil},
		{"foreign", "not a tcmprof trace", []byte("PK\x03\x04 something else entirely")},
		{"newer", "version 2.0", append([]byte("TCMTRACE\x00\x00\x02\x00"), make([]byte, 4)...)},
		{"huge build-id", "build-id", append([]byte("TCMTRACE\x00\x00\x01\x00"), 0xff, 0xff, 0, 0)},
		{"undefined block", "block 3, which is not defined", trace(func(w *simtest.Writer) { w.Word(3) })},
		{"ids out of order", "out of order", trace(func(w *simtest.Writer) {
			w.Word(0x80000001)
			w.Word(5)
			w.Word(flash)
			w.Word(2)
		})},
		{"odd size", "has size 3", trace(func(w *simtest.Writer) { w.Block(flash, 2, 3) })},
		{"odd start", "odd address", trace(func(w *simtest.Writer) { w.Block(flash+1, 2) })},
		{"no instructions", "block of 0 instructions", trace(func(w *simtest.Writer) { w.Word(0x80000000) })},
		{"too many instructions", "block of 268435455 instructions", trace(func(w *simtest.Writer) { w.Word(0x8FFFFFFF) })},
		{"past 4 GB", "past the 4 GB", trace(func(w *simtest.Writer) { w.Block(0xFFFFFFFE, 2, 2) })},
		{"cut before any execution", "cut before any execution", trace(func(w *simtest.Writer) { w.Cut(w.Block(flash, 2)) })},
		{"cut of a long block", "of 2 instructions (want 1)", trace(func(w *simtest.Writer) {
			w.Exec(w.Block(flash, 2, 2))
			w.Cut(0)
		})},
		{"cut outside", "outside the block", trace(func(w *simtest.Writer) {
			w.Exec(w.Block(flash, 2, 2))
			w.Cut(w.Block(flash+0x100, 2))
		})},
		{"unknown record", "unknown record 0xa0000000", trace(func(w *simtest.Writer) { w.Word(0xA0000000) })},
		{"bad END", "bad END", append(trace(func(*simtest.Writer) {})[:16], 0x01, 0, 0, 0xf0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readAll(tc.trace)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want one line with %q", err, tc.want)
			}
		})
	}
	// Lost records: END's counts disagree.
	w := simtest.NewWriter(nil)
	w.Exec(w.Block(flash, 2))
	good := w.Bytes()
	lost := append(append([]byte(nil), good[:len(good)-32]...), good[len(good)-28:]...) // the EXEC word removed
	if _, err := readAll(lost); err == nil || !strings.Contains(err.Error(), "records lost") {
		t.Errorf("lost EXEC: %v", err)
	}
	if _, err := readAll(append(good, 0)); err == nil || !strings.Contains(err.Error(), "after its END") {
		t.Errorf("trailing byte: %v", err)
	}
	// Every truncation of a good trace is an error, with one line.
	good = goodTrace()
	for n := 0; n < len(good); n++ {
		_, err := readAll(good[:n])
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Fatalf("truncated to %d bytes: err = %v", n, err)
		}
	}
	_, err := readAll(simtest.NewWriter(nil).Unended())
	if !errors.Is(err, errNoEnd) {
		t.Errorf("no END: %v", err)
	}
}

// Bad input gives a one-line error, never a panic or an endless loop;
// what reads is also modelled without trouble.
func FuzzReader(f *testing.F) {
	f.Add(goodTrace())
	f.Add(simtest.NewWriter(nil).Bytes())
	w := simtest.NewWriter(nil)
	w.Exec(w.Block(0x60000000, 4, 2, 2), 0)
	w.Cut(w.Block(0x60000004, 2))
	f.Add(w.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		cfg := Config{Cache: testGeometry, Penalty: 500, TCM: []Range{{0, 0x20000}},
			Unit: &Unit{Addr: 0x60000004, Count: 2}, Sampling: &Sampling{ClockHz: 1000, RateHz: 100}}
		if _, err := Run(r, cfg); err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("multi-line error %q", err)
		}
	})
}
