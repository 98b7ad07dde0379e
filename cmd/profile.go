// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

type profileOptions struct {
	captures []captureArg
	input    inputOptions
	out      string
}

func newProfileCmd(s Streams, runF func(*profileOptions, Streams) error) *cobra.Command {
	o := &profileOptions{}
	c := &cobra.Command{
		Use:   "profile (--elf FILE | --build-dir DIR) CAPTURE... -o OUT.pb.gz",
		Short: "Symbolize a capture into a pprof profile",
		Long: `profile reads a capture against the ELF it was taken from and writes a
pprof profile: sample types samples/count and cpu/nanoseconds, inline frames,
callers from LR where LR is provably the caller, and the labels region,
library (with a map file), context, thread and state (busy/idle).

The capture's build-id must match the ELF's (--force overrides). Read the
result with "go tool pprof" or "tcmprof view".

Several captures of one image, each of a workload, mix by the share of the
time each takes: CAPTURE:WEIGHT, e.g. echo.tcmcap:3 bulk.tcmcap:1 (a capture
without a weight weighs 1).`,
		Example: `  tcmprof profile --build-dir build before.tcmcap -o before.pb.gz
  tcmprof profile --elf zephyr.elf --map zephyr.map --board teensy41 \
      run.tcmcap -o run.pb.gz
  go tool pprof -top -tagfocus=state=busy before.pb.gz`,
		Args: withUsage(cobra.MinimumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			var err error
			if o.captures, err = parseCaptureArgs(args); err != nil {
				return err
			}
			return runCommand(o, s, runF, runProfile)
		},
	}
	o.input.addFlags(c)
	c.Flags().StringVarP(&o.out, "output", "o", "", "profile to write (gzipped protobuf)")
	return c
}

func (o *profileOptions) validate() error {
	if o.out == "" {
		return errors.New("no output file: pass -o OUT.pb.gz (- for standard output)")
	}
	return nil
}

func runProfile(o *profileOptions, s Streams) error {
	sym, _, err := o.input.symbolize(s.Err, o.captures, func(src sources) error {
		return checkOutputs([]namedFile{{"-o", o.out}}, append(src.files(), captureFiles(o.captures)...))
	}, nil)
	if err != nil {
		return err
	}
	p, err := sym.Profile()
	if err != nil {
		return err
	}
	if err := writeOutput(s, o.out, p.Write); err != nil {
		return err
	}
	if sym.LR.Records > 0 {
		fmt.Fprintf(s.Err, "tcmprof: %s\n", sym.LR)
	}
	fmt.Fprintf(s.Err, "tcmprof: wrote %s (%d records, %d locations)\n", outputName(o.out), len(sym.Capture.Records), len(p.Location))
	return nil
}
