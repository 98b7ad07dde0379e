// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/tcmprof/tcmprof/live"
	"github.com/tcmprof/tcmprof/profile"
	"github.com/tcmprof/tcmprof/sample"
	"github.com/tcmprof/tcmprof/sample/device"
)

type topOptions struct {
	device     deviceOptions
	start      startFlags
	input      inputOptions
	attach     bool
	out        string
	interval   time.Duration
	window     time.Duration
	cumulative bool
	sort       string
	inline     bool
	batch      bool
	table      tableFlags
	iterations int
	quiet      bool

	// Set by validate from the flags.
	request device.Start
	sortKey live.SortKey
}

func newTopCmd(s Streams, runF func(*topOptions, Streams) error) *cobra.Command {
	o := &topOptions{}
	c := &cobra.Command{
		Use:   "top (--elf FILE | --build-dir DIR) [--port auto|PATH] [flags]",
		Short: "A live view of where the CPU is, while the sampler streams",
		Long: `top starts a stream run on the device (or, with --attach, joins the one that
runs), symbolizes the records as they arrive, and every --interval shows the
busy share (idle detection as in report), the records received per second,
the records lost (dropped by the device because its ring was full, or lost
on the link), and the busy share per function, per memory region and, with
--fields pc,lr,ctx, per exception and thread. The figures cover the last
--window (default) or everything since the start.

On a terminal the view is interactive:
  q, Esc, Ctrl-C  quit: stop the run and restore the terminal
  space           pause the display (the run goes on)
  c               window / cumulative since the start
  s               sort by busy share / by busy samples per byte
  w               write what was captured so far (to -o FILE, else to
                  top-TIME.tcmcap in the current directory)
  r               reset the counters

When standard output is not a terminal, or with -b, it prints a plain-text
block per interval (--json: one JSON object per line). Functions are the
innermost function of each sample's inline chain; --inline counts inlined
code for the function it was inlined into, as report and plan do.

Ctrl-C, q and SIGTERM stop the run on the device (STOP) before exiting.
With -o FILE the whole stream is written as a normal capture (for report,
plan...), also when the device disconnects: then top says so in one line
and exits non-zero. A stream run sends its thread table only at its end:
top reads the names with a one-sample snapshot run before the stream
starts, and threads created later (or all of them, with --attach) show as
ids.`,
		Example: `  tcmprof top --port auto --build-dir build
  tcmprof top --port /dev/ttyACM0 --elf zephyr.elf --fields pc,lr,ctx \
      --rate 20000 -o long.tcmcap
  tcmprof top --port /dev/ttyACM0 --build-dir build -b -n 10 --cumulative \
      --inline
  tcmprof top --port /dev/ttyACM0 --build-dir build --attach --json | jq .busy`,
		Args: withUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error { return runCommand(o, s, runF, runTop) },
	}
	o.device.addFlags(c)
	o.start.add(c)
	o.input.addFlags(c)
	f := c.Flags()
	f.BoolVar(&o.attach, "attach", false, "join the stream run the device is running instead of starting one")
	f.StringVarP(&o.out, "output", "o", "", "also write the whole stream to this capture file")
	f.DurationVar(&o.interval, "interval", time.Second, "refresh interval")
	f.DurationVar(&o.window, "window", 10*time.Second, "show the last WINDOW (whole intervals) rather than everything since the start")
	f.BoolVar(&o.cumulative, "cumulative", false, "start with everything since the start (key c switches)")
	f.StringVar(&o.sort, "sort", "share", "order functions by share or by samples per byte: share or density (key s switches)")
	f.BoolVar(&o.inline, "inline", false, "count inlined code for the function it was inlined into")
	f.BoolVarP(&o.batch, "batch", "b", false, "print a plain-text block per interval even on a terminal")
	o.table.add(c, "functions")
	f.IntVarP(&o.iterations, "iterations", "n", 0, "stop after this many intervals (0 = until q or Ctrl-C)")
	f.BoolVar(&o.quiet, "quiet", false, "do not show the device's log lines")
	return c
}

func (o *topOptions) validate() error {
	st, err := o.start.start()
	if err != nil {
		return err
	}
	st.Mode = sample.ModeStream
	o.request = st
	switch o.sort {
	case "share":
		o.sortKey = live.ByShare
	case "density":
		o.sortKey = live.ByDensity
	default:
		return fmt.Errorf("--sort %q: want share or density", o.sort)
	}
	switch {
	case o.interval <= 0:
		return errors.New("--interval must be positive")
	case o.window < o.interval:
		return errors.New("--window must be at least one --interval")
	case o.iterations < 0:
		return errors.New("--iterations must be 0 (no limit) or more")
	}
	if o.out == stdoutName {
		return errors.New("-o -: top's screen is on standard output; give a capture file")
	}
	if o.table.json {
		o.batch = true
	}
	if err := o.table.validate(); err != nil {
		return err
	}
	return o.device.validate()
}

// topRun is one run of top: the device, what aggregates its stream, and
// the stream's outcome once it ends.
type topRun struct {
	o    *topOptions
	dev  *connection
	agg  *live.Aggregator
	ctx  context.Context
	name string // what the screen's title calls the run: port, rate, fields

	stopOnce sync.Once
	stop     chan struct{} // closed to end the run (STOP)
	ended    chan struct{} // closed when the stream is over; then:
	capture  *sample.Capture
	err      error
}

func runTop(o *topOptions, s Streams) error {
	src, opts, img, err := o.input.openInputs(func(src sources) error {
		return checkOutputs([]namedFile{{"-o", o.out}, {"--raw", o.device.raw}}, src.files())
	}, nil)
	if err != nil {
		return err
	}
	printImageWarnings(s.Err, src.elf, img, 0)
	sites, err := profile.NewSites(img, opts)
	if err != nil {
		return err
	}
	if o.out != "" {
		if err := checkWritableDir(o.out); err != nil {
			return err
		}
	}
	dev, err := o.device.open()
	if err != nil {
		return err
	}
	defer dev.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	interrupt := interruptChannel(ctx, cancel, nil)

	sess := dev.session
	h, err := sess.Status(ctx)
	if err != nil {
		return err
	}
	warning, err := profile.CheckBuildID(img, h.BuildID, "device", o.input.force)
	if err != nil {
		return err
	}
	if warning != "" {
		fmt.Fprintf(s.Err, "tcmprof: warning: %s\n", warning)
	}
	fields, dropped := o.request.Fields, uint32(0)
	if o.attach {
		if h.State != sample.StateRunning || h.Mode != sample.ModeStream {
			return fmt.Errorf("the sampler runs no stream (state %v, %v mode); start one without --attach", h.State, h.Mode)
		}
		fields, dropped = h.Fields, h.Dropped
	}
	agg, err := live.NewAggregator(sites, opts.Idle, fields, dropped, time.Now(),
		live.Options{Interval: o.interval, Window: o.window, Inline: o.inline})
	if err != nil {
		return err
	}
	if fields&sample.FieldThread != 0 && !o.attach {
		names, err := threadTable(ctx, sess, o.request)
		if err != nil {
			return fmt.Errorf("reading the thread table: %w", err)
		}
		agg.SetThreads(names)
	}
	r := &topRun{o: o, dev: dev, agg: agg, ctx: ctx, stop: make(chan struct{}), ended: make(chan struct{}),
		name: fmt.Sprintf("%s  %v", dev.host.Port, fields)}
	sess.OnRecords = agg.Add
	sess.OnHeader = agg.Header
	sess.StatusEvery = o.interval

	var viewErr error
	if !o.batch && s.OutTTY {
		viewErr = runTopScreen(r, s, interrupt)
	} else {
		sess.OnLog = func(line string) {
			if !o.quiet {
				fmt.Fprintf(s.Err, "device: %s\n", strings.TrimRight(line, "\r\n"))
			}
		}
		r.begin()
		viewErr = runTopBatch(r, s, interrupt)
	}
	r.end()
	<-r.ended
	if err := r.finish(s); err != nil {
		return err
	}
	return viewErr
}

// threadTable reads the device's thread names with a one-sample snapshot
// run: a stream run sends its thread table only when it ends, too late for
// a live view. Threads created later show as ids.
func threadTable(ctx context.Context, sess *device.Session, req device.Start) (map[uint32]string, error) {
	c, err := sess.Snapshot(ctx, device.Start{RateHz: req.RateHz, JitterPct: req.JitterPct, Fields: sample.FieldPC | sample.FieldThread, Count: 1}, 0, nil)
	if err != nil {
		return nil, err
	}
	if err := sess.Done(ctx); err != nil {
		return nil, err
	}
	return c.Threads, nil
}

// begin starts (or joins) the stream run in the background.
func (r *topRun) begin() {
	go func() {
		defer close(r.ended)
		if r.o.attach {
			r.capture, r.err = r.dev.session.Attach(r.ctx, r.stop)
		} else {
			r.capture, r.err = r.dev.session.Stream(r.ctx, r.o.request, 0, r.stop)
		}
	}()
}

// end asks the run to stop; it may be called more than once.
func (r *topRun) end() { r.stopOnce.Do(func() { close(r.stop) }) }

// view is the View the flags start with.
func (o *topOptions) view() live.View { return live.View{Cumulative: o.cumulative, Sort: o.sortKey} }

// runTopBatch prints a block per interval until -n intervals, an
// interrupt, or the end of the stream.
func runTopBatch(r *topRun, s Streams, interrupt <-chan struct{}) error {
	tick := time.NewTicker(r.o.interval)
	defer tick.Stop()
	for n := 0; r.o.iterations == 0 || n < r.o.iterations; n++ {
		select {
		case now := <-tick.C:
			r.agg.Tick(now)
			t := r.agg.Table(r.o.view())
			var err error
			if r.o.table.json {
				err = live.WriteJSON(s.Out, t, r.o.table.top)
			} else {
				err = live.WriteText(s.Out, t, r.o.table.top)
			}
			if err != nil {
				return err
			}
		case <-interrupt:
			return nil
		case <-r.ended:
			return nil
		}
	}
	return nil
}

// save writes what was captured so far (the w key): to -o, or to a new
// file named by the time.
func (r *topRun) save() (string, error) {
	path := r.o.out
	if path == "" {
		path = time.Now().Format("top-20060102-150405.tcmcap")
	}
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	c, err := r.dev.session.Received(ctx)
	if err != nil {
		return "", fmt.Errorf("the run so far: %w", err)
	}
	c.Host = r.dev.host
	if err := sample.WriteFile(path, c); err != nil {
		return "", err
	}
	return fmt.Sprintf("wrote %s: %d records", path, len(c.Records)), nil
}

// finish writes the whole stream with -o and turns the run's outcome into
// one line: what stopped the stream, and what was kept.
func (r *topRun) finish(s Streams) error {
	c, err := r.capture, r.err
	if c == nil {
		return err
	}
	if r.o.out != "" {
		c.Host = r.dev.host
		if werr := writeCapture(s, r.o.out, c, r.o.device.raw); werr != nil {
			return werr
		}
		fmt.Fprintf(s.Err, "%s: %s\n", r.o.out, summary(c))
	}
	var inc *device.IncompleteError
	if !errors.As(err, &inc) {
		return err
	}
	if inc.Cause == nil {
		// Records lost on the link: the view showed them as they went.
		fmt.Fprintf(s.Err, "tcmprof: warning: %v\n", err)
		return nil
	}
	kept := "nothing kept (no -o)"
	if r.o.out != "" {
		kept = fmt.Sprintf("%s holds the %d records that arrived", r.o.out, len(c.Records))
	}
	return fmt.Errorf("%v; %s", inc.Cause, kept)
}
