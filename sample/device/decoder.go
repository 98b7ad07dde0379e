// SPDX-License-Identifier: Apache-2.0

package device

import (
	"bytes"
	"github.com/tcmprof/tcmprof/sample"
)

// Event is one thing found in the byte stream: a frame, a line of log text,
// or a frame that passed its CRC but could not be read (Err).
type Event struct {
	Frame Frame
	Log   string
	Err   error
}

// Decoder splits a byte stream into frames and log text (protocol §1). Feed
// it bytes as they arrive, in chunks of any size. It never fails, and its
// memory is bounded by the largest frame, whatever it is fed.
type Decoder struct {
	fields    sample.Fields
	coding    sample.Coding
	chain     dataChain // CodingV14's state between DATA frames
	seg       []byte    // the segment since the last 0x00
	candidate bool      // seg may still be a frame: it started at a 0x00 and is short enough
	payload   []byte    // scratch for COBS decoding
	stats     sample.DecodeStats
	events    []Event
}

// NewDecoder returns a decoder that reads DATA records with the given
// fields until a HEADER says otherwise.
func NewDecoder(fields sample.Fields) *Decoder {
	return &Decoder{
		fields:    fields | sample.FieldPC,
		seg:       make([]byte, 0, maxEncoded+1),
		candidate: true,
		payload:   make([]byte, 0, maxEncoded),
	}
}

// SetFields sets the fields DATA records are read with (a stream run's
// START fields, before its first HEADER).
func (d *Decoder) SetFields(f sample.Fields) { d.fields = f | sample.FieldPC }

// SetCoding sets the coding DATA records are read with (a stream run's,
// before its first HEADER).
func (d *Decoder) SetCoding(c sample.Coding) { d.coding = c }

// Follow reads DATA records as h says they are coded.
func (d *Decoder) Follow(h *sample.Header) {
	d.SetFields(h.Fields)
	d.coding = h.Coding
}

// Fields returns the fields DATA records are read with.
func (d *Decoder) Fields() sample.Fields { return d.fields }

// Stats returns the counts so far.
func (d *Decoder) Stats() sample.DecodeStats { return d.stats }

// Feed decodes p and returns the events it completed. The returned slice
// is valid until the next call.
func (d *Decoder) Feed(p []byte) []Event {
	d.events = d.events[:0]
	d.stats.Bytes += uint64(len(p))
	for len(p) > 0 {
		i := bytes.IndexByte(p, 0)
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		for len(chunk) > 0 {
			n := min(len(chunk), cap(d.seg)-len(d.seg))
			d.seg = append(d.seg, chunk[:n]...)
			chunk = chunk[n:]
			if len(d.seg) > maxEncoded {
				// Too long for a frame: text or garbage up to the next 0x00.
				d.candidate = false
				d.flushText(false)
			}
		}
		if i < 0 {
			break
		}
		d.endSegment()
		p = p[i+1:]
	}
	return d.events
}

// Idle tells the decoder the stream has been quiet for a while: complete
// lines of log text still waiting for a 0x00 are emitted, so log output
// shows up without a following frame.
func (d *Decoder) Idle() []Event {
	d.events = d.events[:0]
	if isText(d.seg) && bytes.IndexByte(d.seg, '\n') >= 0 {
		// Text after a 0x00 means the next frame must start with its own
		// 0x00, so the rest of this segment cannot be a frame.
		d.candidate = false
		d.flushText(false)
	}
	return d.events
}

func (d *Decoder) endSegment() {
	defer func() {
		d.seg = d.seg[:0]
		d.candidate = true
	}()
	if len(d.seg) == 0 {
		return
	}
	var payloadErr error
	if d.candidate {
		p, ok := decodeCOBS(d.payload[:0], d.seg)
		if ok && len(p) >= minPayload && len(p) <= MaxPayload {
			f, err := parsePayload(p, d.fields, d.coding, &d.chain)
			if err == nil {
				d.stats.Frames++
				if h, ok := f.(*HeaderFrame); ok {
					d.Follow(&h.Header)
				}
				d.events = append(d.events, Event{Frame: f})
				return
			}
			payloadErr = err
		}
	}
	if isText(d.seg) {
		d.flushText(true)
		return
	}
	switch {
	case payloadErr == ErrCRC:
		d.stats.CRCErrors++
	case payloadErr != nil:
		d.stats.BadFrames++
		d.events = append(d.events, Event{Err: payloadErr})
	default:
		d.stats.GarbageBytes += uint64(len(d.seg))
	}
}

// flushText emits the lines of d.seg when it is text and counts it as
// garbage otherwise. Unless final, an incomplete last line stays in d.seg
// (when there is room for more).
func (d *Decoder) flushText(final bool) {
	if !isText(d.seg) {
		d.stats.GarbageBytes += uint64(len(d.seg))
		d.seg = d.seg[:0]
		return
	}
	rest := d.seg
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		d.emitLine(rest[:i])
		rest = rest[i+1:]
	}
	if final || len(rest) > maxEncoded {
		d.emitLine(rest)
		rest = nil
	}
	d.seg = append(d.seg[:0], rest...)
}

func (d *Decoder) emitLine(b []byte) {
	b = bytes.TrimRight(b, "\r")
	if len(b) == 0 {
		return
	}
	d.stats.LogLines++
	d.events = append(d.events, Event{Log: string(b)})
}

// isText reports whether b looks like log text: no control bytes but tab,
// CR, LF and ESC (for ANSI colours). Bytes >= 0x80 pass, for UTF-8.
func isText(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\r' && c != '\n' && c != 0x1b || c == 0x7f {
			return false
		}
	}
	return len(b) > 0
}
