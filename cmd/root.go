// Package cmd holds tcmprof's cobra commands. Each command is an options
// struct plus a run function; flags are parsed here and the work is done by
// the pipeline packages (sample, elf, place, linker).
package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// Version is set at build time with -ldflags "-X github.com/tcmprof/tcmprof/cmd.Version=...".
var Version = "dev"

// Streams is the I/O a command may use; tests inject buffers.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// StdStreams returns the process's standard streams.
func StdStreams() Streams { return Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr} }

// Main runs tcmprof with args and returns the process exit code. Every error
// is printed as one line on s.Err; nothing panics out of here.
func Main(s Streams, args []string) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(s.Err, "tcmprof: internal error: %v\n", r)
			code = 2
		}
	}()
	root := NewRootCmd(s)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		fmt.Fprintf(s.Err, "tcmprof: %s\n", oneLine(err))
		var ee exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return 1
	}
	return 0
}

// exitError carries a specific exit code (e.g. verify failures).
type exitError struct {
	err  error
	code int
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// NewRootCmd builds the command tree with its I/O bound to s.
func NewRootCmd(s Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "tcmprof",
		Short: "Profile Cortex-M firmware from on-target PC samples and plan ITCM placement",
		Long: `tcmprof drains PC samples from the firmware-sampler over USB serial,
symbolizes them against the ELF, writes pprof profiles and reports, ranks
functions by samples per byte and plans what goes into ITCM.`,
		Example: `  tcmprof symbolize --elf zephyr.elf 0x60001234
  tcmprof capture --port auto -o before.tcmcap`,
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	for _, add := range subcommands {
		root.AddCommand(add(s))
	}
	return root
}

// subcommands is filled by each command's file in its init, so adding a
// command touches only its own file.
var subcommands []func(Streams) *cobra.Command

func register(f func(Streams) *cobra.Command) { subcommands = append(subcommands, f) }
