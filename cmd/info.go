// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"encoding/hex"
	"fmt"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tcmprof/tcmprof/sample"
)

type infoOptions struct {
	capture string
	json    bool
}

func newInfoCmd(s Streams, runF func(*infoOptions, Streams) error) *cobra.Command {
	o := &infoOptions{}
	c := &cobra.Command{
		Use:   "info FILE.tcmcap [--json]",
		Short: "Show what a capture holds: settings, counts, losses, origin",
		Long: `info prints a capture's device header (sampler and protocol version, clocks,
sampling interval, fields, build-id), its record counts and losses (dropped
by the device because the buffer was full, missing because they never
arrived), the line's decode statistics and the host metadata.`,
		Example: `  tcmprof info before.tcmcap
  tcmprof info --json before.tcmcap | jq .missing_records`,
		Args: withUsage(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			o.capture = args[0]
			return runCommand(o, s, runF, runInfo)
		},
	}
	c.Flags().BoolVar(&o.json, "json", false, "print one JSON object")
	return c
}

// captureInfo is what info prints; its JSON keys are for scripts.
type captureInfo struct {
	File            string             `json:"file"`
	ProtocolVersion string             `json:"protocol_version"`
	SamplerVersion  string             `json:"sampler_version"`
	Mode            string             `json:"mode"`
	State           string             `json:"state"`
	Fields          string             `json:"fields"`
	CPUHz           uint32             `json:"cpu_hz"`
	TimerHz         uint32             `json:"timer_hz"`
	IntervalTicks   uint32             `json:"interval_ticks"`
	RateHz          float64            `json:"rate_hz"`
	JitterPct       uint8              `json:"jitter_pct"`
	Capacity        uint32             `json:"capacity"`
	BuildID         string             `json:"build_id"`
	Taken           uint32             `json:"taken"`
	Dropped         uint32             `json:"dropped"`
	Stored          uint32             `json:"stored"`
	FirstIndex      uint32             `json:"first_index"`
	EndIndex        uint32             `json:"end_index"`
	Records         int                `json:"records"`
	BytesPerRecord  float64            `json:"bytes_per_record"` // received on the line, framing and log text included
	StackWords      uint8              `json:"stack_words,omitempty"`
	MissingRecords  uint64             `json:"missing_records"`
	Missing         []sample.Range     `json:"missing"`
	Threads         []threadInfo       `json:"threads"`
	Host            sample.HostInfo    `json:"host"`
	Stats           sample.DecodeStats `json:"stats"`
	Model           *sample.ModelInfo  `json:"model,omitempty"` // modelled captures only
}

type threadInfo struct {
	ID   uint32 `json:"id"`
	Name string `json:"name"`
}

func runInfo(o *infoOptions, s Streams) error {
	path := o.capture
	c, err := sample.ReadFile(path)
	if err != nil {
		return err
	}
	h := &c.Header
	span := c.Span()
	in := captureInfo{
		File:            path,
		ProtocolVersion: fmt.Sprintf("%d.%d", h.ProtoMajor, h.ProtoMinor),
		SamplerVersion:  fmt.Sprintf("%d.%d.%d", h.SamplerVersion[0], h.SamplerVersion[1], h.SamplerVersion[2]),
		Mode:            h.Mode.String(), State: h.State.String(), Fields: h.Fields.String(),
		CPUHz: h.CPUHz, TimerHz: h.TimerHz, IntervalTicks: h.IntervalTicks, JitterPct: h.JitterPct,
		Capacity: h.Capacity, BuildID: hex.EncodeToString(h.BuildID),
		Taken: h.Taken, Dropped: h.Dropped, Stored: h.Stored,
		FirstIndex: span.Start, EndIndex: span.End,
		Records: len(c.Records), MissingRecords: c.MissingCount(), Missing: c.Missing,
		Threads: []threadInfo{}, Host: c.Host, Stats: c.Stats, Model: c.Model,
	}
	if h.IntervalTicks > 0 {
		in.RateHz = float64(h.TimerHz) / float64(h.IntervalTicks)
	}
	if len(c.Records) > 0 {
		in.BytesPerRecord = float64(c.Stats.Bytes) / float64(len(c.Records))
	}
	in.StackWords = h.StackWords
	if in.Missing == nil {
		in.Missing = []sample.Range{}
	}
	for id, name := range c.Threads {
		in.Threads = append(in.Threads, threadInfo{id, name})
	}
	sort.Slice(in.Threads, func(i, j int) bool { return in.Threads[i].ID < in.Threads[j].ID })
	if o.json {
		return printJSON(s.Out, in)
	}
	w := tabwriter.NewWriter(s.Out, 0, 0, 2, ' ', 0)
	p := func(k, format string, a ...any) { fmt.Fprintf(w, "%s\t"+format+"\n", append([]any{k}, a...)...) }
	p("file", "%s", path)
	if m := c.Model; m != nil {
		p("modelled", "by %s, not taken on a device: I-cache of %d bytes, %d-way, %d-byte lines, %s, fill %d cycles; %d units of %s after %d of warm-up, %d cycles",
			m.Tool, m.CacheSize, m.CacheWays, m.LineSize, m.Policy, m.Penalty, m.Units, orText(m.Unit, "(none)"), m.Warmup, m.Cycles)
	}
	p("sampler", "version %s, protocol %s", in.SamplerVersion, in.ProtocolVersion)
	p("build-id", "%s", orText(in.BuildID, "(none)"))
	p("run", "%s mode, fields %s, state %s when drained", in.Mode, in.Fields, in.State)
	if h.Fields&sample.FieldStack != 0 {
		p("stacks", "%d words per sample at most; %s", h.StackWords, stackDepths(c))
	}
	p("clocks", "CPU %s, timer %s", hz(float64(h.CPUHz)), hz(float64(h.TimerHz)))
	p("interval", "%d ticks = %s (%s), jitter ±%d %%", h.IntervalTicks, hz(in.RateHz), period(in.RateHz), h.JitterPct)
	p("buffer", "%d records", h.Capacity)
	// The device counts a sample dropped only when its buffer had no room
	// for it (docs/protocol.md, HEADER), so that is said only of drops.
	if h.Dropped == 0 {
		p("samples", "%d taken, %d stored, none dropped", h.Taken, h.Stored)
	} else {
		p("samples", "%d taken, %d stored, %d dropped by the device: its buffer was full when they were taken", h.Taken, h.Stored, h.Dropped)
	}
	p("records", "%d in the file, indices %d to %d", len(c.Records), span.Start, int64(span.End)-1)
	if len(c.Missing) > 0 {
		p("missing", "%d records never arrived: %s", in.MissingRecords, sample.FormatRanges(c.Missing, len(c.Missing)))
	} else {
		p("missing", "none")
	}
	if len(in.Threads) > 0 {
		p("threads", "%d", len(in.Threads))
		for _, t := range in.Threads {
			p("", "0x%08x %s", t.ID, t.Name)
		}
	}
	st := c.Stats
	p("line", "%d bytes, %d frames, %d CRC errors, %d bad frames, %d garbage bytes, %d log lines", st.Bytes, st.Frames, st.CRCErrors, st.BadFrames, st.GarbageBytes, st.LogLines)
	p("", "%.1f bytes received per record (framing, log text and re-requests included)", in.BytesPerRecord)
	p("recovery", "%d retries, %d re-requests for %d records", st.Retries, st.Rerequests, st.Rerequested)
	host := c.Host
	p("taken", "%s on %s at %d baud by tcmprof %s", host.Time.Format(time.RFC3339), orText(host.Port, "?"), host.Baud, orText(host.ToolVersion, "?"))
	if u := host.USB; u.VID != "" {
		p("usb", "%s:%s %q %q serial %q", u.VID, u.PID, u.Manufacturer, u.Product, u.Serial)
	}
	return w.Flush()
}

func orText(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

func hz(f float64) string {
	switch {
	case f >= 1e6:
		return fmt.Sprintf("%.6g MHz", f/1e6)
	case f >= 1e3:
		return fmt.Sprintf("%.6g kHz", f/1e3)
	}
	return fmt.Sprintf("%.6g Hz", f)
}

func period(rate float64) string {
	if rate <= 0 {
		return "unknown period"
	}
	return time.Duration(float64(time.Second) / rate).String()
}

// stackDepths says how many stack words the records hold on average and
// how many reached the top of their stack before the limit.
func stackDepths(c *sample.Capture) string {
	if len(c.Records) == 0 {
		return "no records"
	}
	words, top := 0, 0
	for _, r := range c.Records {
		words += len(r.Stack)
		if len(r.Stack) < int(c.Header.StackWords) {
			top++
		}
	}
	return fmt.Sprintf("%.1f on average, %d of %d records reached the stack's top first", float64(words)/float64(len(c.Records)), top, len(c.Records))
}
