// SPDX-License-Identifier: Apache-2.0

// Package cmd holds tcmprof's cobra commands: flags are parsed here and the
// work is done by the pipeline packages (sample, elf, profile, place,
// linker).
//
// Every command has one shape, GitHub CLI's NewCmdX(f, runF):
//
//	type fooOptions struct {
//		capture string // positional arguments, set by RunE
//		top     int    // flags, bound by newFooCmd
//	}
//
//	func newFooCmd(s Streams, runF func(*fooOptions, Streams) error) *cobra.Command {
//		o := &fooOptions{}
//		c := &cobra.Command{
//			Use:  "foo CAPTURE",
//			Args: withUsage(cobra.ExactArgs(1)),
//			RunE: func(c *cobra.Command, args []string) error {
//				o.capture = args[0]
//				return runCommand(o, s, runF, runFoo)
//			},
//		}
//		c.Flags().IntVar(&o.top, "top", 30, "...")
//		return c
//	}
//
//	func runFoo(o *fooOptions, s Streams) error { ... }
//
// RunE only moves the positional arguments into the options; when the
// options have a validate method (checks that need no file or device, such
// as flags that exclude each other), runCommand calls it first. runFoo does
// the work, with all I/O through s. runF is nil except in tests, which pass
// one to get the parsed options without running anything: flag tests need
// no firmware build and no device. NewRootCmd lists every command; adding a
// command is its file plus one line there. What a terminal changes (bars,
// top's screen) follows Streams' OutTTY and ErrTTY, never the file
// descriptors: a test sets them, and Streams.Screen, to see what a user at a
// terminal sees without a pty.
package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/tcmprof/tcmprof/internal/atomicfile"
)

// Version is set at build time with -ldflags "-X github.com/tcmprof/tcmprof/cmd.Version=...".
var Version = "dev"

// Streams is the I/O a command may use, and whether a user's terminal is
// at the other end; tests inject buffers, and fake a terminal by setting
// the flags (as cli/cli's IOStreams does).
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// OutTTY and ErrTTY say that Out and Err are terminals: top draws its
	// interactive screen then, capture and bench draw progress bars on
	// Err. StdStreams sets them from the file descriptors.
	OutTTY, ErrTTY bool
	// Screen opens the terminal top's interactive view takes over; nil:
	// the process's own (tcell.NewScreen). Tests give a simulated one.
	Screen func() (tcell.Screen, error)
}

// StdStreams returns the process's standard streams.
func StdStreams() Streams {
	return Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr,
		OutTTY: term.IsTerminal(int(os.Stdout.Fd())), ErrTTY: term.IsTerminal(int(os.Stderr.Fd()))}
}

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

// withUsage makes a wrong number of arguments say what the command takes:
// cobra's "accepts 1 arg(s), received 0" (or "unknown command" for a stray
// word) then the usage line.
func withUsage(args cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, a []string) error {
		if err := args(c, a); err != nil {
			return fmt.Errorf("%w; usage: %s", err, c.UseLine())
		}
		return nil
	}
}

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
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagValueError(err) })
	root.SetUsageTemplate(strings.NewReplacer(
		".LocalFlags.FlagUsages", "wrappedFlagUsages .LocalFlags",
		".InheritedFlags.FlagUsages", "wrappedFlagUsages .InheritedFlags",
	).Replace(root.UsageTemplate()))
	root.AddCommand(
		newCaptureCmd(s, nil),
		newInfoCmd(s, nil),
		newSymbolizeCmd(s, nil),
		newProfileCmd(s, nil),
		newReportCmd(s, nil),
		newViewCmd(s, nil),
		newDiffCmd(s, nil),
		newRankCmd(s, nil),
		newPlanCmd(s, nil),
		newVerifyCmd(s, nil),
		newSimCmd(s, nil),
		newBenchCmd(s),
		newTopCmd(s, nil),
	)
	return root
}

// helpWidth is the terminal width --help is written for: descriptions and
// examples are wrapped by hand within it, the flag list by pflag.
const helpWidth = 80

func init() {
	cobra.AddTemplateFunc("wrappedFlagUsages", func(f *pflag.FlagSet) string { return f.FlagUsagesWrapped(helpWidth) })
}

// flagValueError says what a flag wants when its value does not parse:
// "--rate -5: want a whole number from 0 to 4294967295", where pflag would
// pass on strconv's words.
func flagValueError(err error) error {
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) {
		return err
	}
	f := bad.GetFlag()
	want := "want a value of type " + f.Value.Type()
	switch t := f.Value.Type(); t {
	case "uint", "uint8", "uint16", "uint32", "uint64":
		bits, _ := strconv.Atoi(strings.TrimPrefix(t, "uint"))
		if bits == 0 {
			bits = strconv.IntSize
		}
		want = fmt.Sprintf("want a whole number from 0 to %d", uint64(1)<<bits-1)
	case "int", "int8", "int16", "int32", "int64":
		want = "want a whole number"
	case "float32", "float64":
		want = "want a number"
	case "duration":
		want = "want a duration such as 500ms, 2s or 1m30s"
	case "bool":
		want = "want true or false"
	}
	return fmt.Errorf("--%s %s: %s", f.Name, bad.GetValue(), want)
}

// runCommand ends every command's RunE: it checks the options when they
// have a validate method, then runs runF when a test gave one, else run.
func runCommand[O any](o *O, s Streams, runF, run func(*O, Streams) error) error {
	if v, ok := any(o).(interface{ validate() error }); ok {
		if err := v.validate(); err != nil {
			return err
		}
	}
	if runF != nil {
		return runF(o, s)
	}
	return run(o, s)
}

// tableFlags are --json and --top of the commands that print tables
// (report, rank, diff, top). Options that embed them get their validate method.
type tableFlags struct {
	json bool
	top  int
}

// add adds the flags to c; rows says what --top counts.
func (f *tableFlags) add(c *cobra.Command, rows string) {
	c.Flags().BoolVar(&f.json, "json", false, "print JSON instead of tables")
	c.Flags().IntVar(&f.top, "top", 30, rows+" to list (0 = all)")
}

// addWideFlag adds --wide to a command whose text fits 80 columns by
// leaving columns out and cutting long names.
func addWideFlag(c *cobra.Command, wide *bool) {
	c.Flags().BoolVar(wide, "wide", false, "every column, whole names, lines as long as they are")
}

func (f *tableFlags) validate() error {
	if f.top < 0 {
		return errors.New("--top must be 0 (all) or more")
	}
	return nil
}

// stdoutName is the -o name of standard output, for every command with -o.
const stdoutName = "-"

// writeOutput writes an -o file atomically (internal/atomicfile), or to
// standard output when the name is "-". Its errors name the output, as
// atomicfile's do.
func writeOutput(s Streams, path string, write func(io.Writer) error) error {
	if path == stdoutName {
		if err := write(s.Out); err != nil {
			return fmt.Errorf("writing %s: %w", outputName(path), err)
		}
		return nil
	}
	return atomicfile.Write(path, write)
}

// outputName is how messages name an -o file.
func outputName(path string) string {
	if path == stdoutName {
		return "standard output"
	}
	return path
}

// printJSON writes v as indented JSON, the --json output of every command.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// checkMinSamples checks a --min-samples flag.
func checkMinSamples(n int) error {
	if n < 1 {
		return errors.New("--min-samples must be at least 1")
	}
	return nil
}
