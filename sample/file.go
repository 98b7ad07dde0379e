// SPDX-License-Identifier: Apache-2.0

package sample

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/tcmprof/tcmprof/internal/atomicfile"
)

// Capture file format version (docs/capture-format.md). A reader refuses a
// newer major; minor versions only add JSON keys.
const (
	FileMajor = 1
	FileMinor = 4 // 1.1: the "model" key; 1.2: the STACK field; 1.3: device.coding; 1.4: stack_tops
)

// fileMagic starts every capture file; the version follows on the same line.
const fileMagic = "tcmcap "

// IsCaptureFile reports whether the file at path starts with the capture
// file's magic, so that a command given a capture or a pprof profile can
// tell which it has before reading either. It checks only the magic: a
// file that passes may still fail ReadFile.
func IsCaptureFile(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, len(fileMagic))
	n, _ := io.ReadFull(f, head)
	return string(head[:n]) == fileMagic, nil
}

// fileMeta is the JSON section. Its keys are part of the format: rename
// nothing, only add.
type fileMeta struct {
	Device      fileHeader   `json:"device"`
	FirstIndex  uint32       `json:"first_index"`
	RecordCount uint32       `json:"record_count"`
	Missing     []Range      `json:"missing"`
	Threads     []fileThread `json:"threads"`
	StackTops   []StackTop   `json:"stack_tops,omitempty"` // format 1.4
	Host        HostInfo     `json:"host"`
	Stats       DecodeStats  `json:"stats"`
	Model       *ModelInfo   `json:"model,omitempty"`
}

type fileHeader struct {
	ProtoMajor     uint8    `json:"proto_major"`
	ProtoMinor     uint8    `json:"proto_minor"`
	SamplerVersion [3]uint8 `json:"sampler_version"`
	State          uint8    `json:"state"`
	Mode           uint8    `json:"mode"`
	Fields         uint8    `json:"fields"`
	JitterPct      uint8    `json:"jitter_pct"`
	CPUHz          uint32   `json:"cpu_hz"`
	TimerHz        uint32   `json:"timer_hz"`
	IntervalTicks  uint32   `json:"interval_ticks"`
	Capacity       uint32   `json:"capacity"`
	Taken          uint32   `json:"taken"`
	Dropped        uint32   `json:"dropped"`
	Stored         uint32   `json:"stored"`
	HeldFrom       uint32   `json:"held_from"`
	BuildID        string   `json:"build_id"`              // hex
	StackWords     uint8    `json:"stack_words,omitempty"` // format 1.2
	Coding         uint8    `json:"coding,omitempty"`      // format 1.3: the wire's, not the file's
}

type fileThread struct {
	ID   uint32 `json:"id"`
	Name string `json:"name"`
}

// Write writes c in the capture file format. c must be valid.
func (c *Capture) Write(w io.Writer) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("invalid capture: %w", err)
	}
	h := &c.Header
	meta := fileMeta{
		Device: fileHeader{
			ProtoMajor: h.ProtoMajor, ProtoMinor: h.ProtoMinor, SamplerVersion: h.SamplerVersion,
			State: uint8(h.State), Mode: uint8(h.Mode), Fields: uint8(h.Fields), JitterPct: h.JitterPct,
			CPUHz: h.CPUHz, TimerHz: h.TimerHz, IntervalTicks: h.IntervalTicks, Capacity: h.Capacity,
			Taken: h.Taken, Dropped: h.Dropped, Stored: h.Stored, HeldFrom: h.HeldFrom,
			BuildID: hex.EncodeToString(h.BuildID), StackWords: h.StackWords, Coding: uint8(h.Coding),
		},
		FirstIndex:  c.Span().Start,
		RecordCount: uint32(len(c.Records)),
		Missing:     c.Missing,
		Host:        c.Host,
		Stats:       c.Stats,
		Model:       c.Model,
	}
	if meta.Missing == nil {
		meta.Missing = []Range{}
	}
	meta.Threads = []fileThread{}
	for id, name := range c.Threads {
		meta.Threads = append(meta.Threads, fileThread{id, name})
	}
	sort.Slice(meta.Threads, func(i, j int) bool { return meta.Threads[i].ID < meta.Threads[j].ID })
	for _, t := range c.StackTops {
		meta.StackTops = append(meta.StackTops, t)
	}
	sort.Slice(meta.StackTops, func(i, j int) bool { return meta.StackTops[i].Thread < meta.StackTops[j].Thread })
	js, err := json.MarshalIndent(meta, "", " ")
	if err != nil {
		return err
	}
	recs := make([]byte, 0, len(c.Records)*3)
	coder := NewRecordCoder(h.Fields, CodingV10)
	for _, r := range c.Records {
		recs = coder.Append(recs, r)
	}

	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%s%d.%d\n", fileMagic, FileMajor, FileMinor)
	buf.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(js))))
	buf.Write(js)
	buf.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(recs))))
	crc := crc32.Update(crc32.ChecksumIEEE(buf.Bytes()), crc32.IEEETable, recs)
	bw := bufio.NewWriter(w)
	bw.Write(buf.Bytes())
	bw.Write(recs)
	bw.Write(binary.LittleEndian.AppendUint32(nil, crc))
	return bw.Flush()
}

// Parse reads a capture file. Errors are one line and say what is wrong:
// not a capture file, a newer major version, truncation, corruption.
func Parse(r io.Reader) (*Capture, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return parse(data)
}

// FormatError is a capture file that is not one, is cut short or is
// corrupt, and where: Off is the byte offset at which the problem shows
// (like debug/elf's FormatError). A file cut short wraps
// io.ErrUnexpectedEOF.
type FormatError struct {
	Off int64
	Msg string
	Err error // what a decoder said, or nil
}

func (e *FormatError) Error() string {
	s := fmt.Sprintf("%s at byte %d", e.Msg, e.Off)
	if e.Err != nil && e.Err != io.ErrUnexpectedEOF {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *FormatError) Unwrap() error { return e.Err }

// truncated is the FormatError of a file that ends at off, where what
// should follow.
func truncated(off int, what string) *FormatError {
	return &FormatError{Off: int64(off), Msg: "truncated capture file: " + what + " missing", Err: io.ErrUnexpectedEOF}
}

func parse(data []byte) (*Capture, error) {
	formatError := func(off int, err error, format string, a ...any) error {
		return &FormatError{Off: int64(off), Msg: fmt.Sprintf(format, a...), Err: err}
	}
	nl := bytes.IndexByte(data, '\n')
	if !bytes.HasPrefix(data, []byte(fileMagic)) || nl < 0 || nl > 32 {
		if bytes.HasPrefix([]byte(fileMagic), data) || bytes.HasPrefix(data, []byte(fileMagic)) && nl < 0 && len(data) <= 32 {
			return nil, truncated(len(data), "version line")
		}
		return nil, formatError(0, nil, "not a tcmprof capture file: no %q line", strings.TrimSpace(fileMagic))
	}
	major, minor, ok := parseVersion(string(data[len(fileMagic):nl]))
	if !ok || major < 1 {
		return nil, formatError(len(fileMagic), nil, "bad capture file version %q", data[len(fileMagic):nl])
	}
	if major > FileMajor {
		return nil, fmt.Errorf("capture file format version %d.%d is newer than this tcmprof reads (%d.%d); update tcmprof",
			major, minor, FileMajor, FileMinor)
	}
	off := nl + 1 // of what is read next
	section := func(name string) ([]byte, int, error) {
		if len(data)-off < 4 {
			return nil, 0, truncated(len(data), name+" section length")
		}
		n := binary.LittleEndian.Uint32(data[off:])
		start := off + 4
		if uint64(n) > uint64(len(data)-start) {
			return nil, 0, truncated(len(data), fmt.Sprintf("end of the %d-byte %s section (from byte %d)", n, name, start))
		}
		off = start + int(n)
		return data[start:off], start, nil
	}
	js, jsOff, err := section("metadata")
	if err != nil {
		return nil, err
	}
	recs, recsOff, err := section("records")
	if err != nil {
		return nil, err
	}
	if len(data)-off < 4 {
		return nil, truncated(len(data), "checksum")
	}
	if crc32.ChecksumIEEE(data[:off]) != binary.LittleEndian.Uint32(data[off:]) {
		return nil, formatError(off, nil, "corrupt capture file: checksum mismatch")
	}
	if extra := len(data) - off - 4; extra > 0 {
		return nil, formatError(off+4, nil, "capture file has %d unexpected bytes after its checksum", extra)
	}

	var meta fileMeta
	if err := json.Unmarshal(js, &meta); err != nil {
		at := jsOff
		if se := (*json.SyntaxError)(nil); errors.As(err, &se) {
			at += int(se.Offset)
		}
		return nil, formatError(at, err, "capture file metadata")
	}
	d := &meta.Device
	buildID, err := hex.DecodeString(d.BuildID)
	if err != nil {
		return nil, formatError(jsOff, err, "capture file metadata: build_id")
	}
	if len(buildID) == 0 {
		buildID = nil
	}
	c := &Capture{
		Header: Header{
			ProtoMajor: d.ProtoMajor, ProtoMinor: d.ProtoMinor, SamplerVersion: d.SamplerVersion,
			State: State(d.State), Mode: Mode(d.Mode), Fields: Fields(d.Fields), JitterPct: d.JitterPct,
			CPUHz: d.CPUHz, TimerHz: d.TimerHz, IntervalTicks: d.IntervalTicks, Capacity: d.Capacity,
			Taken: d.Taken, Dropped: d.Dropped, Stored: d.Stored, HeldFrom: d.HeldFrom, BuildID: buildID,
			StackWords: d.StackWords, Coding: Coding(d.Coding),
		},
		Missing: meta.Missing,
		Host:    meta.Host,
		Stats:   meta.Stats,
		Model:   meta.Model,
	}
	if len(c.Missing) == 0 {
		c.Missing = nil
	}
	if len(meta.Threads) > 0 {
		c.Threads = make(map[uint32]string, len(meta.Threads))
		for _, t := range meta.Threads {
			c.Threads[t.ID] = t.Name
		}
	}
	if len(meta.StackTops) > 0 {
		c.StackTops = make(map[uint32]StackTop, len(meta.StackTops))
		for _, t := range meta.StackTops {
			c.StackTops[t.Thread] = t
		}
	}
	// Every record takes at least one byte, which bounds the allocation.
	if uint64(meta.RecordCount) > uint64(len(recs)) {
		return nil, formatError(recsOff, nil, "capture file claims %d records in %d bytes", meta.RecordCount, len(recs))
	}
	c.Records = make([]Record, 0, meta.RecordCount)
	coder := NewRecordCoder(c.Header.Fields, CodingV10)
	next, mi, at := meta.FirstIndex, 0, 0
	for i := uint32(0); i < meta.RecordCount; i++ {
		for mi < len(c.Missing) && c.Missing[mi].Start == next {
			next = c.Missing[mi].End
			mi++
		}
		r, n, err := coder.Read(recs[at:])
		if err != nil {
			return nil, formatError(recsOff+at, err, "capture file record %d", i)
		}
		at += n
		r.Index = next
		next++
		c.Records = append(c.Records, r)
	}
	if at != len(recs) {
		return nil, formatError(recsOff+at, nil, "capture file has %d bytes after its %d records", len(recs)-at, meta.RecordCount)
	}
	if len(c.Records) == 0 {
		c.Records = nil
	}
	if err := c.Validate(); err != nil {
		return nil, formatError(jsOff, err, "invalid capture file")
	}
	return c, nil
}

func parseVersion(s string) (major, minor int, ok bool) {
	a, b, found := strings.Cut(s, ".")
	if !found {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(a)
	minor, err2 := strconv.Atoi(b)
	return major, minor, err1 == nil && err2 == nil && major >= 0 && minor >= 0
}

// WriteFile writes c to path atomically (see atomicfile): path is either
// the old file or the whole new one, never a part.
func WriteFile(path string, c *Capture) error {
	return atomicfile.Write(path, c.Write)
}

// ReadFile reads the capture file at path.
func ReadFile(path string) (*Capture, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}
