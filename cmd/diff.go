// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"fmt"

	pprof "github.com/google/pprof/profile"
	"github.com/spf13/cobra"
	"github.com/tcmprof/tcmprof/profile"
)

type diffOptions struct {
	before, after                     string // the two inputs
	input                             inputOptions
	afterELF, afterBuildDir, afterMap string
	out                               string
	tableFlags
}

func newDiffCmd(s Streams, runF func(*diffOptions, Streams) error) *cobra.Command {
	o := &diffOptions{}
	c := &cobra.Command{
		Use:   "diff BEFORE AFTER",
		Short: "Compare two captures or profiles per function and region",
		Long: `diff compares where the busy time goes in two runs: each function's and each
region's share of busy samples before and after, and the change in percentage
points. Shares are per busy sample, so runs of different lengths or loads
compare. BEFORE and AFTER are captures (symbolized with --elf/--build-dir;
AFTER with --after-elf/--after-build-dir when it is another build) or
profiles written by "tcmprof profile".

-o writes BEFORE's profile scaled to AFTER's number of busy samples, for
"go tool pprof -diff_base OUT AFTER.pb.gz"; -o - writes it to standard
output, and the table to standard error.`,
		Example: `  tcmprof diff --build-dir build-stock --after-build-dir build-itcm \
      stock.tcmcap itcm.tcmcap
  tcmprof diff before.pb.gz after.pb.gz -o base.pb.gz
  go tool pprof -top -diff_base base.pb.gz after.pb.gz`,
		Args: withUsage(cobra.ExactArgs(2)),
		RunE: func(c *cobra.Command, args []string) error {
			o.before, o.after = args[0], args[1]
			return runCommand(o, s, runF, runDiff)
		},
	}
	o.input.addFlags(c)
	c.Flags().StringVar(&o.afterELF, "after-elf", "", "ELF of the AFTER capture (default: --elf)")
	c.Flags().StringVar(&o.afterBuildDir, "after-build-dir", "", "west build directory of the AFTER capture (default: --build-dir)")
	c.Flags().StringVar(&o.afterMap, "after-map", "", "map file of the AFTER capture (default: --map)")
	c.Flags().StringVarP(&o.out, "output", "o", "", "write BEFORE's profile normalised to AFTER's busy samples, for pprof -diff_base")
	o.tableFlags.add(c, "function changes")
	return c
}

// side is one input of a diff, analysed, with its profile.
type side struct {
	analysis *profile.Analysis
	profile  *pprof.Profile
}

func (o *inputOptions) side(s Streams, path string) (side, error) {
	p, sym, err := o.loadProfile(s, path)
	if err != nil {
		return side{}, err
	}
	if sym != nil {
		return side{sym.Analyze(), p}, nil
	}
	a, err := profile.AnalyzeProfile(p)
	if err != nil {
		return side{}, fmt.Errorf("%s: %w", path, err)
	}
	return side{a, p}, nil
}

func runDiff(o *diffOptions, s Streams) error {
	after := o.input
	if o.afterELF != "" || o.afterBuildDir != "" {
		after.elfPath, after.buildDir, after.mapPath, after.dtsPath = o.afterELF, o.afterBuildDir, "", ""
	}
	if o.afterMap != "" {
		after.mapPath = o.afterMap
	}
	inputs := []namedFile{{"BEFORE", o.before}, {"AFTER", o.after}}
	for _, in := range []inputOptions{o.input, after} {
		inputs = append(inputs, in.namedFiles()...)
	}
	if err := checkOutputs([]namedFile{{"-o", o.out}}, inputs); err != nil {
		return err
	}
	b, err := o.input.side(s, o.before)
	if err != nil {
		return err
	}
	a, err := after.side(s, o.after)
	if err != nil {
		return err
	}
	d := profile.Compare(b.analysis, a.analysis)
	if o.out != "" {
		base, err := profile.DiffBase(b.profile, b.analysis.Busy.Count, a.analysis.Busy.Count)
		if err != nil {
			return err
		}
		if err := writeOutput(s, o.out, base.Write); err != nil {
			return err
		}
	}
	if o.out == stdoutName { // the profile has standard output
		s.Out = s.Err
	}
	if o.json {
		return printJSON(s.Out, struct {
			BeforeBusy profile.Share    `json:"before_busy"`
			AfterBusy  profile.Share    `json:"after_busy"`
			Regions    []profile.Change `json:"regions"`
			Functions  []profile.Change `json:"functions"`
		}{d.Before.Busy, d.After.Busy, d.Regions, d.Functions})
	}
	return profile.WriteDiff(s.Out, d, profile.ReportOptions{Top: o.top})
}
