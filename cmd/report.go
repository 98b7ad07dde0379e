// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"github.com/spf13/cobra"
	"github.com/tcmprof/tcmprof/profile"
)

type reportOptions struct {
	captures []captureArg
	input    inputOptions
	tableFlags
	icache cacheFlags
	wide   bool
}

// cacheFlags override the board's I-cache geometry.
type cacheFlags struct{ size, ways, line uint32 }

func (f *cacheFlags) add(c *cobra.Command) {
	c.Flags().Uint32Var(&f.size, "icache-size", 0, "I-cache size in bytes (default: the board's; teensy41 32768)")
	c.Flags().Uint32Var(&f.ways, "icache-ways", 0, "I-cache ways (default: the board's; teensy41 2)")
	c.Flags().Uint32Var(&f.line, "icache-line", 0, "I-cache line size in bytes (default: the board's; teensy41 32)")
}

// apply sets the flags given over the board's geometry.
func (f *cacheFlags) apply(opts *profile.Options) error {
	g := opts.Board.ICache
	if f.size != 0 {
		g.Size = f.size
	}
	if f.ways != 0 {
		g.Ways = f.ways
	}
	if f.line != 0 {
		g.LineSize = f.line
	}
	if err := profile.ValidateCache(g); err != nil {
		return err
	}
	opts.ICache = g
	return nil
}

func newReportCmd(s Streams, runF func(*reportOptions, Streams) error) *cobra.Command {
	o := &reportOptions{}
	c := &cobra.Command{
		Use:   "report (--elf FILE | --build-dir DIR) CAPTURE[:WEIGHT]...",
		Short: "Busy/idle, busy share per region, library, function; I-cache use",
		Long: `report prints what a capture says about where the time goes: total, busy and
idle samples; the busy share per memory region, per library (with a map file)
and per function, with 95 % Wilson intervals; and the I-cache footprint of
the busy samples in flash (distinct lines against the cache size, and sets
that hold more lines than ways).

The text fits 80 columns: long function names are cut in the middle, and
the function table leaves out samples per byte and the library, which
--wide adds (with whole names and unwrapped lines); --json has everything.

Several captures of one image, each of a workload, mix by the share of the
time each takes: CAPTURE:WEIGHT, e.g. echo.tcmcap:3 bulk.tcmcap:1 (a capture
without a weight weighs 1).`,
		Example: `  tcmprof report --build-dir build before.tcmcap
  tcmprof report --elf zephyr.elf --map zephyr.map before.tcmcap --top 20
  tcmprof report --build-dir build before.tcmcap --json > before.json`,
		Args: withUsage(cobra.MinimumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			var err error
			if o.captures, err = parseCaptureArgs(args); err != nil {
				return err
			}
			return runCommand(o, s, runF, runReport)
		},
	}
	o.input.addFlags(c)
	o.icache.add(c)
	o.tableFlags.add(c, "functions")
	addWideFlag(c, &o.wide)
	return c
}

func runReport(o *reportOptions, s Streams) error {
	sym, _, err := o.input.symbolize(s.Err, o.captures, nil, o.icache.apply)
	if err != nil {
		return err
	}
	a := sym.Analyze()
	if o.json {
		return profile.WriteJSON(s.Out, a)
	}
	return profile.WriteReport(s.Out, a, profile.ReportOptions{Top: o.top, Wide: o.wide})
}
