// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/tcmprof/tcmprof/internal/wording"
	"github.com/tcmprof/tcmprof/sample"
	"github.com/tcmprof/tcmprof/sample/device"
)

type captureOptions struct {
	device   deviceOptions
	start    startFlags
	mode     string
	samples  uint32
	duration time.Duration
	attach   bool
	resume   string
	out      string
	quiet    bool

	// request is what START asks for, from the flags (set by validate).
	request device.Start
	// interrupt is closed to end sampling early, as SIGINT does; tests set it.
	interrupt <-chan struct{}
}

func newCaptureCmd(s Streams, runF func(*captureOptions, Streams) error) *cobra.Command {
	o := &captureOptions{}
	c := &cobra.Command{
		Use:   "capture -o FILE.tcmcap [--port auto|PATH] [flags]",
		Short: "Take PC samples from the firmware-sampler into a .tcmcap file",
		Long: `capture starts a sampling run on the device (START), waits for it, drains
every record (DRAIN), checks that every index arrived, asks again for what
did not, releases the device's buffer (DONE) and writes the capture file
atomically.

Snapshot mode (the default) samples into the device's buffer until it is
full, --samples or --duration is reached, or Ctrl-C; then drains. A run
that still takes samples is waited for however slowly it goes (an emulator
on a busy host); one that takes none for longer than the whole run should
take is stopped. A command is sent again after --timeout (doubling with each
try) without frames from the device (log text does not count). Stream mode
sends records while sampling, until --samples, --duration or Ctrl-C.
--attach drains what the device already holds (or an ongoing run) without
starting one. A Ctrl-C during the drain finishes it; a second one stops at
once and writes what arrived. SIGTERM counts as Ctrl-C.

If the device disconnects or records cannot be recovered, the records that
arrived are still written, with the missing index ranges, the command says
which are missing and exits non-zero; --resume FILE later fetches them if
the device still holds the run (a FILE that misses nothing is left as it
is, and the command says so and succeeds). If -o cannot be written at the
end after all, the capture is kept in a new file in the temporary
directory, named in the error. Log text the firmware prints between frames
is shown on stderr (--quiet counts it instead).

--port auto looks for the USB serial port with --vid/--pid (default
2fe3:0001, Zephyr's default USB ids), narrowed by --serial and --product.
When several ports match (the Zephyr console and the sampler's port share
the ids), each gets one STATUS command and the one that answers is used.
A port another tcmprof (or another program holding a lock on it) has open
is refused, naming the process.`,
		Example: `  tcmprof capture --port auto -o before.tcmcap
  tcmprof capture --port /dev/ttyACM0 --rate 20000 --jitter 10 --fields pc,lr \
      --samples 16384 -o run.tcmcap
  tcmprof capture --port /dev/ttyACM0 --mode stream --duration 30s \
      -o long.tcmcap
  tcmprof capture --port /dev/ttyACM0 --fields pc,ctx,stack --mode stream \
      --duration 10s -o stacks.tcmcap
  tcmprof capture --port /dev/ttyACM0 --attach -o held.tcmcap
  tcmprof capture --port /dev/ttyACM0 --resume run.tcmcap`,
		Args: withUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error { return runCommand(o, s, runF, runCapture) },
	}
	o.device.addFlags(c)
	o.start.add(c)
	f := c.Flags()
	f.StringVar(&o.mode, "mode", "snapshot", "snapshot (sample into the buffer, then drain) or stream (drain while sampling)")
	f.Uint32Var(&o.samples, "samples", 0, "samples to take (0 = until the buffer is full, or Ctrl-C in stream mode)")
	f.DurationVar(&o.duration, "duration", 0, "how long to sample (0 = no limit)")
	f.BoolVar(&o.attach, "attach", false, "drain what the device holds, or its ongoing run, without starting a run")
	f.StringVar(&o.resume, "resume", "", "fetch the missing records of this capture file (written to -o, or back to it)")
	f.StringVarP(&o.out, "output", "o", "", "capture file to write")
	f.BoolVar(&o.quiet, "quiet", false, "count the device's log lines instead of showing them")
	return c
}

// validate checks the flags and sets the START request from them; with
// --resume and no -o, the resumed file is written back.
func (o *captureOptions) validate() error {
	st, err := o.start.start()
	if err != nil {
		return err
	}
	st.Count = o.samples
	switch o.mode {
	case "snapshot":
		st.Mode = sample.ModeSnapshot
	case "stream":
		st.Mode = sample.ModeStream
	default:
		return fmt.Errorf("--mode %q: want snapshot or stream", o.mode)
	}
	if o.duration < 0 || o.duration.Milliseconds() > 1<<32-1 {
		return fmt.Errorf("--duration %v is out of range", o.duration)
	}
	st.DurationMS = uint32(o.duration.Milliseconds())
	o.request = st
	switch {
	case o.attach && o.resume != "":
		return errors.New("--attach and --resume exclude each other")
	case o.resume != "" && o.out == "":
		o.out = o.resume
	case o.out == "":
		return errors.New("no output file: pass -o FILE.tcmcap")
	}
	return o.device.validate()
}

func runCapture(o *captureOptions, s Streams) error {
	// -o may name the --resume file: that is writing it back.
	if err := checkOutputs([]namedFile{{"--raw", o.device.raw}}, []namedFile{{"the --resume capture", o.resume}}); err != nil {
		return err
	}
	if err := checkOutputs([]namedFile{{"-o", o.out}, {"--raw", o.device.raw}}, nil); err != nil {
		return err
	}
	var previous *sample.Capture
	if o.resume != "" {
		var err error
		if previous, err = sample.ReadFile(o.resume); err != nil {
			return err
		}
		if len(previous.Missing) == 0 {
			// Nothing to fetch, which is no failure (a script may resume
			// whatever it captured); the device is not asked.
			fmt.Fprintf(s.Err, "tcmprof: %s has all its %d records: nothing to resume\n", o.resume, len(previous.Records))
			if o.out == o.resume {
				return nil
			}
			return writeCapture(s, o.out, previous, o.device.raw)
		}
	}
	// Find out now, not after the drain, that the file cannot be written.
	if err := checkWritableDir(o.out); err != nil {
		return err
	}

	dev, err := o.device.open()
	if err != nil {
		return err
	}
	defer dev.Close()
	sess, host := dev.session, dev.host

	ui := newCaptureUI(s.Err, s.ErrTTY, o.quiet)
	sess.OnLog = ui.log
	sess.OnProgress = ui.received
	sess.OnHeader = ui.header
	sess.OnDrain = ui.draining.Store
	if previous == nil && !o.attach && o.request.Mode == sample.ModeSnapshot && o.samples > 0 {
		sess.OnHeader = o.warnOverCapacity(ui)
	}

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stop := o.interrupt
	if stop == nil {
		stop = interruptChannel(ctx, cancel, ui.stopping)
	}

	var c *sample.Capture
	switch {
	case previous != nil:
		c, err = sess.Resume(ctx, previous)
	case o.attach:
		c, err = sess.Attach(ctx, stop)
	case o.request.Mode == sample.ModeStream:
		c, err = sess.Stream(ctx, o.request, o.duration, stop)
	default:
		c, err = sess.Snapshot(ctx, o.request, 0, stop)
	}
	ui.finish()
	if c == nil {
		var stopped stoppedError
		if errors.As(err, &stopped) && o.resume == "" {
			// Stopped while the device sampled: it may hold the run.
			return fmt.Errorf("%w before any record arrived; if the device still holds the run, fetch it with `tcmprof capture --port %s --attach -o %s`", err, host.Port, o.out)
		}
		return err
	}
	if previous == nil {
		c.Host = host
	}
	if werr := writeCapture(s, o.out, c, o.device.raw); werr != nil {
		return werr
	}
	fmt.Fprintf(s.Err, "%s: %s\n", outputName(o.out), summary(c))
	// Only now that the file is safe may the device forget the run.
	if err == nil && c.Header.Mode == sample.ModeSnapshot {
		if derr := sess.Done(ctx); derr != nil {
			return fmt.Errorf("%s is written, but releasing the device's buffer failed: %w (it still holds the run; a new run needs --attach first)", o.out, derr)
		}
	}
	if o.quiet && c.Stats.LogLines > 0 {
		fmt.Fprintf(s.Err, "%d log lines from the device not shown (--quiet)\n", c.Stats.LogLines)
	}
	var inc *device.IncompleteError
	if errors.As(err, &inc) {
		more := ""
		if len(inc.Missing) > 10 {
			more += fmt.Sprintf(" (`tcmprof info %s` lists every missing range)", o.out)
		}
		// The device may have been reset or unplugged: whether it still
		// holds the run is for the resume to find out.
		if inc.Resumable {
			more += fmt.Sprintf("; if the device still holds the run, fetch the rest with `tcmprof capture --port %s --resume %s`", host.Port, o.out)
		}
		return fmt.Errorf("%w; %s holds the %d records that arrived%s", err, o.out, len(c.Records), more)
	}
	return err
}

// warnOverCapacity is an OnHeader that follows the device's counters
// (ui.header) and also says once, at the first HEADER of the run, when
// --samples asks for more than the device's buffer holds for these fields:
// the snapshot ends when the buffer is full.
func (o *captureOptions) warnOverCapacity(ui *captureUI) func(*sample.Header) {
	checked := false
	return func(h *sample.Header) {
		ui.header(h)
		if checked || h.State == sample.StateIdle { // before START: the capacity is the last run's
			return
		}
		checked = true
		if h.Capacity < o.samples {
			ui.warn(fmt.Sprintf("--samples %d is more than the device's buffer holds with --fields %v (%d records): the snapshot ends when it is full (--mode stream takes more)",
				o.samples, h.Fields, h.Capacity))
		}
	}
}

// writeCapture writes c to path (checked before the run; "-" is standard
// output) as capture and top do. When that fails after all (the directory
// went away, the disk filled, standard output was closed), the run is kept
// in a new file in the temporary directory, and the error says where; raw
// is the --raw file, for when even that fails.
func writeCapture(s Streams, path string, c *sample.Capture, raw string) error {
	werr := writeOutput(s, path, c.Write)
	if werr == nil {
		return nil
	}
	kept, kerr := keepCapture(c)
	if kerr != nil {
		return fmt.Errorf("%w, and keeping the capture elsewhere failed too: %v (the raw bytes are in %s)", werr, kerr, orNone(raw))
	}
	return fmt.Errorf("%w; the capture is kept in %s", werr, kept)
}

// keepCapture writes c to a new file in the temporary directory and
// returns its path.
func keepCapture(c *sample.Capture) (string, error) {
	f, err := os.CreateTemp("", "tcmprof-*.tcmcap") // a name of its own; WriteFile replaces it whole
	if err != nil {
		return "", err
	}
	f.Close()
	if err := sample.WriteFile(f.Name(), c); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// checkWritableDir fails when path is a directory or no file can be
// created next to it.
func checkWritableDir(path string) error {
	if path == stdoutName {
		return nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("cannot write %s: it is a directory", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tcmprof-check-*")
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the probe's name means nothing to the user
		}
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

func orNone(s string) string {
	if s == "" {
		return "no --raw file"
	}
	return s
}

// summary is the one line printed after a capture is written.
func summary(c *sample.Capture) string {
	h := &c.Header
	s := fmt.Sprintf("%d records (%v, %v mode), %d missing, %d dropped by the device of %d taken",
		len(c.Records), h.Fields, h.Mode, c.MissingCount(), h.Dropped, h.Taken)
	if st := c.Stats; st.CRCErrors+st.BadFrames+st.Retries+st.Rerequests > 0 {
		s += fmt.Sprintf("; line errors: %d CRC, %d bad frames, %d garbage bytes, %d retries, %d re-requested records",
			st.CRCErrors, st.BadFrames, st.GarbageBytes, st.Retries, st.Rerequested)
	}
	return s
}

// captureUI shows on stderr how a capture goes, and the device's log
// lines: while the device samples, the time and the samples it has taken
// (from its STATUS answers); while records arrive, how many of how many.
// On a terminal these are mpb bars, otherwise a plain line every few
// seconds.
type captureUI struct {
	*progress
	quiet bool
	start time.Time

	mu       sync.Mutex
	sampling *mpb.Bar // while the device samples
	taken    atomic.Uint64
	// samplingLines: plain sampling lines were written and the run's
	// final count not yet.
	samplingLines bool
	records       *mpb.Bar // once records arrive
	// draining is set while held records are drained, when stopping
	// means finishing the drain rather than ending the run.
	draining atomic.Bool
}

func newCaptureUI(w io.Writer, tty, quiet bool) *captureUI {
	return &captureUI{progress: newProgress(w, tty), quiet: quiet, start: time.Now()}
}

// header follows the device's counters while it samples, and keeps the
// final count the drain's header brings.
func (ui *captureUI) header(h *sample.Header) {
	ui.taken.Store(uint64(h.Taken))
	if h.State != sample.StateRunning {
		return
	}
	elapsed := time.Since(ui.start).Round(time.Second)
	ui.mu.Lock()
	defer ui.mu.Unlock()
	if ui.records != nil {
		return // records arrive: their count says more
	}
	if ui.bars == nil {
		ui.samplingLines = true
		ui.line(false, "sampling: %v, %d samples taken", elapsed, h.Taken)
		return
	}
	if ui.sampling == nil {
		ui.sampling = ui.bars.New(0, mpb.SpinnerStyle(), mpb.PrependDecorators(decor.Name("sampling "), decor.Elapsed(decor.ET_STYLE_GO)),
			mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return fmt.Sprintf("%d samples taken", ui.taken.Load()) })))
	}
}

// received follows the records as they arrive (total 0: a stream).
func (ui *captureUI) received(got, total uint64) {
	ui.mu.Lock()
	defer ui.mu.Unlock()
	if ui.bars == nil {
		// The sampling lines come at most every few seconds: the last
		// one shown may be from the run's first moment. When a snapshot's
		// drain starts, say how many the run took.
		if ui.samplingLines && total > 0 {
			ui.samplingLines = false
			ui.line(true, "sampling: %v, %d samples taken", time.Since(ui.start).Round(time.Second), ui.taken.Load())
		}
		if total == 0 {
			ui.line(false, "records: %d", got)
		} else {
			ui.line(got == total, "records: %d of %d (%s)", got, total, wording.Percent(float64(got)/float64(total)))
		}
		return
	}
	if ui.records == nil {
		if ui.sampling != nil {
			ui.sampling.Abort(true)
		}
		if total == 0 { // a stream of unknown length: a spinner and a count
			ui.records = ui.bars.New(0, mpb.SpinnerStyle(), mpb.PrependDecorators(decor.Name("records "), decor.CurrentNoUnit("%d")))
		} else {
			ui.records = ui.bars.AddBar(int64(total),
				mpb.PrependDecorators(decor.Name("records "), decor.CountersNoUnit("%d / %d")),
				mpb.AppendDecorators(decor.Percentage()))
		}
	}
	ui.records.SetCurrent(int64(got))
}

func (ui *captureUI) log(line string) {
	if !ui.quiet {
		ui.print("device: " + strings.TrimRight(line, "\r\n") + "\n")
	}
}

// stopping says what the first Ctrl-C does, so that it is not taken for
// ignored while a long drain goes on.
func (ui *captureUI) stopping(sig os.Signal) {
	if ui.draining.Load() {
		ui.print("tcmprof: finishing the drain; " + againToStopNow(sig) + "\n")
		return
	}
	ui.print("tcmprof: stopping the run, then receiving what it took; " + againToStopNow(sig) + "\n")
}

// warn prints a warning, as every command words one, above the bars.
func (ui *captureUI) warn(msg string) { ui.print("tcmprof: warning: " + msg + "\n") }

func (ui *captureUI) finish() {
	ui.mu.Lock()
	for _, b := range []*mpb.Bar{ui.sampling, ui.records} {
		if b != nil {
			b.Abort(false)
		}
	}
	ui.mu.Unlock()
	ui.wait()
}
