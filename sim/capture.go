// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"errors"
	"fmt"
	"math"

	"github.com/tcmprof/tcmprof/sample"
	"github.com/tcmprof/tcmprof/sample/device"
)

// Capture turns the run's samples into a capture as the firmware sampler
// would have taken it on the modelled board: PC records, one every
// jittered interval of modelled cycles, with a HEADER whose CPU and timer
// clock is the model's clock. buildID should be the traced image's, so
// that report, profile and plan accept it for that ELF. host says who
// made it (its time, the tool version).
func (r *Result) Capture(buildID []byte, host sample.HostInfo) (*sample.Capture, error) {
	s := r.Config.Sampling
	if s == nil {
		return nil, errors.New("the run did not sample (no Sampling in its Config)")
	}
	if len(r.Samples) > math.MaxUint32-1 {
		return nil, fmt.Errorf("%d samples do not fit a capture file; lower the rate", len(r.Samples))
	}
	if len(buildID) > sample.MaxBuildID {
		return nil, fmt.Errorf("build-id of %d bytes (at most %d)", len(buildID), sample.MaxBuildID)
	}
	mean, _, _ := s.Interval()
	n := uint32(len(r.Samples))
	c := &sample.Capture{
		Header: sample.Header{
			ProtoMajor: device.ProtoMajor, ProtoMinor: device.ProtoMinor,
			State: sample.StateHolding, Mode: sample.ModeSnapshot, Fields: sample.FieldPC,
			JitterPct: s.JitterPct, CPUHz: s.ClockHz, TimerHz: s.ClockHz, IntervalTicks: mean,
			Capacity: n, Taken: n, Stored: n, BuildID: buildID,
		},
		Host: host,
		Model: &sample.ModelInfo{
			Tool:      "tcmprof sim",
			CacheSize: r.Config.Cache.Size, CacheWays: r.Config.Cache.Ways, LineSize: r.Config.Cache.LineSize,
			Policy: r.Config.Policy.String(), Penalty: r.Config.Penalty, Cycles: r.Cycles(),
		},
	}
	if u := r.Config.Unit; u != nil {
		c.Model.Unit, c.Model.Warmup, c.Model.Units = u.Name, u.Warmup, r.Units
	}
	if n > 0 {
		c.Records = make([]sample.Record, n)
		for i, pc := range r.Samples {
			c.Records[i] = sample.Record{Index: uint32(i), PC: pc &^ 1}
		}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}
