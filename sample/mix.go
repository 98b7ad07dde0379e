// SPDX-License-Identifier: Apache-2.0

package sample

import (
	"bytes"
	"errors"
	"fmt"
)

// Part is one capture of a mix and the share of the device's time its
// workload takes (any positive number: the weights are relative).
type Part struct {
	Name    string // how messages name it: the file it came from
	Capture *Capture
	Weight  float64
}

// Mix makes one capture of several of the same image, so that a product
// with several workloads (idle with telemetry, bulk transfer, small-packet
// echo) is profiled and planned for its mix: each part's records stand for
// its weight's share of the time, whatever its own length. A part's records
// are repeated (the part whose records each stand for the least time
// once, the others proportionally more, fractions spread evenly), so the
// mixed shares are exact but the counts are not independent samples: an
// interval computed from them is too narrow.
//
// The parts must come from one image (the same build-id) and have the
// fields the mix keeps: those all of them recorded. The mix is numbered
// afresh from 0 and has no missing ranges (each part's gaps are its own),
// no model header unless there is one part, and the first part's device
// settings and host.
func Mix(parts []Part) (*Capture, error) {
	if len(parts) == 0 {
		return nil, errors.New("no capture to mix")
	}
	if len(parts) == 1 {
		return parts[0].Capture, nil
	}
	first := parts[0].Capture
	fields := first.Header.Fields
	for _, p := range parts {
		c := p.Capture
		if !(p.Weight > 0) {
			return nil, fmt.Errorf("%s: weight %g: a mix's weights are positive numbers", p.Name, p.Weight)
		}
		if len(c.Records) == 0 {
			return nil, fmt.Errorf("%s: no records to mix", p.Name)
		}
		if !bytes.Equal(c.Header.BuildID, first.Header.BuildID) {
			return nil, fmt.Errorf("%s is of another image than %s (build-id %x, not %x): a mix is of one image", p.Name, parts[0].Name, c.Header.BuildID, first.Header.BuildID)
		}
		fields &= c.Header.Fields
	}
	if fields&FieldLR == 0 {
		fields &^= FieldStack // STACK needs LR
	}
	mix := &Capture{Header: first.Header, Host: first.Host}
	mix.Header.Fields = fields
	mix.Header.Dropped, mix.Header.HeldFrom = 0, 0
	if fields&FieldStack == 0 {
		mix.Header.StackWords = 0
	}
	copies := Copies(parts)
	for pi, p := range parts {
		if p.Capture.Threads != nil && fields&FieldThread != 0 {
			if mix.Threads == nil {
				mix.Threads = map[uint32]string{}
			}
			for id, name := range p.Capture.Threads {
				if _, ok := mix.Threads[id]; !ok {
					mix.Threads[id] = name
				}
			}
		}
		owed := 0.0
		for _, r := range p.Capture.Records {
			owed += copies[pi]
			for ; owed >= 0.5; owed-- {
				r.Index = uint32(len(mix.Records))
				if fields&FieldStack == 0 {
					r.SP, r.Stack = 0, nil
				}
				if fields&FieldLR == 0 {
					r.LR = 0
				}
				if fields&FieldExc == 0 {
					r.Exc = 0
				}
				if fields&FieldThread == 0 {
					r.Thread = 0
				}
				mix.Records = append(mix.Records, r)
			}
		}
	}
	n := uint32(len(mix.Records))
	mix.Header.Taken, mix.Header.Stored = n, n
	return mix, nil
}

// Copies is, per part of a mix Mix accepts (positive weights, records in
// every part), how many records of the mix each of the part's records
// becomes: 1 for the part whose records stand for the least time (weight
// per record), proportionally more for the others. A count taken of one
// part alone times its copies is that count in the mix's units.
func Copies(parts []Part) []float64 {
	minTime := 0.0 // the least time one record stands for, in units of weight per record
	for _, p := range parts {
		if t := p.Weight / float64(len(p.Capture.Records)); minTime == 0 || t < minTime {
			minTime = t
		}
	}
	copies := make([]float64, len(parts))
	for i, p := range parts {
		copies[i] = p.Weight / float64(len(p.Capture.Records)) / minTime
	}
	return copies
}
