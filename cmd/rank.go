// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/tcmprof/tcmprof/place"
)

type rankOptions struct {
	captures []captureArg
	input    inputOptions
	tableFlags
	minSamples int
	wide       bool
}

func newRankCmd(s Streams, runF func(*rankOptions, Streams) error) *cobra.Command {
	o := &rankOptions{}
	c := &cobra.Command{
		Use:   "rank (--elf FILE | --build-dir DIR) [--map FILE] CAPTURE...",
		Short: "Rank functions by busy samples per byte, the ITCM placement key",
		Long: `rank lists the functions that have busy samples, densest first (busy samples
per byte of code): samples, share of busy samples, size (the input
section's, which is what moves), samples per byte and memory region; --wide
adds the share's 95 % Wilson interval, the library and each function's
source path (the text otherwise fits 80 columns, naming a source only where
two functions share a name). Functions with fewer than --min-samples samples
are listed last, under a line saying so: their density is mostly noise, and
plan leaves them out.

Samples are classified busy or idle exactly as by "tcmprof report".

Several captures of one image, each of a workload, mix by the share of the
time each takes: CAPTURE:WEIGHT, e.g. echo.tcmcap:3 bulk.tcmcap:1 (a capture
without a weight weighs 1).`,
		Example: `  tcmprof rank --build-dir build before.tcmcap
  tcmprof rank --elf zephyr.elf --map zephyr.map before.tcmcap --top 20
  tcmprof rank --build-dir build before.tcmcap --json > rank.json`,
		Args: withUsage(cobra.MinimumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			var err error
			if o.captures, err = parseCaptureArgs(args); err != nil {
				return err
			}
			return runCommand(o, s, runF, runRank)
		},
	}
	o.input.addFlags(c)
	o.tableFlags.add(c, "functions")
	addWideFlag(c, &o.wide)
	c.Flags().IntVar(&o.minSamples, "min-samples", place.DefaultMinSamples, "fewest busy samples a function needs to be ranked")
	return c
}

func (o *rankOptions) validate() error {
	if err := o.tableFlags.validate(); err != nil {
		return err
	}
	return checkMinSamples(o.minSamples)
}

func runRank(o *rankOptions, s Streams) error {
	in, _, err := o.input.placeInput(s, o.captures, nil)
	if err != nil {
		return err
	}
	rows := place.Rank(in, o.minSamples)
	if o.top > 0 && len(rows) > o.top {
		rows = rows[:o.top]
	}
	if o.json {
		return writeRankJSON(s.Out, rows)
	}
	fmt.Fprintf(s.Out, "%d busy samples\n\n", in.BusySamples)
	return place.WriteRankTable(s.Out, rows, o.wide)
}

// rankJSON is one row of rank --json.
type rankJSON struct {
	Function string         `json:"function"`
	Source   string         `json:"source,omitempty"`
	Samples  int            `json:"samples"`
	Share    float64        `json:"share"`
	ShareCI  place.Interval `json:"share_ci"`
	Size     uint32         `json:"size"`
	Density  float64        `json:"samples_per_byte"`
	// DensityCI is ShareCI scaled to samples per byte.
	DensityCI place.Interval `json:"samples_per_byte_ci"`
	Region    string         `json:"region,omitempty"`
	Library   string         `json:"library,omitempty"`
	Section   string         `json:"section,omitempty"`
	Ranked    bool           `json:"ranked"`
}

func writeRankJSON(w io.Writer, rows []place.RankRow) error {
	out := make([]rankJSON, len(rows))
	for i, r := range rows {
		out[i] = rankJSON{Function: r.Func.Symbol, Source: r.Func.Key.Source, Samples: r.Samples, Share: r.Share,
			ShareCI: r.ShareCI, Size: r.Func.Size, Density: r.Density, DensityCI: r.DensityCI, Region: string(r.Func.Kind),
			Library: r.Func.Library(), Section: r.Func.Section, Ranked: r.Ranked}
	}
	return printJSON(w, out)
}
