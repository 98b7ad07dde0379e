// SPDX-License-Identifier: Apache-2.0

// Package sample is what a run of the firmware-sampler leaves: the
// capture, its records and their coding, and the .tcmcap capture file
// (docs/capture-format.md). Package sample/device takes captures from a
// device: the wire protocol (firmware-sampler/docs/protocol.md), the
// serial transport and the drain session.
//
// A Capture is the unit of record: the device's HEADER (clocks, interval,
// fields, build-id), the records, the thread table, what never arrived, and
// where and how it was taken. Validate is the one place its rules live.
package sample

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/tcmprof/tcmprof/internal/wording"
)

// Capture is one run's samples as the host received them.
type Capture struct {
	Header  Header            // the device's last HEADER of the run (its counters at drain time)
	Records []Record          // received records, ascending by Index
	Threads map[uint32]string // thread id → name, when the run had FieldThread
	// StackTops are the words below each thread's stack top (protocol
	// 1.3), by thread id, when the run had FieldThread and FieldStack and
	// the device sent them.
	StackTops map[uint32]StackTop
	Missing   []Range // index ranges that never arrived, ascending
	Host      HostInfo
	Stats     DecodeStats
	// Model is set when no device took the capture: tcmprof sim modelled
	// it from an execution trace (docs/sim.md); nil for a real run.
	Model *ModelInfo
}

// ModelInfo says how a modelled capture was made: the PC sampled every
// interval of modelled cycles (instructions plus instruction-cache fills)
// rather than of a board's timer.
type ModelInfo struct {
	Tool      string `json:"tool"` // "tcmprof sim"
	CacheSize uint32 `json:"cache_size"`
	CacheWays uint32 `json:"cache_ways"`
	LineSize  uint32 `json:"line_size"`
	Policy    string `json:"policy"`
	Penalty   uint32 `json:"penalty"` // cycles per line fill
	Unit      string `json:"unit,omitempty"`
	Warmup    uint64 `json:"warmup,omitempty"`
	Units     uint64 `json:"units,omitempty"`
	Cycles    uint64 `json:"cycles"` // modelled cycles of the window the samples cover
}

// Range is the record indices [Start, End).
type Range struct {
	Start uint32 `json:"start"`
	End   uint32 `json:"end"`
}

// Len is the number of indices in r.
func (r Range) Len() uint32 { return r.End - r.Start }

func (r Range) String() string {
	if r.Len() == 1 {
		return fmt.Sprintf("%d", r.Start)
	}
	return fmt.Sprintf("%d-%d", r.Start, r.End-1)
}

// HostInfo says where, when and with what a capture was taken.
type HostInfo struct {
	Time        time.Time `json:"time"`           // when the capture command started
	Port        string    `json:"port,omitempty"` // serial device path
	Baud        int       `json:"baud,omitempty"`
	USB         USBInfo   `json:"usb"`
	ToolVersion string    `json:"tool_version,omitempty"`
}

// USBInfo describes the USB device behind the port, when it is one.
type USBInfo struct {
	VID          string `json:"vid,omitempty"` // hex, as sysfs spells it
	PID          string `json:"pid,omitempty"`
	Serial       string `json:"serial,omitempty"`
	Product      string `json:"product,omitempty"`
	Manufacturer string `json:"manufacturer,omitempty"`
}

// Span is the index range the capture covers: its records and its missing
// ranges together. It is empty for a capture with neither.
func (c *Capture) Span() Range {
	var s Range
	first := true
	add := func(r Range) {
		if first {
			s, first = r, false
			return
		}
		s.Start, s.End = min(s.Start, r.Start), max(s.End, r.End)
	}
	if n := len(c.Records); n > 0 {
		add(Range{c.Records[0].Index, c.Records[n-1].Index + 1})
	}
	for _, m := range c.Missing {
		add(m)
	}
	return s
}

// MissingCount is the number of records in the missing ranges.
func (c *Capture) MissingCount() uint64 {
	var n uint64
	for _, m := range c.Missing {
		n += uint64(m.Len())
	}
	return n
}

// Gaps is what a capture misses, as the commands that read one say it.
type Gaps struct {
	Records uint64  `json:"records"` // missing
	Of      uint64  `json:"of"`      // the records the run holds, Span's length
	Ranges  []Range `json:"ranges"`
	// AtEnd says the run's last records are missing: a drain or stream
	// cut short (a disconnect, a killed emulator) rather than lost frames.
	AtEnd bool `json:"at_end"`
}

// Gaps says what c misses; nil when nothing is missing.
func (c *Capture) Gaps() *Gaps {
	if len(c.Missing) == 0 {
		return nil
	}
	return &Gaps{Records: c.MissingCount(), Of: uint64(c.Span().Len()), Ranges: c.Missing,
		AtEnd: c.Missing[len(c.Missing)-1].End == c.Span().End}
}

// String is the warning every command gives about an incomplete capture.
func (g *Gaps) String() string {
	where := "within the run"
	switch {
	case g.AtEnd && len(g.Ranges) == 1:
		where = "at the end of the run"
	case g.AtEnd:
		where = "the last at the end of the run"
	}
	return fmt.Sprintf("%d of %d records missing (%s), indices %s (%s): the figures are of the %d that arrived",
		g.Records, g.Of, wording.Percent(float64(g.Records)/float64(g.Of)), FormatRanges(g.Ranges, 10), where, g.Of-g.Records)
}

// Validate checks the rules every capture obeys: PC is among the fields
// (and LR with STACK), records carry only the run's fields and at most the
// run's stack words, indices ascend, and the records and the missing
// ranges together cover one contiguous range exactly.
func (c *Capture) Validate() error {
	h := &c.Header
	if h.Fields&FieldPC == 0 {
		return errors.New("fields do not include PC")
	}
	if h.Fields&^AllFields != 0 {
		return fmt.Errorf("unknown fields 0x%02x", uint8(h.Fields&^AllFields))
	}
	if h.Fields&FieldStack != 0 {
		if h.Fields&FieldLR == 0 {
			return errors.New("fields include STACK but not LR")
		}
		if h.StackWords < MinStackWords || h.StackWords > MaxStackWords {
			return fmt.Errorf("%d stack words per record (want %d to %d)", h.StackWords, MinStackWords, MaxStackWords)
		}
	}
	if len(h.BuildID) > MaxBuildID {
		return fmt.Errorf("build-id of %d bytes (at most %d)", len(h.BuildID), MaxBuildID)
	}
	for i, m := range c.Missing {
		if m.Start >= m.End {
			return fmt.Errorf("missing range %d is empty or reversed (%d, %d)", i, m.Start, m.End)
		}
		if i > 0 && m.Start <= c.Missing[i-1].End {
			return fmt.Errorf("missing ranges %v and %v overlap, touch or are out of order", c.Missing[i-1], m)
		}
	}
	next := c.Span().Start
	mi := 0
	for i := range c.Records {
		r := &c.Records[i]
		if mi < len(c.Missing) && c.Missing[mi].Start == next {
			next = c.Missing[mi].End
			mi++
		}
		if r.Index != next || r.Index == math.MaxUint32 {
			return fmt.Errorf("record %d has index %d, want %d (records and missing ranges must cover one range)", i, r.Index, next)
		}
		next++
		if r.PC&1 != 0 {
			return fmt.Errorf("record %d: PC 0x%08x has bit 0 set", r.Index, r.PC)
		}
		if r.Exc > 511 {
			return fmt.Errorf("record %d: exception number %d above 511", r.Index, r.Exc)
		}
		if h.Fields&FieldLR == 0 && r.LR != 0 || h.Fields&FieldExc == 0 && r.Exc != 0 || h.Fields&FieldThread == 0 && r.Thread != 0 ||
			h.Fields&FieldStack == 0 && (r.SP != 0 || r.Stack != nil) {
			return fmt.Errorf("record %d has a field the run did not record (%v)", r.Index, h.Fields)
		}
		if len(r.Stack) > int(h.StackWords) {
			return fmt.Errorf("record %d has %d stack words, the run copied at most %d", r.Index, len(r.Stack), h.StackWords)
		}
	}
	if mi < len(c.Missing) && c.Missing[mi].Start == next {
		mi++
	}
	if mi != len(c.Missing) {
		return fmt.Errorf("missing range %v is not next to the records", c.Missing[mi])
	}
	for id, t := range c.StackTops {
		switch {
		case h.Fields&(FieldThread|FieldStack) != FieldThread|FieldStack:
			return fmt.Errorf("stack tops in a run without the THREAD and STACK fields (%v)", h.Fields)
		case t.Thread != id:
			return fmt.Errorf("stack top of thread %#x filed under %#x", t.Thread, id)
		case len(t.Words) > MaxStackTopWords || 4*uint64(len(t.Words)) > uint64(t.Top):
			return fmt.Errorf("thread %#x: %d stack-top words below %#x", id, len(t.Words), t.Top)
		}
	}
	return nil
}

// DecodeStats counts what the host received. A capture keeps them (its file
// too) to say how clean the line was: device's Decoder fills the stream
// counts, its Session adds the retry counts.
type DecodeStats struct {
	Bytes        uint64 `json:"bytes"`         // bytes received
	Frames       uint64 `json:"frames"`        // frames decoded
	CRCErrors    uint64 `json:"crc_errors"`    // segments that COBS-decoded to a payload with a wrong CRC
	BadFrames    uint64 `json:"bad_frames"`    // frames with a good CRC and an unreadable body
	GarbageBytes uint64 `json:"garbage_bytes"` // bytes that were neither frames nor log text
	LogLines     uint64 `json:"log_lines"`     // lines of log text
	Retries      uint64 `json:"retries"`       // commands sent again after a time-out
	Rerequests   uint64 `json:"rerequests"`    // DRAINs of ranges that did not arrive the first time
	Rerequested  uint64 `json:"rerequested"`   // records in those ranges
}

// FormatRanges lists ranges as "3-9, 15, 20-21", at most max of them.
func FormatRanges(rs []Range, max int) string {
	var parts []string
	for i, r := range rs {
		if i == max {
			parts = append(parts, fmt.Sprintf("and %d more ranges", len(rs)-max))
			break
		}
		parts = append(parts, r.String())
	}
	return strings.Join(parts, ", ")
}
