// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	pprof "github.com/google/pprof/profile"
	"github.com/tcmprof/tcmprof/elf/board"
	"github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/internal/atomicfile"
	"github.com/tcmprof/tcmprof/sample"
)

// Label keys of every sample in profiles tcmprof writes.
const (
	LabelRegion  = "region"  // flash, itcm, dtcm, ocram, ram, veneer
	LabelLibrary = "library" // from the map file
	LabelContext = "context" // "thread", "irq N" or a system exception name
	LabelThread  = "thread"  // name from the capture's thread table
	LabelState   = "state"   // "busy" or "idle" under the idle rules
	// LabelCompleted (a numeric label, frames) is on the samples whose
	// outermost callers were not unwound from their own stack snapshot
	// but through the words below the thread's stack top (protocol 1.3)
	// or completed from other samples of the thread: how many of the
	// locations, counted from the root, came that way.
	LabelCompleted = "completed_frames"
)

// SamplePeriod is the mean time between samples in nanoseconds, from the
// capture header's mean interval and timer clock; 0 when the header lacks
// either.
func SamplePeriod(h *sample.Header) int64 {
	if h.TimerHz == 0 || h.IntervalTicks == 0 {
		return 0
	}
	return int64(float64(h.IntervalTicks) * 1e9 / float64(h.TimerHz))
}

// Profile returns the samples as a pprof profile: sample types
// samples/count and (when the header gives the sampling period)
// cpu/nanoseconds; one mapping for the ELF carrying its GNU build-id with
// every Has* flag set, so pprof never re-symbolizes; one location per
// address whose lines are the inline chain innermost first; stacks of the
// PC and its callers (the unwound stack, or the caller LR returns to where
// LR was accepted), each caller's location being the call instruction so
// pprof shows the calling line. Labels: region, library, context, thread,
// state, and completed_frames where callers came from outside the sample.
func (s *Symbolized) Profile() (*pprof.Profile, error) {
	h := &s.Capture.Header
	period := SamplePeriod(h)
	p := &pprof.Profile{
		SampleType: []*pprof.ValueType{{Type: "samples", Unit: "count"}},
	}
	if period > 0 {
		p.SampleType = append(p.SampleType, &pprof.ValueType{Type: "cpu", Unit: "nanoseconds"})
		p.DefaultSampleType = "cpu"
		p.PeriodType = &pprof.ValueType{Type: "cpu", Unit: "nanoseconds"}
		p.Period = period
		p.DurationNanos = period * int64(len(s.Capture.Records))
	}
	if !s.Capture.Host.Time.IsZero() {
		p.TimeNanos = s.Capture.Host.Time.UnixNano()
	}
	m := &pprof.Mapping{
		ID: 1, Start: 0, Limit: 1 << 32, Offset: 0,
		File:         s.Image.Path(),
		HasFunctions: true, HasFilenames: true, HasLineNumbers: true, HasInlineFrames: true,
	}
	if id, err := image.BuildID(s.Image.File()); err == nil && len(id) > 0 {
		m.BuildID = hex.EncodeToString(id)
	}
	p.Mapping = []*pprof.Mapping{m}

	b := &builder{p: p, m: m, locs: make(map[uint32]*pprof.Location), funcs: make(map[funcKey]*pprof.Function)}
	labelSets := make(map[labelKey]map[string][]string)
	for i := range s.Stacks {
		st := &s.Stacks[i]
		locs := []*pprof.Location{b.location(st.PC)}
		for _, c := range st.Callers {
			locs = append(locs, b.location(c))
		}
		lk := labelKey{st.PC.Region, st.PC.Library, st.Exc, st.Thread, st.Idle}
		labels, ok := labelSets[lk]
		if !ok {
			labels = s.labels(st)
			labelSets[lk] = labels
		}
		v := []int64{int64(st.Count)}
		if period > 0 {
			v = append(v, int64(st.Count)*period)
		}
		smp := &pprof.Sample{Location: locs, Value: v, Label: labels}
		if st.Completed > 0 {
			smp.NumLabel = map[string][]int64{LabelCompleted: {int64(st.Completed)}}
			smp.NumUnit = map[string][]string{LabelCompleted: {"frames"}}
		}
		p.Sample = append(p.Sample, smp)
	}
	p.Comments = append(p.Comments, s.comments()...)
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("built an invalid profile: %w", err)
	}
	return p, nil
}

type labelKey struct {
	region  board.RegionKind
	library string
	exc     uint16
	thread  uint32
	idle    bool
}

func (s *Symbolized) labels(st *Stack) map[string][]string {
	l := map[string][]string{LabelState: {"busy"}}
	// Without the exception field every record has Exc 0, which would read
	// as thread mode: interrupt code included. Unknown is no label.
	if s.Capture.Header.Fields&sample.FieldExc != 0 {
		l[LabelContext] = []string{ContextName(st.Exc)}
	}
	if st.Idle {
		l[LabelState] = []string{"idle"}
	}
	if st.PC.Region != "" {
		l[LabelRegion] = []string{string(st.PC.Region)}
	}
	if st.PC.Library != "" {
		l[LabelLibrary] = []string{st.PC.Library}
	}
	if t := s.ThreadName(st.Thread); t != "" {
		l[LabelThread] = []string{t}
	}
	return l
}

// comments record where the profile came from and how far LR was trusted.
func (s *Symbolized) comments() []string {
	h := &s.Capture.Header
	c := []string{
		fmt.Sprintf("tcmprof: %d records from %s; fields %v; CPU %d Hz; timer %d Hz; mean interval %d ticks ± %d %%",
			len(s.Capture.Records), filepath.Base(s.Image.Path()), h.Fields, h.CPUHz, h.TimerHz, h.IntervalTicks, h.JitterPct),
	}
	if h.Dropped > 0 || s.Capture.MissingCount() > 0 {
		c = append(c, fmt.Sprintf("tcmprof: %d samples dropped on the device (buffer full), %d records lost in transport", h.Dropped, s.Capture.MissingCount()))
	}
	if h.Fields&sample.FieldLR != 0 {
		c = append(c, "tcmprof: "+s.LR.String())
	}
	if h.Fields&sample.FieldStack != 0 {
		c = append(c, "tcmprof: unwind: "+s.Unwind.String())
	}
	for _, w := range s.Warnings {
		c = append(c, "tcmprof: warning: "+w)
	}
	return c
}

type funcKey struct{ name, system, file string }

// builder interns locations and functions.
type builder struct {
	p     *pprof.Profile
	m     *pprof.Mapping
	locs  map[uint32]*pprof.Location
	funcs map[funcKey]*pprof.Function
}

func (b *builder) location(st *Site) *pprof.Location {
	if l, ok := b.locs[st.Addr]; ok {
		return l
	}
	l := &pprof.Location{ID: uint64(len(b.p.Location) + 1), Mapping: b.m, Address: uint64(st.Addr)}
	for i, fr := range st.Frames {
		name, system := fr.Function, fr.Mangled
		if i == len(st.Frames)-1 && st.Function != nil {
			// The outermost frame is the physical function: named as
			// every table names it, a GCC clone as "run_burst [clone
			// .isra.0]" rather than by its source name, so that a diff of
			// a capture against this profile matches the two, and its
			// symbol is the system name.
			name, system = st.Name(), st.Function.Name
		}
		l.Line = append(l.Line, pprof.Line{Function: b.function(name, system, fr.File), Line: int64(fr.Line)})
	}
	if len(l.Line) == 0 && st.Function != nil { // no DWARF here: the symbol still names it
		l.Line = []pprof.Line{{Function: b.function(st.Name(), st.Function.Name, "")}}
	}
	b.locs[st.Addr] = l
	b.p.Location = append(b.p.Location, l)
	return l
}

func (b *builder) function(name, system, file string) *pprof.Function {
	if system == "" {
		system = name
	}
	k := funcKey{name, system, file}
	if f, ok := b.funcs[k]; ok {
		return f
	}
	f := &pprof.Function{ID: uint64(len(b.p.Function) + 1), Name: name, SystemName: system, Filename: file}
	b.funcs[k] = f
	b.p.Function = append(b.p.Function, f)
	return f
}

// WriteFile writes p gzipped to path atomically: a reader never sees a
// half-written profile, and a failed write leaves an old file in place.
func WriteFile(path string, p *pprof.Profile) error {
	return atomicfile.Write(path, p.Write)
}

// ReadFile reads a pprof profile (gzipped or not).
func ReadFile(path string) (*pprof.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := pprof.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: not a pprof profile (%s)", path, strings.TrimPrefix(err.Error(), "parsing profile: "))
	}
	return p, nil
}
