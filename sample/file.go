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
	FileMinor = 0
)

// fileMagic starts every capture file; the version follows on the same line.
const fileMagic = "tcmcap "

// fileMeta is the JSON section. Its keys are part of the format: rename
// nothing, only add.
type fileMeta struct {
	Device      fileHeader   `json:"device"`
	FirstIndex  uint32       `json:"first_index"`
	RecordCount uint32       `json:"record_count"`
	Missing     []Range      `json:"missing"`
	Threads     []fileThread `json:"threads"`
	Host        HostInfo     `json:"host"`
	Stats       DecodeStats  `json:"stats"`
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
	BuildID        string   `json:"build_id"` // hex
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
			BuildID: hex.EncodeToString(h.BuildID),
		},
		FirstIndex:  c.Span().Start,
		RecordCount: uint32(len(c.Records)),
		Missing:     c.Missing,
		Host:        c.Host,
		Stats:       c.Stats,
	}
	if meta.Missing == nil {
		meta.Missing = []Range{}
	}
	meta.Threads = []fileThread{}
	for id, name := range c.Threads {
		meta.Threads = append(meta.Threads, fileThread{id, name})
	}
	sort.Slice(meta.Threads, func(i, j int) bool { return meta.Threads[i].ID < meta.Threads[j].ID })
	js, err := json.MarshalIndent(meta, "", " ")
	if err != nil {
		return err
	}
	recs := make([]byte, 0, len(c.Records)*3)
	var prev Record
	for _, r := range c.Records {
		recs = appendRecord(recs, h.Fields, &prev, r)
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

var errTruncated = errors.New("truncated capture file")

func parse(data []byte) (*Capture, error) {
	nl := bytes.IndexByte(data, '\n')
	if !bytes.HasPrefix(data, []byte(fileMagic)) || nl < 0 || nl > 32 {
		if bytes.HasPrefix([]byte(fileMagic), data) {
			return nil, errTruncated
		}
		return nil, errors.New("not a tcmprof capture file (no \"tcmcap\" line)")
	}
	major, minor, ok := parseVersion(string(data[len(fileMagic):nl]))
	if !ok {
		return nil, fmt.Errorf("bad capture file version %q", data[len(fileMagic):nl])
	}
	if major > FileMajor {
		return nil, fmt.Errorf("capture file format version %d.%d is newer than this tcmprof reads (%d.%d); update tcmprof",
			major, minor, FileMajor, FileMinor)
	}
	if major < 1 {
		return nil, fmt.Errorf("unknown capture file format version %d.%d", major, minor)
	}
	rest := data[nl+1:]
	section := func() ([]byte, error) {
		if len(rest) < 4 {
			return nil, errTruncated
		}
		n := binary.LittleEndian.Uint32(rest)
		if uint64(n) > uint64(len(rest)-4) {
			return nil, errTruncated
		}
		s := rest[4 : 4+n]
		rest = rest[4+n:]
		return s, nil
	}
	js, err := section()
	if err != nil {
		return nil, err
	}
	recs, err := section()
	if err != nil {
		return nil, err
	}
	if len(rest) < 4 {
		return nil, errTruncated
	}
	end := len(data) - len(rest)
	if crc32.ChecksumIEEE(data[:end]) != binary.LittleEndian.Uint32(rest) {
		return nil, errors.New("capture file is corrupt (checksum mismatch)")
	}
	if len(rest) > 4 {
		return nil, fmt.Errorf("capture file has %d unexpected bytes after its checksum", len(rest)-4)
	}

	var meta fileMeta
	if err := json.Unmarshal(js, &meta); err != nil {
		return nil, fmt.Errorf("capture file metadata: %v", err)
	}
	d := &meta.Device
	buildID, err := hex.DecodeString(d.BuildID)
	if err != nil {
		return nil, fmt.Errorf("capture file metadata: build_id: %v", err)
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
		},
		Missing: meta.Missing,
		Host:    meta.Host,
		Stats:   meta.Stats,
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
	// Every record takes at least one byte, which bounds the allocation.
	if uint64(meta.RecordCount) > uint64(len(recs)) {
		return nil, fmt.Errorf("capture file claims %d records in %d bytes", meta.RecordCount, len(recs))
	}
	c.Records = make([]Record, 0, meta.RecordCount)
	var prev Record
	next, mi := meta.FirstIndex, 0
	for i := uint32(0); i < meta.RecordCount; i++ {
		for mi < len(c.Missing) && c.Missing[mi].Start == next {
			next = c.Missing[mi].End
			mi++
		}
		r, n, err := readRecord(recs, c.Header.Fields, &prev)
		if err != nil {
			return nil, fmt.Errorf("capture file record %d: %v", i, err)
		}
		recs = recs[n:]
		r.Index = next
		next++
		c.Records = append(c.Records, r)
	}
	if len(recs) != 0 {
		return nil, fmt.Errorf("capture file has %d bytes after its %d records", len(recs), meta.RecordCount)
	}
	if len(c.Records) == 0 {
		c.Records = nil
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("invalid capture file: %v", err)
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
