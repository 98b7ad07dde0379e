// SPDX-License-Identifier: Apache-2.0

package device

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"github.com/tcmprof/tcmprof/sample"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// goldenDir holds the protocol's golden vectors, written from the spec by
// firmware-sampler/testdata/golden/gen.py; the C core tests against them too.
var goldenDir = filepath.Join("..", "..", "firmware-sampler", "testdata", "golden")

type goldenFile struct {
	File             string           `json:"file"`
	Description      string           `json:"description"`
	Frames           []map[string]any `json:"frames"`
	NonFrameSegments []string         `json:"non_frame_segments"`
}

// goldenNum reads a JSON number or a "0x%08x" string.
func goldenNum(t *testing.T, m map[string]any, key string) uint32 {
	t.Helper()
	switch v := m[key].(type) {
	case float64:
		return uint32(v)
	case string:
		n, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 32)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		return uint32(n)
	}
	t.Fatalf("vector lacks %q: %v", key, m)
	return 0
}

// goldenFrame builds the frame a vector describes, independently of the decoder.
func goldenFrame(t *testing.T, m map[string]any) Frame {
	n := func(k string) uint32 { return goldenNum(t, m, k) }
	switch m["type"] {
	case "HEADER":
		h := &HeaderFrame{sample.Header{ProtoMajor: uint8(n("proto_major")), ProtoMinor: uint8(n("proto_minor")),
			State: sample.State(n("state")), Mode: sample.Mode(n("mode")), Fields: sample.Fields(n("fields")), JitterPct: uint8(n("jitter_pct")),
			CPUHz: n("cpu_hz"), TimerHz: n("timer_hz"), IntervalTicks: n("mean_interval_ticks"), Capacity: n("capacity"),
			Taken: n("taken"), Dropped: n("dropped"), Stored: n("stored"), HeldFrom: n("held_from"),
			StackWords: uint8(n("stack_words")), Coding: sample.Coding(n("coding"))}}
		for i, v := range m["sampler_version"].([]any) {
			h.SamplerVersion[i] = uint8(v.(float64))
		}
		id, err := hex.DecodeString(m["build_id"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if len(id) > 0 {
			h.BuildID = id
		}
		return h
	case "DATA":
		d := &Data{First: n("first_index"), Fields: sample.Fields(n("fields")), Coding: sample.Coding(n("coding"))}
		for i, r := range m["records"].([]any) {
			rm := r.(map[string]any)
			rec := sample.Record{Index: d.First + uint32(i), PC: goldenNum(t, rm, "pc")}
			if d.Fields&sample.FieldLR != 0 {
				rec.LR = goldenNum(t, rm, "lr")
			}
			if d.Fields&sample.FieldExc != 0 {
				rec.Exc = uint16(goldenNum(t, rm, "exc"))
			}
			if d.Fields&sample.FieldThread != 0 {
				rec.Thread = goldenNum(t, rm, "thread")
			}
			if d.Fields&sample.FieldStack != 0 {
				rec.SP = goldenNum(t, rm, "sp")
				for _, w := range rm["stack"].([]any) {
					rec.Stack = append(rec.Stack, goldenNum(t, map[string]any{"w": w}, "w"))
				}
			}
			d.Records = append(d.Records, rec)
		}
		if len(d.Records) != int(n("count")) {
			t.Fatalf("DATA vector count %d with %d records", n("count"), len(d.Records))
		}
		d.Continues = m["continues"] == true
		return d
	case "END":
		return &End{Reason: EndReason(n("reason")), First: n("first_index"), Next: n("end_index"),
			Taken: n("taken"), Dropped: n("dropped"), Stored: n("stored")}
	case "REPLY":
		return &Reply{Command: FrameType(n("command")), Status: ReplyStatus(n("status"))}
	case "THREADS":
		th := &Threads{}
		for _, e := range m["threads"].([]any) {
			em := e.(map[string]any)
			th.Entries = append(th.Entries, Thread{ID: goldenNum(t, em, "id"), Name: em["name"].(string)})
		}
		return th
	case "STACK_TOP":
		st := &StackTopFrame{sample.StackTop{Thread: n("thread"), Top: n("top")}}
		for _, w := range m["words"].([]any) {
			st.Words = append(st.Words, goldenNum(t, map[string]any{"w": w}, "w"))
		}
		return st
	case "START":
		return &Start{RateHz: n("rate_hz"), JitterPct: uint8(n("jitter_pct")), Fields: sample.Fields(n("fields")),
			Mode: sample.Mode(n("mode")), Count: n("count"), DurationMS: n("duration_ms"), StackWords: uint8(n("stack_words")),
			Coding: sample.Coding(n("coding"))}
	case "STOP":
		return &Stop{}
	case "STATUS":
		return &Status{}
	case "DRAIN":
		return &Drain{From: n("from_index"), Count: n("count")}
	case "DONE":
		return &Done{}
	}
	t.Fatalf("unknown vector type %v", m["type"])
	return nil
}

// goldenVectors is vectors.json.
type goldenVectors struct {
	Protocol string `json:"protocol"`
	Limits   struct {
		MaxPayload          int `json:"max_payload"`
		MaxRecordBytes      int `json:"max_record_bytes"`
		MaxStackRecordBytes int `json:"max_stack_record_bytes"`
		StackWordsMax       int `json:"stack_words_max"`
		StackRefWindow      int `json:"stack_ref_window"`
	} `json:"limits"`
	Files []goldenFile `json:"files"`
}

// chainData gives a DATA frame f that continues the coding of the frames
// before it (CodingV14) the state they left in chain, and returns the
// state f leaves.
func chainData(f Frame, chain *sample.RecordCoder) *sample.RecordCoder {
	d, ok := f.(*Data)
	if !ok || d.Coding != sample.CodingV14 {
		return chain
	}
	next := sample.NewRecordCoder(d.Fields, d.Coding)
	if d.Continues {
		start := *chain
		d.start, next = &start, chain
	}
	for _, r := range d.Records {
		next.Append(nil, r)
	}
	return next
}

// readVectors reads vectors.json. A missing file fails the test: the
// vectors are checked in, and without them the C/Go cross-check proves
// nothing.
func readVectors(t *testing.T) *goldenVectors {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(goldenDir, "vectors.json"))
	if err != nil {
		t.Fatalf("%v (the golden vectors are checked in; python3 gen.py there writes them)", err)
	}
	var vectors goldenVectors
	if err := json.Unmarshal(raw, &vectors); err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(ProtoMajor) + "." + strconv.Itoa(ProtoMinor); vectors.Protocol != want {
		t.Fatalf("vectors are for protocol %s, this decoder speaks %s", vectors.Protocol, want)
	}
	if len(vectors.Files) == 0 {
		t.Fatal("vectors.json lists no files")
	}
	return &vectors
}

func TestGoldenVectors(t *testing.T) {
	vectors := readVectors(t)
	for _, gf := range vectors.Files {
		t.Run(strings.TrimSuffix(gf.File, ".bin"), func(t *testing.T) {
			stream, err := os.ReadFile(filepath.Join(goldenDir, gf.File))
			if err != nil {
				t.Fatal(err)
			}
			var want []Frame
			var wire []byte // the frames as this package encodes them
			var chain *sample.RecordCoder
			for _, m := range gf.Frames {
				f := goldenFrame(t, m)
				chain = chainData(f, chain)
				want = append(want, f)
				enc := mustEncode(t, f)
				wire = append(wire, enc...)
				payload, ok := decodeCOBS(nil, enc[1:len(enc)-1])
				if !ok || hex.EncodeToString(payload) != m["payload_hex"] {
					t.Errorf("%v encodes to payload %x, vector has %s", f.Type(), payload, m["payload_hex"])
				}
				if code := FrameType(goldenNum(t, m, "type_code")); code != f.Type() {
					t.Errorf("type_code %v for %v", code, f.Type())
				}
			}
			// Files of frames only: the encoder reproduces them byte for byte
			// (modulo a left-out leading 0x00, which the spec allows).
			if gf.NonFrameSegments == nil {
				if !bytes.Equal(bytes.ReplaceAll(stream, []byte{0, 0}, []byte{0}), bytes.ReplaceAll(wire, []byte{0, 0}, []byte{0})) {
					t.Errorf("encoded frames differ from %s:\n got % x\nwant % x", gf.File, wire, stream)
				}
			}
			// The decoder, fed the file one byte at a time and all at once,
			// finds exactly the described frames.
			fields, coding := sample.FieldPC, sample.CodingV10
			for _, f := range want {
				if d, ok := f.(*Data); ok {
					fields, coding = d.Fields, d.Coding
					break
				}
			}
			for _, chunk := range []int{1, len(stream)} {
				d := NewDecoder(fields)
				d.SetCoding(coding)
				got, logs := collect(d, stream, chunk)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("chunk %d: decoded\n%+v\nwant\n%+v", chunk, got, want)
				}
				var wantLogs []string
				var wantBad uint64
				for _, s := range gf.NonFrameSegments {
					b, _ := hex.DecodeString(s)
					if isText(b) {
						wantLogs = append(wantLogs, strings.TrimRight(string(b), "\r\n"))
					} else {
						wantBad++
					}
				}
				st := d.Stats()
				if !reflect.DeepEqual(logs, wantLogs) || st.CRCErrors+st.BadFrames != wantBad {
					t.Errorf("chunk %d: logs %q want %q; stats %+v, want %d bad segments", chunk, logs, wantLogs, st, wantBad)
				}
			}
		})
	}
}

// The protocol's limits are written three times: in the spec's vector
// generator (vectors.json), in the firmware's header and here. They must
// agree, and MaxRecordSize must be what the encoder writes at worst.
func TestProtocolLimits(t *testing.T) {
	vectors := readVectors(t)
	l := vectors.Limits
	if l.MaxPayload != MaxPayload || l.MaxRecordBytes != sample.MaxRecordSize || l.MaxStackRecordBytes != sample.MaxStackRecordSize ||
		l.StackWordsMax != sample.MaxStackWords || l.StackRefWindow != sample.StackRefWindow {
		t.Errorf("vectors.json limits %+v; Go has MaxPayload %d, MaxRecordSize %d, MaxStackRecordSize %d, MaxStackWords %d, window %d",
			l, MaxPayload, sample.MaxRecordSize, sample.MaxStackRecordSize, sample.MaxStackWords, sample.StackRefWindow)
	}
	header, err := os.ReadFile(filepath.Join("..", "..", "firmware-sampler", "core", "tcmprof_sampler.h"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{
		"TCMP_PROTO_MAJOR": ProtoMajor, "TCMP_PROTO_MINOR": ProtoMinor, "TCMP_MAX_PAYLOAD": MaxPayload,
		"TCMP_MAX_ENCODED": maxEncoded, "TCMP_MAX_RECORD_BYTES": sample.MaxRecordSize, "TCMP_MAX_BUILD_ID": sample.MaxBuildID,
		"TCMP_MAX_STACK_RECORD_BYTES": sample.MaxStackRecordSize, "TCMP_STACK_WORDS_MIN": sample.MinStackWords,
		"TCMP_STACK_WORDS_MAX": sample.MaxStackWords, "TCMP_STACK_WORDS_DEFAULT": DefaultStackWords,
		"TCMP_STACK_REF_WINDOW": sample.StackRefWindow, "TCMP_MAX_JITTER_PCT": MaxJitterPct,
		"TCMP_MAX_RECORD_BYTES_V14": sample.MaxRecordSizeV14, "TCMP_MAX_STACK_RECORD_BYTES_V14": sample.MaxStackRecordSizeV14,
		"TCMP_V14_KEY_INTERVAL": sample.V14KeyInterval,
	} {
		m := regexp.MustCompile(`(?m)^#define ` + name + `\s+(\d+)u?\b`).FindSubmatch(header)
		if m == nil {
			t.Errorf("tcmprof_sampler.h does not define %s", name)
			continue
		}
		if got, _ := strconv.Atoi(string(m[1])); got != want {
			t.Errorf("tcmprof_sampler.h: %s is %d, Go has %d", name, got, want)
		}
	}
	// The worst case: every field's delta at its longest varint, and with
	// STACK as many words as a run takes, each a 5-byte literal.
	worst := sample.Record{PC: 0x80000000, LR: 0x80000000, Exc: 511, Thread: 0x80000000}
	if n := len(sample.NewRecordCoder(sample.FieldPC|sample.FieldLR|sample.FieldExc|sample.FieldThread, sample.CodingV10).Append(nil, worst)); n != sample.MaxRecordSize {
		t.Errorf("the worst-case record encodes to %d bytes, MaxRecordSize is %d", n, sample.MaxRecordSize)
	}
	worst.SP = 0x80000000
	for range sample.MaxStackWords {
		worst.Stack = append(worst.Stack, 0x80000000)
	}
	if n := len(sample.NewRecordCoder(sample.AllFields, sample.CodingV10).Append(nil, worst)); n != sample.MaxStackRecordSize {
		t.Errorf("the worst-case STACK record encodes to %d bytes, MaxStackRecordSize is %d", n, sample.MaxStackRecordSize)
	}
	// In the coding of 1.4 a bad case follows a record of another thread:
	// a new thread, and literals 2^26 from every candidate (64 words cannot
	// all be 2^28 apart, which the 6-byte bound allows for).
	c := sample.NewRecordCoder(sample.AllFields, sample.CodingV14)
	c.Append(nil, sample.Record{PC: 0x80000000, LR: 0x80000000, Exc: 1, Thread: 0x80000000, SP: 0x80000000})
	worst = sample.Record{LR: 0x1, Exc: 511, Thread: 0, SP: 0x1}
	for i := range sample.MaxStackWords {
		worst.Stack = append(worst.Stack, uint32(i*37%64)<<26)
	}
	if n := len(c.Append(nil, worst)); n > sample.MaxStackRecordSizeV14 || n < 5*sample.MaxStackWords {
		t.Errorf("a bad-case 1.4 STACK record encodes to %d bytes, MaxStackRecordSizeV14 is %d", n, sample.MaxStackRecordSizeV14)
	}
	// The host's --jitter default is the one a Zephyr build of the sampler
	// starts with from its shell.
	kconfig, err := os.ReadFile(filepath.Join("..", "..", "firmware-sampler", "zephyr", "Kconfig"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)config TCMPROF_SAMPLER_JITTER_PCT\n.*?\n\tdefault (\d+)\n`).FindSubmatch(kconfig)
	if m == nil {
		t.Fatal("zephyr/Kconfig has no default for TCMPROF_SAMPLER_JITTER_PCT")
	}
	if got, _ := strconv.Atoi(string(m[1])); got != DefaultJitterPct {
		t.Errorf("zephyr/Kconfig: TCMPROF_SAMPLER_JITTER_PCT defaults to %d, Go has %d", got, DefaultJitterPct)
	}
}

// A DataWriter splits the records of every multi-frame DATA vector
// exactly as the spec's generator does, key frames and continuing ones.
func TestFillDataMatchesVectors(t *testing.T) {
	checked := 0
	for _, gf := range readVectors(t).Files {
		var datas []*Data
		for _, m := range gf.Frames {
			if d, ok := goldenFrame(t, m).(*Data); ok {
				datas = append(datas, d)
			}
		}
		if len(datas) < 2 {
			continue // a single frame may be short of full
		}
		var recs []sample.Record
		var chain *sample.RecordCoder
		for _, d := range datas {
			recs = append(recs, d.Records...)
			chain = chainData(d, chain)
		}
		w := NewDataWriter(datas[0].Fields, datas[0].Coding)
		for i, d := range datas[:len(datas)-1] { // the last frame holds what is left
			got := w.Fill(d.First, recs)
			if !reflect.DeepEqual(got, d) {
				t.Errorf("%s: frame %d: FillData puts %d records in it, the vector %d", gf.File, i, len(got.Records), len(d.Records))
			}
			recs = recs[len(d.Records):]
		}
		checked++
	}
	if checked == 0 {
		t.Error("no vector has several DATA frames to check the fill rule on")
	}
}
