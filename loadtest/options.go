// SPDX-License-Identifier: Apache-2.0

// Package loadtest measures a UDP echo service the way the Teensy and USB
// overload reports did: the host offers fixed rates of datagrams in steps,
// each for a fixed time, in several independent passes, and counts the
// echoes that arrive inside a window of each step (goodput). From that come
// the lossless rate (the highest offered rate up to which every step of
// every pass was answered at ≥ 99 %), the peak goodput, and the receive
// livelock signature (goodput at the highest offered rate against the
// peak). Each datagram carries a sequence number and its send time, so
// echoes are matched to what was sent, duplicates and reordering are
// counted, and round-trip times are measured.
//
// The package needs nothing of the profiler: it is the measurement that
// tells whether a placement helped. Measure drives a target; the summary, the
// table, CSV, JSON and SVG writers and Compare work on the Run it returns.
package loadtest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Options of a run. DefaultOptions are the reports' method; Rates has no
// default (it depends on the device).
type Options struct {
	// Rates are the offered rates of the steps, datagrams per second,
	// ascending; each pass runs them all in this order.
	Rates []float64
	// StepTime is how long each rate is offered.
	StepTime time.Duration
	// WindowStart and WindowEnd bound, relative to the start of a step, the
	// echoes that count as goodput: the start of a step (queues filling) and
	// echoes after it (queued by flow control, delivered late) would make the
	// result depend on the step length.
	WindowStart, WindowEnd time.Duration
	// Passes is the number of independent passes over all rates.
	Passes int
	// Payload is the UDP payload size in bytes (at least HeaderSize).
	Payload int
	// Drain is how long a pass waits after its last step for late echoes.
	Drain time.Duration
	// ProbeTimeout bounds the check, before the first step, that the target
	// answers at all.
	ProbeTimeout time.Duration
	// Local is the address and port to send from ("" picks any). QEMU's
	// user-mode network sends a UDP forward's replies to a fixed host port.
	Local string
}

// DefaultOptions: 2 s steps, goodput between 0.5 s and 2 s, 3 passes,
// 32-byte payloads.
func DefaultOptions() Options {
	return Options{
		StepTime:     2 * time.Second,
		WindowStart:  500 * time.Millisecond,
		WindowEnd:    2 * time.Second,
		Passes:       3,
		Payload:      32,
		Drain:        500 * time.Millisecond,
		ProbeTimeout: 2 * time.Second,
	}
}

// MaxPayload is the largest payload that fits one Ethernet frame with IPv4
// and UDP headers.
const MaxPayload = 1472

// Validate checks the options once, so that Run and the file reader agree.
func (o *Options) Validate() error {
	if len(o.Rates) == 0 {
		return errors.New("no rates to offer: give --steps and/or --tail")
	}
	for i, r := range o.Rates {
		if !(r > 0) || math.IsInf(r, 0) {
			return fmt.Errorf("rate %v: every offered rate must be a positive number of datagrams per second", r)
		}
		if i > 0 && r <= o.Rates[i-1] {
			return fmt.Errorf("rates must ascend: %v after %v", r, o.Rates[i-1])
		}
	}
	switch {
	case o.StepTime <= 0:
		return fmt.Errorf("step time %v must be positive", o.StepTime)
	case o.WindowStart < 0 || o.WindowEnd <= o.WindowStart:
		return fmt.Errorf("window %v:%v must be a non-empty range starting at or after 0", o.WindowStart, o.WindowEnd)
	case o.WindowEnd > o.StepTime:
		return fmt.Errorf("window end %v is after the end of the %v step: echoes after the step are late by definition; give a --window that ends within the step", o.WindowEnd, o.StepTime)
	case o.Passes < 1:
		return fmt.Errorf("passes %d: need at least one", o.Passes)
	case o.Payload < HeaderSize || o.Payload > MaxPayload:
		return fmt.Errorf("payload %d bytes: must be %d to %d (sequence number, send time and check need %d)", o.Payload, HeaderSize, MaxPayload, HeaderSize)
	case o.Drain < 0 || o.ProbeTimeout <= 0:
		return errors.New("drain must not be negative and the probe timeout must be positive")
	}
	for _, r := range o.Rates {
		if r*o.StepTime.Seconds() < 1 {
			return fmt.Errorf("rate %v/s sends no datagram in a %v step", r, o.StepTime)
		}
	}
	return nil
}

// window returns the goodput window's length.
func (o *Options) window() time.Duration { return o.WindowEnd - o.WindowStart }

// ParseSteps parses linear steps "start:step:stop" (rates per second):
// start, start+step, … up to and including stop.
func ParseSteps(spec string) ([]float64, error) {
	parts := strings.Split(spec, ":")
	if len(parts) != 3 {
		return nil, fmt.Errorf("steps %q: want start:step:stop, e.g. 500:500:30000", spec)
	}
	var v [3]float64
	for i, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !(f > 0) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("steps %q: %q is not a positive rate", spec, p)
		}
		v[i] = f
	}
	start, step, stop := v[0], v[1], v[2]
	if stop < start {
		return nil, fmt.Errorf("steps %q: stop %v is below start %v", spec, stop, start)
	}
	n := math.Floor((stop-start)/step+1e-9) + 1
	if n > 10000 {
		return nil, fmt.Errorf("steps %q: %v steps; at most 10000", spec, n)
	}
	rates := make([]float64, 0, int(n))
	for i := 0; i < int(n); i++ {
		rates = append(rates, start+float64(i)*step)
	}
	return rates, nil
}

// ParseTail parses a comma-separated list of extra rates ("10000,20000,50000").
func ParseTail(spec string) ([]float64, error) {
	var rates []float64
	for _, p := range strings.Split(spec, ",") {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !(f > 0) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("tail %q: %q is not a positive rate", spec, p)
		}
		rates = append(rates, f)
	}
	return rates, nil
}

// MergeRates returns the linear steps' and the tail's rates together,
// ascending and without repeats.
func MergeRates(steps, tail []float64) []float64 {
	all := slices.Concat(steps, tail)
	slices.Sort(all)
	return slices.Compact(all)
}

// ParseWindow parses "start:end" as two durations ("0.5s:2s"; a bare
// number is seconds).
func ParseWindow(spec string) (start, end time.Duration, err error) {
	a, b, ok := strings.Cut(spec, ":")
	if !ok {
		return 0, 0, fmt.Errorf("window %q: want start:end, e.g. 0.5s:2s", spec)
	}
	if start, err = parseSeconds(a); err == nil {
		end, err = parseSeconds(b)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("window %q: %w", spec, err)
	}
	return start, end, nil
}

func parseSeconds(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(f * float64(time.Second)), nil
	}
	return time.ParseDuration(s)
}
