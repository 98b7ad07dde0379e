// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/spf13/cobra"
	"github.com/tcmprof/tcmprof/profile"
)

type viewOptions struct {
	path      string // a profile or a capture
	input     inputOptions
	addr      string
	noBrowser bool
	// ctx ends the server; RunE cancels it on SIGINT.
	ctx context.Context
}

func newViewCmd(s Streams, runF func(*viewOptions, Streams) error) *cobra.Command {
	o := &viewOptions{}
	c := &cobra.Command{
		Use:   "view PROFILE.pb.gz | CAPTURE",
		Short: "Browse a profile in pprof's web UI (flame graph, source), offline",
		Long: `view serves pprof's interactive web UI for a profile written by
"tcmprof profile", or for a capture symbolized on the fly (give --elf or
--build-dir then). It never runs host binutils on the ARM ELF and never copies
the profile to $HOME/pprof. It runs until interrupted (Ctrl-C).`,
		Example: `  tcmprof view before.pb.gz
  tcmprof view --build-dir build before.tcmcap --http :8080 --no-browser`,
		Args: withUsage(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt)
			defer stop()
			o.path, o.ctx = args[0], ctx
			return runCommand(o, s, runF, runView)
		},
	}
	c.Flags().StringVar(&o.addr, "http", "localhost:0", "address to serve on (host:port; port 0 picks a free one)")
	c.Flags().BoolVar(&o.noBrowser, "no-browser", false, "do not open a browser")
	o.input.addFlags(c)
	return c
}

func runView(o *viewOptions, s Streams) error {
	p, _, err := o.input.loadProfile(s, o.path)
	if err != nil {
		return err
	}
	return profile.Serve(o.ctx, p, profile.ViewOptions{
		Addr:    o.addr,
		Browser: !o.noBrowser,
		Log:     s.Err,
		Ready:   func(url string) { fmt.Fprintf(s.Out, "tcmprof: serving %s on %s\n", o.path, url) },
	})
}
