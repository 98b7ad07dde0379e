// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/tcmprof/tcmprof/internal/atomicfile"
	"github.com/tcmprof/tcmprof/loadtest"
)

// newBenchCmd groups the measurements; it runs nothing itself.
func newBenchCmd(s Streams) *cobra.Command {
	c := &cobra.Command{
		Use:   "bench",
		Short: "UDP echo rate steps of the firmware, and before/after comparisons",
		Long: `bench measures what a profile cannot: whether the next build is faster.
"bench udp-echo" offers a UDP echo fixed rates in steps and passes (the
method of the Teensy report); "bench compare" sets two such runs side by
side.`,
		Args: cobra.NoArgs,
	}
	c.AddCommand(newBenchUDPEchoCmd(s, nil), newBenchCompareCmd(s, nil))
	return c
}

// The default UDP echo port (RFC 862), as Zephyr's samples/net/sockets/echo_server.
const echoPort = "7"

type benchUDPEchoOptions struct {
	target              string
	steps, tail, window string
	opts                loadtest.Options
	label               string
	json, csv, svg      string

	// interrupt ends the run early, as SIGINT does; tests set it.
	interrupt <-chan struct{}
}

func newBenchUDPEchoCmd(s Streams, runF func(*benchUDPEchoOptions, Streams) error) *cobra.Command {
	o := &benchUDPEchoOptions{opts: loadtest.DefaultOptions()}
	c := &cobra.Command{
		Use:   "udp-echo HOST[:PORT] --steps START:STEP:STOP [flags]",
		Short: "Measure a UDP echo's goodput, lossless rate, peak and livelock",
		Long: `udp-echo sends datagrams of --payload bytes to a UDP echo (default port 7) at
fixed rates: the linear --steps, then the --tail rates, each for --step-time,
all of them in each of --passes passes. Every datagram carries a sequence
number and its send time: echoes are matched to what was sent, duplicates,
reordering and late echoes are counted, and round-trip times measured.

Goodput is the echo rate inside --window of each step (default 0.5 s to 2 s):
echoes at the start of a step (queues filling) and after its end (queued by
flow control) would make the result depend on the step length. Per rate the
table shows the mean ± sd over passes; then:

  lossless rate  the highest offered rate up to which every step of every
                 pass was answered at >= 99 %
  peak           the mean ± sd of each pass's highest goodput
  livelock       goodput at the highest rate below 90 % of the peak: the
                 target spends its time on datagrams it then drops

A step whose achieved send rate is below 99 % of the offered one is flagged
HOST-LIMITED: it measures this host, not the target. Before the first step
the target must answer within --probe-timeout. Ctrl-C ends the run; the steps
done so far are still written.`,
		Example: `  tcmprof bench udp-echo 192.0.2.1 --steps 500:500:30000 --tail 40000,50000 \
      --json stock.json --svg stock.svg
  tcmprof bench udp-echo 192.0.2.1:7 --steps 70:70:7000 \
      --tail 10000,20000,50000 --passes 3 --csv steps.csv
  tcmprof bench compare stock.json itcm.json --svg compare.svg`,
		Args: withUsage(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			o.target = args[0]
			return runCommand(o, s, runF, runBenchUDPEcho)
		},
	}
	f := c.Flags()
	f.StringVar(&o.steps, "steps", "", "linear rate steps start:step:stop, datagrams per second")
	f.StringVar(&o.tail, "tail", "", "further rates after the linear steps, comma-separated (e.g. 10000,20000,50000)")
	f.DurationVar(&o.opts.StepTime, "step-time", o.opts.StepTime, "how long each rate is offered")
	f.StringVar(&o.window, "window", "0.5s:2s", "part of each step whose echoes count as goodput, start:end")
	f.IntVar(&o.opts.Passes, "passes", o.opts.Passes, "independent passes over all rates")
	f.IntVar(&o.opts.Payload, "payload", o.opts.Payload, "UDP payload bytes")
	f.DurationVar(&o.opts.Drain, "drain", o.opts.Drain, "wait after each pass for late echoes")
	f.DurationVar(&o.opts.ProbeTimeout, "probe-timeout", o.opts.ProbeTimeout, "how long the target may take to answer the first datagram")
	f.StringVar(&o.opts.Local, "local", "", "address:port to send from (default: any); QEMU's hostfwd answers only to one")
	f.StringVar(&o.label, "label", "", "name of this run in comparisons and plots (default: the JSON file's name)")
	f.StringVar(&o.json, "json", "", "write the run (every step of every pass, and the summary) to this JSON file")
	f.StringVar(&o.csv, "csv", "", "write every step of every pass to this CSV file")
	f.StringVar(&o.svg, "svg", "", "plot goodput against offered rate (linear and log axes) to this SVG file")
	return c
}

// withDefaultPort adds the echo port to a HOST without one (also a bare
// IPv6 address).
func withDefaultPort(target string) string {
	if _, _, err := net.SplitHostPort(target); err == nil {
		return target
	}
	return net.JoinHostPort(strings.Trim(target, "[]"), echoPort)
}

func (o *benchUDPEchoOptions) rates() ([]float64, error) {
	var steps, tail []float64
	var err error
	if o.steps != "" {
		if steps, err = loadtest.ParseSteps(o.steps); err != nil {
			return nil, fmt.Errorf("--%w", err)
		}
	}
	if o.tail != "" {
		if tail, err = loadtest.ParseTail(o.tail); err != nil {
			return nil, fmt.Errorf("--%w", err)
		}
	}
	if len(steps)+len(tail) == 0 {
		return nil, errors.New("no rates: give --steps start:step:stop (e.g. 500:500:30000), --tail with rates (e.g. 10000,20000) or both")
	}
	return loadtest.MergeRates(steps, tail), nil
}

// validate parses the rates and the window into opts and checks them.
func (o *benchUDPEchoOptions) validate() error {
	var err error
	if o.opts.Rates, err = o.rates(); err != nil {
		return err
	}
	if o.opts.WindowStart, o.opts.WindowEnd, err = loadtest.ParseWindow(o.window); err != nil {
		return fmt.Errorf("--%w", err)
	}
	return o.opts.Validate()
}

func runBenchUDPEcho(o *benchUDPEchoOptions, s Streams) error {
	if err := checkOutputs([]namedFile{{"--json", o.json}, {"--csv", o.csv}, {"--svg", o.svg}}, nil); err != nil {
		return err
	}
	for _, out := range []string{o.json, o.csv, o.svg} {
		if out != "" {
			if err := checkWritableDir(out); err != nil {
				return err
			}
		}
	}
	target := withDefaultPort(o.target)

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var signal atomic.Value // the first signal, for the error's words
	stop := o.interrupt
	if stop == nil {
		stop = interruptChannel(ctx, cancel, func(s os.Signal) { signal.Store(s) })
	}
	go func() {
		select {
		case <-stop:
			s, _ := signal.Load().(os.Signal)
			cancel(interruptedError{s})
		case <-ctx.Done():
		}
	}()

	ui := newBenchUI(s.Err, s.ErrTTY, o.opts.Passes*len(o.opts.Rates))
	run, runErr := loadtest.Measure(ctx, target, o.opts, ui.step)
	if errors.Is(runErr, context.Canceled) {
		runErr = context.Cause(ctx)
	}
	ui.finish()
	if run == nil {
		return runErr
	}
	run.ToolVersion = Version
	run.Label = o.label
	if run.Label == "" && o.json != "" {
		run.Label = strings.TrimSuffix(filepath.Base(o.json), filepath.Ext(o.json))
	}
	if err := loadtest.WriteTable(s.Out, run); err != nil {
		return err
	}
	if err := writeBenchOutputs(o, run); err != nil {
		return err
	}
	if runErr != nil {
		return fmt.Errorf("%w after %d of %d steps (those are in the table and files)", runErr, len(run.Steps), o.opts.Passes*len(o.opts.Rates))
	}
	return nil
}

func writeBenchOutputs(o *benchUDPEchoOptions, run *loadtest.Run) error {
	if o.json != "" {
		if err := atomicfile.Write(o.json, run.WriteJSON); err != nil {
			return err
		}
	}
	if o.csv != "" {
		if err := atomicfile.Write(o.csv, func(w io.Writer) error { return loadtest.WriteCSV(w, run) }); err != nil {
			return err
		}
	}
	if o.svg != "" && len(run.Steps) > 0 {
		name := runName(run, o.json)
		title := fmt.Sprintf("UDP echo %s: goodput against offered rate", run.Target)
		if err := atomicfile.Write(o.svg, func(w io.Writer) error {
			return loadtest.RenderSVG(w, title, []*loadtest.Run{run}, []string{name})
		}); err != nil {
			return err
		}
	}
	return nil
}

// runName is what a run is called in legends: its label, else its file's
// base name, else its target.
func runName(r *loadtest.Run, path string) string {
	switch {
	case r.Label != "":
		return r.Label
	case path != "":
		return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return r.Target
}

type benchCompareOptions struct {
	before, after string
	svg           string
}

func newBenchCompareCmd(s Streams, runF func(*benchCompareOptions, Streams) error) *cobra.Command {
	o := &benchCompareOptions{}
	c := &cobra.Command{
		Use:   "compare BEFORE.json AFTER.json [--svg FILE]",
		Short: "Speed-up at the lossless rate and at peak of two udp-echo runs",
		Long: `compare reads two runs written by "bench udp-echo --json" and prints their
lossless rates and peaks and how many times faster the second is: the
before/after figure of a placement. A lossless rate that is the highest rate
a run tried is only a lower bound (shown as >=), and so is a speed-up over it.
--svg overlays both runs' goodput curves (mean ± 1 sd) on linear and
logarithmic rate axes.`,
		Example: `  tcmprof bench compare stock.json itcm.json --svg compare.svg`,
		Args:    withUsage(cobra.ExactArgs(2)),
		RunE: func(c *cobra.Command, args []string) error {
			o.before, o.after = args[0], args[1]
			return runCommand(o, s, runF, runBenchCompare)
		},
	}
	c.Flags().StringVar(&o.svg, "svg", "", "overlay both runs' goodput curves in this SVG file")
	return c
}

func runBenchCompare(o *benchCompareOptions, s Streams) error {
	beforePath, afterPath := o.before, o.after
	if err := checkOutputs([]namedFile{{"--svg", o.svg}}, []namedFile{{"BEFORE", beforePath}, {"AFTER", afterPath}}); err != nil {
		return err
	}
	before, err := loadtest.ReadFile(beforePath)
	if err != nil {
		return err
	}
	after, err := loadtest.ReadFile(afterPath)
	if err != nil {
		return err
	}
	names := []string{runName(before, beforePath), runName(after, afterPath)}
	if names[0] == names[1] {
		names = []string{beforePath, afterPath}
	}
	if err := loadtest.WriteComparison(s.Out, loadtest.Compare(before, after), names[0], names[1]); err != nil {
		return err
	}
	if o.svg == "" {
		return nil
	}
	title := fmt.Sprintf("UDP echo: %s against %s", names[1], names[0])
	return atomicfile.Write(o.svg, func(w io.Writer) error {
		return loadtest.RenderSVG(w, title, []*loadtest.Run{before, after}, names)
	})
}

// benchUI shows the steps done on stderr, with the last step's figures:
// a progress bar on a terminal, otherwise a plain line every few seconds.
type benchUI struct {
	*progress
	bar *mpb.Bar
	mu  sync.Mutex
	msg string
}

func newBenchUI(w io.Writer, tty bool, total int) *benchUI {
	ui := &benchUI{progress: newProgress(w, tty)}
	if ui.bars != nil {
		ui.bar = ui.bars.AddBar(int64(total),
			mpb.PrependDecorators(decor.Name("steps "), decor.CountersNoUnit("%d / %d")),
			mpb.AppendDecorators(decor.Any(func(decor.Statistics) string {
				ui.mu.Lock()
				defer ui.mu.Unlock()
				return ui.msg
			})))
	}
	return ui
}

func (ui *benchUI) step(index, total int, st loadtest.Step) {
	msg := fmt.Sprintf("pass %d: %.0f/s offered, %.0f/s sent, goodput %.1f/s", st.Pass, st.Offered, st.Achieved, st.Goodput)
	if ui.bar == nil {
		ui.line(index+1 == total, "steps: %d of %d, %s", index+1, total, msg)
		return
	}
	ui.mu.Lock()
	ui.msg = msg
	ui.mu.Unlock()
	ui.bar.SetCurrent(int64(index + 1))
}

func (ui *benchUI) finish() {
	if ui.bar != nil {
		ui.bar.Abort(false)
	}
	ui.wait()
}
