// SPDX-License-Identifier: Apache-2.0

package loadtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"time"
)

// FormatVersion names the JSON layout of a Run.
const FormatVersion = "tcmprof-udp-echo/1"

// Run is one measurement: the settings and, per pass and offered rate, what
// was sent and what came back. Summary is derived from the steps.
type Run struct {
	Format      string    `json:"format"`
	Label       string    `json:"label,omitempty"`
	Target      string    `json:"target"`
	Started     time.Time `json:"started"`
	ToolVersion string    `json:"tool_version,omitempty"`
	Settings    Settings  `json:"settings"`
	Steps       []Step    `json:"steps"`
	// Unmatched counts datagrams that arrived but match nothing this run
	// sent (another run's, truncated, merged, corrupted).
	Unmatched int     `json:"unmatched"`
	Summary   Summary `json:"summary"`
}

// Settings are the Options a run used, in the JSON form (durations in
// seconds).
type Settings struct {
	Rates        []float64 `json:"rates"`
	StepTime     float64   `json:"step_time_s"`
	WindowStart  float64   `json:"window_start_s"`
	WindowEnd    float64   `json:"window_end_s"`
	Passes       int       `json:"passes"`
	Payload      int       `json:"payload"`
	Drain        float64   `json:"drain_s"`
	ProbeTimeout float64   `json:"probe_timeout_s"`
}

func settingsOf(o Options) Settings {
	return Settings{Rates: o.Rates, StepTime: o.StepTime.Seconds(), WindowStart: o.WindowStart.Seconds(),
		WindowEnd: o.WindowEnd.Seconds(), Passes: o.Passes, Payload: o.Payload, Drain: o.Drain.Seconds(),
		ProbeTimeout: o.ProbeTimeout.Seconds()}
}

// Options converts the settings back.
func (s Settings) Options() Options {
	d := func(sec float64) time.Duration { return time.Duration(math.Round(sec * 1e9)) }
	return Options{Rates: s.Rates, StepTime: d(s.StepTime), WindowStart: d(s.WindowStart), WindowEnd: d(s.WindowEnd),
		Passes: s.Passes, Payload: s.Payload, Drain: d(s.Drain), ProbeTimeout: d(s.ProbeTimeout)}
}

// Step is one offered rate in one pass. The counts are measured; the rates,
// the loss and the two flags are derived from them (Run.derive).
type Step struct {
	Pass    int     `json:"pass"` // from 1
	Offered float64 `json:"offered"`
	// Start is when the step began, in seconds after the run's Started:
	// it places the step, and its goodput window, in wall-clock time
	// (beside a device's log, or a capture taken at the same time).
	Start float64 `json:"start_s"`
	// Sent counts datagrams the host's socket accepted; SendErrors the
	// ones it refused (the host's loss, which the target never saw).
	Sent       int     `json:"sent"`
	SendErrors int     `json:"send_errors"`
	Achieved   float64 `json:"achieved"` // sent per second of the step
	// Echoes counts distinct datagrams of this step that came back at any
	// time; InWindow the ones that arrived inside the goodput window.
	Echoes     int     `json:"echoes"`
	InWindow   int     `json:"in_window"`
	Goodput    float64 `json:"goodput"` // InWindow per second of the window
	Late       int     `json:"late"`    // echoes that arrived after the step ended
	Duplicates int     `json:"duplicates"`
	Reordered  int     `json:"reordered"` // echoes of a lower sequence number than one already seen
	LossPct    float64 `json:"loss_pct"`  // sent datagrams that never came back
	RTTP50     float64 `json:"rtt_p50_ms"`
	RTTP99     float64 `json:"rtt_p99_ms"`
	// HostLimited: the host sent less than 99 % of the offered rate; the
	// step measures the host, not the target.
	HostLimited bool `json:"host_limited"`
	// Answered: at least 99 % of the offered rate came back inside the
	// window (less one datagram, which the window's edges can cut off).
	Answered bool `json:"answered"`
}

// Thresholds of the reports' definitions.
const (
	answeredShare  = 0.99 // lossless: every step answered at ≥ 99 %
	achievedShare  = 0.99 // below this share of the offered rate the host is the limit
	livelockShare  = 0.90 // goodput at the highest rate below this share of the peak
	windowEdgeSlop = 1    // datagrams a window edge can cut off
)

// derive computes a step's rates, loss and flags from its counts.
func (s *Step) derive(o *Options) {
	s.Achieved = float64(s.Sent) / o.StepTime.Seconds()
	s.Goodput = float64(s.InWindow) / o.window().Seconds()
	s.LossPct = 0
	if s.Sent > 0 {
		s.LossPct = 100 * float64(s.Sent-s.Echoes) / float64(s.Sent)
	}
	s.HostLimited = s.Achieved < achievedShare*s.Offered
	s.Answered = float64(s.InWindow) >= answeredShare*s.Offered*o.window().Seconds()-windowEdgeSlop
}

// RatePoint is one offered rate over all passes.
type RatePoint struct {
	Offered     float64 `json:"offered"`
	Passes      int     `json:"passes"`
	Goodput     float64 `json:"goodput"`    // mean over passes
	GoodputSD   float64 `json:"goodput_sd"` // sample standard deviation over passes
	Achieved    float64 `json:"achieved"`   // mean
	LossPct     float64 `json:"loss_pct"`   // mean
	Late        int     `json:"late"`       // total
	Duplicates  int     `json:"duplicates"` // total
	Reordered   int     `json:"reordered"`  // total
	RTTP50      float64 `json:"rtt_p50_ms"` // median over passes
	RTTP99      float64 `json:"rtt_p99_ms"` // highest over passes
	Answered    bool    `json:"answered"`   // in every pass
	HostLimited bool    `json:"host_limited"`
}

// Summary is what a run says about the target.
type Summary struct {
	Curve []RatePoint `json:"curve"`
	// Lossless is the highest offered rate up to which every step of every
	// pass was answered; 0 when the lowest rate already lost.
	Lossless float64 `json:"lossless"`
	// LosslessIsHighest: every rate was answered, so the target's limit is
	// above the rates tried and Lossless is a lower bound.
	LosslessIsHighest bool `json:"lossless_is_highest_rate"`
	// Peak is the mean over passes of each pass's highest goodput, PeakSD
	// its standard deviation; PeakAt the offered rate where the mean curve
	// is highest.
	Peak   float64 `json:"peak"`
	PeakSD float64 `json:"peak_sd"`
	PeakAt float64 `json:"peak_at"`
	// AtHighest is the mean goodput at the highest offered rate; Livelock
	// says it fell below 90 % of the peak: the target spends its time on
	// datagrams it then drops (receive livelock).
	AtHighest   float64 `json:"at_highest"`
	AtHighestSD float64 `json:"at_highest_sd"`
	Livelock    bool    `json:"livelock"`
	// HostLimitedFrom is the lowest offered rate the host could not send
	// in some pass (0: none); steps from there on measure the host.
	HostLimitedFrom float64 `json:"host_limited_from"`
}

// derive recomputes every step's derived fields and the summary.
func (r *Run) derive() {
	o := r.Settings.Options()
	for i := range r.Steps {
		r.Steps[i].derive(&o)
	}
	r.Summary = summarize(r.Steps, r.Settings.Passes)
}

func summarize(steps []Step, passes int) Summary {
	var s Summary
	byRate := map[float64][]Step{}
	var rates []float64
	for _, st := range steps {
		if _, ok := byRate[st.Offered]; !ok {
			rates = append(rates, st.Offered)
		}
		byRate[st.Offered] = append(byRate[st.Offered], st)
	}
	slices.Sort(rates)
	losslessOpen := true
	for _, rate := range rates {
		group := byRate[rate]
		p := RatePoint{Offered: rate, Passes: len(group), Answered: true}
		var goodputs, p50s []float64
		for _, st := range group {
			goodputs = append(goodputs, st.Goodput)
			p50s = append(p50s, st.RTTP50)
			p.Achieved += st.Achieved / float64(len(group))
			p.LossPct += st.LossPct / float64(len(group))
			p.Late += st.Late
			p.Duplicates += st.Duplicates
			p.Reordered += st.Reordered
			p.RTTP99 = math.Max(p.RTTP99, st.RTTP99)
			p.Answered = p.Answered && st.Answered
			p.HostLimited = p.HostLimited || st.HostLimited
		}
		p.Goodput, p.GoodputSD = meanSD(goodputs)
		p.RTTP50 = median(p50s)
		if p.HostLimited && s.HostLimitedFrom == 0 {
			s.HostLimitedFrom = rate
		}
		if losslessOpen && p.Answered {
			s.Lossless = rate
		} else {
			losslessOpen = false
		}
		s.Curve = append(s.Curve, p)
	}
	if len(s.Curve) == 0 {
		return s
	}
	s.LosslessIsHighest = losslessOpen
	peakAt := 0
	for i, p := range s.Curve {
		if p.Goodput > s.Curve[peakAt].Goodput {
			peakAt = i
		}
	}
	s.PeakAt = s.Curve[peakAt].Offered
	perPass := make(map[int]float64, passes)
	for _, st := range steps {
		perPass[st.Pass] = math.Max(perPass[st.Pass], st.Goodput)
	}
	var peaks []float64
	for _, v := range perPass {
		peaks = append(peaks, v)
	}
	s.Peak, s.PeakSD = meanSD(peaks)
	last := s.Curve[len(s.Curve)-1]
	s.AtHighest, s.AtHighestSD = last.Goodput, last.GoodputSD
	s.Livelock = s.AtHighest < livelockShare*s.Peak
	return s
}

// meanSD returns the mean and the sample standard deviation (0 for one value).
func meanSD(v []float64) (mean, sd float64) {
	if len(v) == 0 {
		return 0, 0
	}
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if len(v) < 2 {
		return mean, 0
	}
	for _, x := range v {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(v)-1))
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// WriteJSON writes the run, indented.
func (r *Run) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// ReadJSON reads a run written by WriteJSON, checks it and derives its
// summary again from the steps (a hand-edited summary does not count).
func ReadJSON(rd io.Reader) (*Run, error) {
	dec := json.NewDecoder(rd)
	var r Run
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("not a udp-echo run: %w", err)
	}
	if r.Format != FormatVersion {
		return nil, fmt.Errorf("format %q: want %q (a file written by tcmprof bench udp-echo --json)", r.Format, FormatVersion)
	}
	if err := r.validate(); err != nil {
		return nil, err
	}
	r.derive()
	return &r, nil
}

// ReadFile reads a run from a JSON file.
func ReadFile(path string) (*Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := ReadJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

func (r *Run) validate() error {
	o := r.Settings.Options()
	if err := o.Validate(); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	if len(r.Steps) == 0 {
		return errors.New("no steps")
	}
	for i, st := range r.Steps {
		if st.Pass < 1 || st.Pass > o.Passes || !slices.Contains(o.Rates, st.Offered) {
			return fmt.Errorf("step %d: pass %d or rate %v is not in the settings", i, st.Pass, st.Offered)
		}
		if st.Start < 0 || st.Sent < 0 || st.SendErrors < 0 || st.Echoes < 0 || st.Echoes > st.Sent || st.InWindow < 0 || st.InWindow > st.Echoes ||
			st.Late < 0 || st.Late > st.Echoes || st.Duplicates < 0 || st.Reordered < 0 {
			return fmt.Errorf("step %d (pass %d, %v/s): inconsistent counts", i, st.Pass, st.Offered)
		}
	}
	return nil
}
