// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/profile"
	"github.com/tcmprof/tcmprof/sample"
	"github.com/tcmprof/tcmprof/sim"
)

type simOptions struct {
	trace   string // file, FIFO or "-"
	input   inputOptions
	icache  cacheFlags
	policy  string
	seed    uint32
	penalty uint32
	unit    string
	warmup  uint64
	units   uint64
	exclude []string
	force   bool
	tableFlags
	capture string
	rate    uint32
	jitter  uint8
	clock   uint32

	// set by validate
	cachePolicy sim.Policy
	excluded    []sim.Range
	sampling    *sim.Sampling
}

// Testbench symbols: code between them plays the world outside the chip
// and costs nothing in the model (docs/qemu.md).
const (
	testbenchStart = "__testbench_start"
	testbenchEnd   = "__testbench_end"
)

func newSimCmd(s Streams, runF func(*simOptions, Streams) error) *cobra.Command {
	o := &simOptions{}
	c := &cobra.Command{
		Use:   "sim (--elf FILE | --build-dir DIR) [--map FILE] TRACE",
		Short: "Model the I-cache and flash over a trace: cycles, fills, stalls",
		Long: `sim reads an execution trace of the firmware (from QEMU's tcmtrace plugin,
firmware-sampler/qemu/plugin; a file, a FIFO, or - for stdin) and models the
instruction side of the board: the I-cache (the board's geometry, LRU, empty
ways first), ITCM zero-wait and uncached, every other fetch that misses
filled at --penalty cycles. First-order cycles = instructions + fills x
penalty. An instruction that crosses a line boundary fetches both lines.

The window is counted in units of work, entries of the --unit function
(one zsock_sendto per echo): --warmup units fill the cache, then --units
units are measured (0: to the end of the trace). Per-unit figures compare
images whose layouts differ. Code between the ELF's __testbench_start and
__testbench_end symbols (and any --exclude range) costs nothing and leaves
the cache alone.

It prints instructions, fills, stall cycles and cycles in total and per
unit, the stall share, the distinct and hot cached lines and the
over-subscribed sets, then fills and cycles per function, per library (with
a map file) and per cache set; --json gives the same as one object
(docs/sim.md lists the keys).

--capture FILE also writes the capture the firmware sampler would take on
the modelled board: the PC every jittered interval of modelled cycles at
--rate of a --clock Hz core, so that samples fall in proportion to time,
stalls included, as on the board (in QEMU they fall in proportion to
instructions). report, profile, rank and plan read it like any capture.`,
		Example: `  tcmprof sim --elf demo.elf --map demo.map --board qemu-demo --warmup 300 \
      --units 2000 run.trace
  tcmprof sim --elf demo.elf --map demo.map --board qemu-demo run.trace \
      --json > sim.json
  tcmprof sim --elf demo.elf --board qemu-demo run.trace \
      --capture modelled.tcmcap --rate 20000
  tcmprof sim --elf app.elf --unit process_packet --icache-size 16384 \
      --policy random - < run.trace`,
		Args: withUsage(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			o.trace = args[0]
			return runCommand(o, s, runF, runSim)
		},
	}
	o.input.addImageFlags(c, "the firmware ELF the trace was taken from")
	o.icache.add(c)
	f := c.Flags()
	f.StringVar(&o.policy, "policy", "lru", "replacement policy: lru, fifo, round-robin or random")
	f.Uint32Var(&o.seed, "seed", 0, "seed of the random policy (0: a fixed one)")
	f.Uint32Var(&o.penalty, "penalty", sim.DefaultPenalty, "cycles of one line fill from flash")
	f.StringVar(&o.unit, "unit", "zsock_sendto", `function whose entries delimit units of work ("" for none: the whole trace)`)
	f.Uint64Var(&o.warmup, "warmup", 0, "units before the measured window")
	f.Uint64Var(&o.units, "units", 0, "units to measure (0: to the end of the trace)")
	f.StringSliceVar(&o.exclude, "exclude", nil, "address range START-END or START+SIZE (hex) that costs nothing; repeatable")
	f.BoolVar(&o.force, "force", false, "model a trace whose build-id differs from the ELF's")
	o.tableFlags.add(c, "rows of each table")
	f.StringVar(&o.capture, "capture", "", "also write the modelled capture to this .tcmcap file")
	f.Uint32Var(&o.rate, "rate", 10000, "modelled sampling rate in Hz (with --capture)")
	f.Uint8Var(&o.jitter, "jitter", sim.DefaultJitterPct, "sampling interval jitter in percent (with --capture)")
	f.Uint32Var(&o.clock, "clock", sim.DefaultClockHz, "modelled core clock in Hz (with --capture)")
	return c
}

func (o *simOptions) validate() error {
	if err := o.tableFlags.validate(); err != nil {
		return err
	}
	var err error
	if o.cachePolicy, err = sim.ParsePolicy(o.policy); err != nil {
		return err
	}
	if o.unit == "" && (o.warmup != 0 || o.units != 0) {
		return errors.New("--warmup and --units count entries of --unit")
	}
	o.excluded = nil
	for _, e := range o.exclude {
		r, err := parseRange(e)
		if err != nil {
			return err
		}
		o.excluded = append(o.excluded, r)
	}
	o.sampling = nil
	if o.capture != "" {
		o.sampling = &sim.Sampling{ClockHz: o.clock, RateHz: o.rate, JitterPct: o.jitter}
		return o.sampling.Validate()
	}
	return nil
}

func runSim(o *simOptions, s Streams) error {
	_, opts, img, err := o.input.openInputs(func(src sources) error {
		return checkOutputs([]namedFile{{"--capture", o.capture}}, append(src.files(), namedFile{"the trace", o.trace}))
	}, o.icache.apply)
	if err != nil {
		return err
	}
	cfg, err := o.config(img, opts)
	if err != nil {
		return err
	}

	in := s.In
	if o.trace != "-" {
		f, err := os.Open(o.trace)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	r, err := sim.NewReader(in)
	if err != nil {
		return fmt.Errorf("%s: %w", o.trace, err)
	}
	buildID, err := image.BuildID(img.File())
	if err != nil {
		return err
	}
	if err := checkTraceBuildID(s.Err, r.BuildID, buildID, o.force); err != nil {
		return fmt.Errorf("%s: %w", o.trace, err)
	}
	res, err := sim.Run(r, cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", o.trace, err)
	}
	sum := res.Summarize(sim.Symbols{Image: img, Map: opts.Map, Board: opts.Board})
	if o.capture != "" {
		c, err := res.Capture(buildID, sample.HostInfo{Time: time.Now().UTC(), ToolVersion: Version})
		if err != nil {
			return err
		}
		if err := sample.WriteFile(o.capture, c); err != nil {
			return err
		}
		fmt.Fprintf(s.Err, "tcmprof: wrote %s: %d samples at %d Hz of a %d Hz modelled clock\n", o.capture, len(c.Records), o.rate, o.clock)
	}
	if o.json {
		return sim.WriteJSON(s.Out, &cfg, sum)
	}
	st := r.Stats()
	fmt.Fprintf(s.Out, "trace: %d block executions of %d blocks; %d cut short by QEMU (corrected)\n", st.Executions, st.Blocks, st.Cuts)
	return sim.WriteText(s.Out, &cfg, sum, o.top)
}

// config is the model the options ask for, on img's board.
func (o *simOptions) config(img *image.Image, opts profile.Options) (sim.Config, error) {
	cfg := sim.BoardConfig(opts.Board)
	cfg.Cache = opts.ICache
	cfg.Penalty = o.penalty
	cfg.Seed = o.seed
	cfg.Policy = o.cachePolicy
	cfg.Sampling = o.sampling
	if o.unit != "" {
		addr, err := functionEntry(img, o.unit)
		if err != nil {
			return cfg, err
		}
		cfg.Unit = &sim.Unit{Name: o.unit, Addr: addr, Warmup: o.warmup, Count: o.units}
	}
	bench, err := testbenchRange(img)
	if err != nil {
		return cfg, err
	}
	if bench != nil {
		cfg.Exclude = append(cfg.Exclude, *bench)
	}
	cfg.Exclude = append(cfg.Exclude, o.excluded...)
	return cfg, cfg.Validate()
}

// functionEntry is the address of the one function called name.
func functionEntry(img *image.Image, name string) (uint32, error) {
	var found []*image.Function
	for _, f := range img.Functions() {
		if f.Name == name && !f.Veneer {
			found = append(found, f)
		}
	}
	switch len(found) {
	case 0:
		return 0, fmt.Errorf("--unit %s: no such function in the ELF (name the function that runs once per unit of work, or --unit \"\" for the whole trace)", name)
	case 1:
		return found[0].Addr, nil
	}
	return 0, fmt.Errorf("--unit %s: %d functions have that name", name, len(found))
}

// testbenchRange is [__testbench_start, __testbench_end) when the ELF has
// both symbols and the range is not empty.
func testbenchRange(img *image.Image) (*sim.Range, error) {
	syms, err := img.File().Symbols()
	if err != nil {
		return nil, nil // no symbol table, no testbench; image.Open has said what it could not read
	}
	var start, end uint64
	var haveStart, haveEnd bool
	for _, sym := range syms {
		switch sym.Name {
		case testbenchStart:
			start, haveStart = sym.Value, true
		case testbenchEnd:
			end, haveEnd = sym.Value, true
		}
	}
	if haveStart != haveEnd {
		return nil, fmt.Errorf("the ELF has only one of %s and %s", testbenchStart, testbenchEnd)
	}
	if !haveStart || end == start {
		return nil, nil
	}
	if end < start || end > 1<<32 {
		return nil, fmt.Errorf("%s 0x%x is below %s 0x%x", testbenchEnd, end, testbenchStart, start)
	}
	return &sim.Range{Start: uint32(start), End: end}, nil
}

// parseRange reads START-END or START+SIZE (hex, 0x optional).
func parseRange(s string) (sim.Range, error) {
	sep := strings.IndexAny(s, "-+")
	if sep <= 0 {
		return sim.Range{}, fmt.Errorf("--exclude %q: want START-END or START+SIZE in hex", s)
	}
	parse := func(v string) (uint64, error) {
		return strconv.ParseUint(strings.TrimPrefix(strings.ToLower(v), "0x"), 16, 33)
	}
	a, err1 := parse(s[:sep])
	b, err2 := parse(s[sep+1:])
	if err1 != nil || err2 != nil || a >= 1<<32 {
		return sim.Range{}, fmt.Errorf("--exclude %q: want START-END or START+SIZE in hex", s)
	}
	if s[sep] == '+' {
		b += a
	}
	r := sim.Range{Start: uint32(a), End: b}
	if b <= a || b > 1<<32 {
		return r, fmt.Errorf("--exclude %q: empty or past 4 GB", s)
	}
	return r, nil
}

// checkTraceBuildID compares the trace's build-id with the ELF's.
func checkTraceBuildID(errw io.Writer, trace, image []byte, force bool) error {
	switch {
	case len(trace) == 0:
		fmt.Fprintln(errw, "tcmprof: warning: the trace carries no build-id: cannot check that it came from this ELF (give the plugin buildid=)")
	case len(image) == 0:
		fmt.Fprintln(errw, "tcmprof: warning: the ELF has no GNU build-id: cannot check that the trace came from it")
	case !bytes.Equal(trace, image):
		msg := fmt.Sprintf("trace build-id %s differs from ELF build-id %s", hex.EncodeToString(trace), hex.EncodeToString(image))
		if !force {
			return errors.New(msg + ": the trace was taken from another build (--force models it anyway)")
		}
		fmt.Fprintf(errw, "tcmprof: warning: %s (--force)\n", msg)
	}
	return nil
}
