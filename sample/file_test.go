// SPDX-License-Identifier: Apache-2.0

package sample

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// syntheticCapture has n records shaped like real samples: PCs clustered in a
// few functions in flash and ITCM, LRs with the Thumb bit, some ISR samples.
func syntheticCapture(n int, fields Fields, missing []Range) *Capture {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(fields)))
	funcs := []uint32{0x60001000, 0x60002400, 0x60010000, 0x00000400, 0x60023000}
	c := &Capture{
		Header: Header{ProtoMajor: 1, SamplerVersion: [3]uint8{0, 1, 0}, State: StateHolding, Mode: ModeSnapshot,
			Fields: fields, JitterPct: 10, CPUHz: 600_000_000, TimerHz: 24_000_000, IntervalTicks: 2400,
			Capacity: uint32(n), Taken: uint32(n) + 5, Dropped: 5, Stored: uint32(n), BuildID: []byte{0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf, 0xb0, 0xb1, 0xb2, 0xb3}},
		Missing: missing,
		Host: HostInfo{Time: time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC), Port: "/dev/ttyACM0", Baud: 115200,
			USB:         USBInfo{VID: "2fe3", PID: "0001", Serial: "ABC123", Product: "tcmprof sampler", Manufacturer: "ZEPHYR"},
			ToolVersion: "test"},
		Stats: DecodeStats{Bytes: 1234, Frames: 10, CRCErrors: 1, LogLines: 2, Retries: 1, Rerequests: 1, Rerequested: 3},
	}
	if fields&FieldThread != 0 {
		c.Threads = map[uint32]string{0x20001000: "main", 0x20001100: "idle", 0x20001200: "sysworkq"}
	}
	if fields&FieldStack != 0 {
		c.Header.StackWords = 32
	}
	mi := 0
	for i := uint32(0); len(c.Records) < n; i++ {
		if mi < len(missing) && i >= missing[mi].Start {
			i = missing[mi].End
			mi++
		}
		f := funcs[rng.IntN(len(funcs))]
		r := Record{Index: i, PC: f + uint32(rng.IntN(0x200))&^1}
		if fields&FieldLR != 0 {
			r.LR = funcs[rng.IntN(len(funcs))] + uint32(rng.IntN(0x400)) | 1
			if rng.IntN(10) == 0 {
				r.LR = 0xFFFFFFF9
			}
		}
		if fields&FieldExc != 0 && rng.IntN(8) == 0 {
			r.Exc = 16 + uint16(rng.IntN(100))
		}
		if fields&FieldThread != 0 {
			r.Thread = 0x20001000 + 0x100*uint32(rng.IntN(3))
		}
		if fields&FieldStack != 0 {
			r.SP, r.Stack = syntheticStack(rng, stacks[rng.IntN(len(stacks))])
		}
		c.Records = append(c.Records, r)
	}
	return c
}

// stacks are the memory of three thread stacks, 64 words below their tops.
var stacks = func() [][]uint32 {
	rng := rand.New(rand.NewPCG(1, 2))
	var all [][]uint32
	for range 3 {
		var words []uint32
		for range 64 {
			words = append(words, []uint32{0x60001235, 0x20201f00, 7, 0}[rng.IntN(4)]+uint32(rng.IntN(64)))
		}
		all = append(all, words)
	}
	return all
}()

// syntheticStack is a snapshot of one of stacks at a random depth, the
// deepest few words changed as by the running code, cut at 32 words.
func syntheticStack(rng *rand.Rand, mem []uint32) (uint32, []uint32) {
	top := 0x20200000 + 0x1000*uint32(len(mem)%7)
	depth := rng.IntN(len(mem) + 1)
	words := append([]uint32(nil), mem[len(mem)-depth:]...)
	for i := 0; i < min(3, len(words)); i++ {
		words[i] = rng.Uint32()
	}
	if len(words) > 32 {
		words = words[:32]
	}
	if len(words) == 0 {
		words = nil
	}
	return top - 4*uint32(depth), words
}

func TestCaptureFileRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n       int
		fields  Fields
		missing []Range
	}{
		{"pc", 1000, FieldPC, nil},
		{"pc,lr with gaps", 1000, FieldPC | FieldLR, []Range{{0, 3}, {100, 150}, {1053, 1056}}},
		{"all fields", 500, FieldPC | FieldLR | FieldExc | FieldThread, []Range{{10, 11}}},
		{"stack", 500, AllFields, []Range{{10, 11}}},
		{"empty", 0, FieldPC, nil},
		{"nothing arrived", 0, FieldPC | FieldLR, []Range{{0, 16384}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := syntheticCapture(tc.n, tc.fields, tc.missing)
			if tc.name == "stack" { // format 1.4: what a 1.3 sampler sends after the threads
				c.StackTops = map[uint32]StackTop{
					0x20001000: {Thread: 0x20001000, Top: 0x20202000, Words: []uint32{0x60001235, 0, 0x20201f80}},
					0x20001100: {Thread: 0x20001100, Top: 0x20204000, Words: make([]uint32, MaxStackTopWords)},
				}
			}
			if tc.name == "pc" { // as tcmprof sim writes it
				c.Model = &ModelInfo{Tool: "tcmprof sim", CacheSize: 32768, CacheWays: 2, LineSize: 32,
					Policy: "lru", Penalty: 500, Unit: "zsock_sendto", Warmup: 300, Units: 2000, Cycles: 1 << 40}
			}
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := c.Write(&buf); err != nil {
				t.Fatal(err)
			}
			got, err := Parse(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c) {
				t.Fatalf("round trip differs:\n got %+v\nwant %+v", got.Header, c.Header)
			}
		})
	}
}

func TestCaptureFileIsSelfDescribing(t *testing.T) {
	var buf bytes.Buffer
	if err := syntheticCapture(10, FieldPC|FieldLR, nil).Write(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fmt.Sprintf("tcmcap %d.%d\n", FileMajor, FileMinor), `"build_id": "a0a1a2`, `"cpu_hz": 600000000`, `"product": "tcmprof sampler"`} {
		if !bytes.Contains(buf.Bytes(), []byte(want)) {
			t.Errorf("file lacks %q", want)
		}
	}
	if bytes.Contains(buf.Bytes(), []byte(`"model"`)) {
		t.Error("a device's capture carries a model key")
	}
	if bytes.Contains(buf.Bytes(), []byte(`"stack_tops"`)) {
		t.Error("a capture without stacks carries a stack_tops key")
	}
}

func TestCaptureFileErrors(t *testing.T) {
	var buf bytes.Buffer
	if err := syntheticCapture(300, FieldPC|FieldLR, []Range{{5, 7}}).Write(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	// Every truncation is refused with one line, a FormatError that says
	// the file was cut short where it ends.
	for n := 0; n < len(good); n++ {
		_, err := Parse(bytes.NewReader(good[:n]))
		var fe *FormatError
		if err == nil || strings.Contains(err.Error(), "\n") || !errors.As(err, &fe) {
			t.Fatalf("truncated to %d bytes: err = %v", n, err)
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) || fe.Off != int64(n) || !strings.HasPrefix(err.Error(), "truncated capture file") {
			t.Fatalf("truncated to %d bytes: %v (offset %d)", n, err, fe.Off)
		}
	}
	// So is every single-bit flip, as a FormatError.
	for i := 0; i < len(good); i += 7 {
		bad := append([]byte(nil), good...)
		bad[i] ^= 1 << (i % 8)
		_, err := Parse(bytes.NewReader(bad))
		if fe := (*FormatError)(nil); !errors.As(err, &fe) {
			t.Fatalf("flip at byte %d: %v", i, err)
		}
	}
	// Damage the checksum cannot see (a file rewritten with a valid one) is
	// found where it is: here a record's varint made over-long.
	nl := bytes.IndexByte(good, '\n')
	jsLen := int(binary.LittleEndian.Uint32(good[nl+1:]))
	recsOff := nl + 1 + 4 + jsLen + 4
	bad := append([]byte(nil), good[:len(good)-4]...)
	for k := 0; k < 6; k++ {
		bad[recsOff+k] = 0xff
	}
	bad = binary.LittleEndian.AppendUint32(bad, crc32.ChecksumIEEE(bad))
	_, err := Parse(bytes.NewReader(bad))
	if fe := (*FormatError)(nil); !errors.As(err, &fe) || fe.Off != int64(recsOff) || !strings.Contains(err.Error(), "record 0 at byte") {
		t.Errorf("over-long varint in the first record, at byte %d: %v", recsOff, err)
	}
	newer := append([]byte("tcmcap 2.1\n"), good[bytes.IndexByte(good, '\n')+1:]...)
	_, err = Parse(bytes.NewReader(newer))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("version 2.1 is newer than this tcmprof reads (%d.%d)", FileMajor, FileMinor)) {
		t.Errorf("newer major: %v", err)
	}
	_, err = Parse(strings.NewReader("PK\x03\x04 something else"))
	if err == nil || !strings.Contains(err.Error(), "not a tcmprof capture file") {
		t.Errorf("foreign file: %v", err)
	}
}

// IsCaptureFile tells a capture from anything else by its first line
// alone, whether or not the rest would read.
func TestIsCaptureFile(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	if err := syntheticCapture(10, FieldPC, nil).Write(&buf); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, data string
		want       bool
	}{
		{"capture", buf.String(), true},
		{"cut short after the magic", "tcmcap ", true},
		{"magic cut short", "tcmca", false},
		{"pprof", "\x1f\x8b\x08\x00 gzip", false},
		{"empty", "", false},
	} {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, []byte(tc.data), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := IsCaptureFile(path); got != tc.want || err != nil {
			t.Errorf("%s: IsCaptureFile = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	if _, err := IsCaptureFile(filepath.Join(dir, "absent")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent file: err = %v, want not-exist", err)
	}
}

// A version-1.0 file the QEMU demo firmware wrote (testdata/README.md)
// reads in every later version: its keys are all still known, and what is
// read writes back to the same capture.
func TestReadsVersion1_0Capture(t *testing.T) {
	path := filepath.Join("testdata", "v1.0-qemu-demo.tcmcap")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("tcmcap 1.0\n")) {
		t.Fatalf("%s is not a version 1.0 file", path)
	}
	c, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Keys are only ever added: the 1.0 metadata decodes with none left
	// over.
	js := data[len("tcmcap 1.0\n")+4:][:binary.LittleEndian.Uint32(data[len("tcmcap 1.0\n"):])]
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var meta fileMeta
	if err := dec.Decode(&meta); err != nil {
		t.Errorf("the 1.0 metadata has a key this version does not know: %v", err)
	}
	// What the firmware sent: every field, its five threads, 300 records.
	h := c.Header
	if h.ProtoMajor != 1 || h.Fields != FieldPC|FieldLR|FieldExc|FieldThread || h.CPUHz != 25_000_000 ||
		len(c.Records) != 300 || len(c.Threads) != 5 || len(h.BuildID) != 20 || c.Host.ToolVersion == "" {
		t.Errorf("header %+v, %d records, threads %v", h, len(c.Records), c.Threads)
	}
	for _, r := range c.Records {
		if _, ok := c.Threads[r.Thread]; !ok || r.PC&1 != 0 {
			t.Fatalf("record %+v: thread not in %v, or odd PC", r, c.Threads)
		}
	}
	var buf bytes.Buffer
	if err := c.Write(&buf); err != nil {
		t.Fatal(err)
	}
	again, err := Parse(&buf)
	if err != nil || !reflect.DeepEqual(again, c) {
		t.Errorf("rewritten, the 1.0 capture reads back differently: %v", err)
	}
}

func TestWriteFileIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.tcmcap")
	first := syntheticCapture(100, FieldPC, nil)
	if err := WriteFile(path, first); err != nil {
		t.Fatal(err)
	}
	// A failing write (an invalid capture) leaves the old file and no temporary.
	bad := syntheticCapture(100, FieldPC, nil)
	bad.Records[3].LR = 1
	if err := WriteFile(path, bad); err == nil {
		t.Fatal("invalid capture written")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "run.tcmcap" {
		t.Fatalf("directory holds %v", entries)
	}
	got, err := ReadFile(path)
	if err != nil || !reflect.DeepEqual(got, first) {
		t.Fatalf("old file damaged: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "none.tcmcap")); err == nil {
		t.Error("missing file read")
	}
}

func TestValidate(t *testing.T) {
	ok := func() *Capture { return syntheticCapture(20, FieldPC|FieldLR, []Range{{5, 8}}) }
	tests := []struct {
		name   string
		change func(c *Capture)
		want   string
	}{
		{"no pc", func(c *Capture) { c.Header.Fields = FieldLR }, "PC"},
		{"unknown field", func(c *Capture) { c.Header.Fields |= 0x40 }, "unknown fields"},
		{"odd pc", func(c *Capture) { c.Records[2].PC |= 1 }, "bit 0"},
		{"unrecorded field", func(c *Capture) { c.Records[2].Thread = 4 }, "did not record"},
		{"gap", func(c *Capture) { c.Records = append(c.Records[:10], c.Records[11:]...) }, "cover one range"},
		{"overlap", func(c *Capture) { c.Missing = []Range{{5, 9}} }, "cover one range"},
		{"touching", func(c *Capture) { c.Missing = []Range{{5, 6}, {6, 8}} }, "overlap, touch"},
		{"detached missing", func(c *Capture) { c.Missing = append(c.Missing, Range{100, 101}) }, "not next to"},
		{"long build-id", func(c *Capture) { c.Header.BuildID = make([]byte, 33) }, "build-id"},
		{"stack top without stacks", func(c *Capture) {
			c.StackTops = map[uint32]StackTop{1: {Thread: 1, Top: 0x20000000}}
		}, "without the THREAD and STACK"},
		{"stack top filed wrongly", func(c *Capture) {
			c.Header.Fields |= FieldThread | FieldStack
			c.Header.StackWords = 32
			c.StackTops = map[uint32]StackTop{1: {Thread: 2, Top: 0x20000000}}
		}, "filed under"},
		{"stack top too long", func(c *Capture) {
			c.Header.Fields |= FieldThread | FieldStack
			c.Header.StackWords = 32
			c.StackTops = map[uint32]StackTop{1: {Thread: 1, Top: 0x20000000, Words: make([]uint32, 33)}}
		}, "stack-top words"},
		{"stack top below address 0", func(c *Capture) {
			c.Header.Fields |= FieldThread | FieldStack
			c.Header.StackWords = 32
			c.StackTops = map[uint32]StackTop{1: {Thread: 1, Top: 8, Words: make([]uint32, 3)}}
		}, "stack-top words"},
	}
	if err := ok().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		c := ok()
		tt.change(c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

func FuzzReadCapture(f *testing.F) {
	for _, c := range []*Capture{
		syntheticCapture(50, FieldPC|FieldLR|FieldExc|FieldThread, []Range{{0, 2}, {20, 25}}),
		syntheticCapture(3, FieldPC, nil),
		syntheticCapture(40, FieldPC|FieldLR|FieldStack, nil),
	} {
		var buf bytes.Buffer
		if err := c.Write(&buf); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add([]byte("tcmcap 1.0\n\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(bytes.NewReader(data))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if len(c.Records) > len(data) {
			t.Fatalf("%d records from %d bytes", len(c.Records), len(data))
		}
		// What was read writes back and reads again to the same capture.
		var buf bytes.Buffer
		if err := c.Write(&buf); err != nil {
			t.Fatalf("valid capture does not write: %v", err)
		}
		again, err := Parse(&buf)
		if err != nil || !reflect.DeepEqual(again, c) {
			t.Fatalf("rewrite differs: %v", err)
		}
	})
}

func BenchmarkCaptureFile1M(b *testing.B) {
	for _, fields := range []Fields{FieldPC, FieldPC | FieldLR, FieldPC | FieldLR | FieldStack} {
		n := 1_000_000
		if fields&FieldStack != 0 {
			n = 100_000
		}
		c := syntheticCapture(n, fields, nil)
		var buf bytes.Buffer
		if err := c.Write(&buf); err != nil {
			b.Fatal(err)
		}
		data := buf.Bytes()
		b.Run("read/"+fields.String(), func(b *testing.B) {
			for b.Loop() {
				if _, err := parse(data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data))/float64(len(c.Records)), "file-bytes/record")
		})
		b.Run("write/"+fields.String(), func(b *testing.B) {
			for b.Loop() {
				var w bytes.Buffer
				if err := c.Write(&w); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
