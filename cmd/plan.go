// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tcmprof/tcmprof/internal/atomicfile"
	"github.com/tcmprof/tcmprof/internal/texttable"
	"github.com/tcmprof/tcmprof/internal/wording"
	"github.com/tcmprof/tcmprof/linker"
	"github.com/tcmprof/tcmprof/place"
	"github.com/tcmprof/tcmprof/profile"
	"github.com/tcmprof/tcmprof/sample"
	"github.com/tcmprof/tcmprof/sim"
)

type planOptions struct {
	captures   []captureArg
	input      inputOptions
	budget     string
	excludes   []string
	formats    []string
	outputs    []string
	svg        string
	minSamples int
	objective  string
	simJSON    string
	runnerUp   bool
	keepOrder  bool
	wide       bool

	// Set by validate: the layout the formats need and the budget in
	// bytes (-1: all the free ITCM).
	layout      place.Layout
	budgetBytes int64
}

// Plan output formats.
const (
	formatZephyr = "zephyr"
	formatLD     = "ld"
	formatLDText = "ld-text"
	formatList   = "list"
	formatJSON   = "json"
	formatCurve  = "curve"
)

func newPlanCmd(s Streams, runF func(*planOptions, Streams) error) *cobra.Command {
	o := &planOptions{}
	c := &cobra.Command{
		Use:   "plan (--elf FILE | --build-dir DIR) CAPTURE[:WEIGHT]... [flags]",
		Short: "Plan which functions to move into ITCM under a byte budget",
		Long: `plan chooses the functions to move into ITCM within --budget bytes of ITCM,
counting what each choice really costs there: alignment padding as GNU ld
lays the sections out, and the long-branch veneers that calls between ITCM
and flash need. --objective says what the choice maximises:
  stalls   the fewest instruction-fetch stalls predicted from the samples
           (the default): samples piled on the first instruction of a
           cache line are fill stalls, and the code left in flash is
           relinked to predict each cache set; of five plans (the samples
           one, density-greedy, two stalls rankings and a search that sees
           two functions thrashing one set) it keeps the samples plan
           unless another is predicted better by more than the sampling
           error, and says which (docs/placement.md); --runner-up plans
           the one it ranked second instead: where it says the capture
           can not tell the two apart, time both on the board
  samples  the busy samples moved, exactly (knapsack)
  density  busy samples per byte, densest first (greedy)
  misses   line fills per byte as tcmprof sim measured them on this image
           (--sim-json): the reference the others are judged against
When the sampled code a plan leaves in flash fits the I-cache, the plan
also links it together (the flash group: ld-text, and zephyr's output), so
that none of its lines share a set beyond the cache's ways, and predicts
for it; spread among cold code as the link leaves it, the same code can
thrash (docs/placement.md).
It prints the predicted ITCM use, the share of busy samples covered, the
stall samples the plan is predicted to remove (and the cycles per unit of
work, for a capture tcmprof sim modelled), the plan against the greedy
samples-per-byte baseline, and the benefit over a range of budgets (--svg
draws it), within 80 columns: functions named without their source paths,
which --wide adds (with greedy's bytes in the curve, and unwrapped lines).

Never planned: the board's boot-critical functions and everything they call
before ITCM is filled (in a boot function that calls the board's ITCM copy
routine, only the calls up to that one count, and all the copy routine
calls; main and the kernel called after the copy may move), the sampler
(tcmp_*), veneers, the vector table, code with an unwind table entry
(.ARM.exidx), code already in ITCM,
functions matching --exclude (a glob on the symbol, its base name, its source
path or the source's base name), functions without their own input section
(build with -ffunction-sections; a function that is all of its object's
plain .text, like newlib's memcpy, has one for --format ld but not for
zephyr) and those with fewer than --min-samples busy samples. The map file
is required.

Without --format, plan prints its summary alone. --format and -o come in
pairs, in order; several pairs write several files from one plan (-o -
writes to standard output, and the summary goes to standard error):
  json    the plan itself, for "tcmprof verify" (and for humans)
  ld      a GNU ld fragment to INCLUDE inside an ITCM output section that
          comes before the one collecting *(.text*)
  ld-text a GNU ld fragment to INCLUDE in a flash output section of its
          own before the ITCM load image and .text: it links the sampled
          code the plan leaves in flash together when that code fits the
          I-cache (then none of its lines share a set beyond the cache's
          ways), which the prediction counts on; --keep-flash-order plans
          without it
  zephyr  zephyr_code_relocate() calls (Zephyr 4.0 or later) for the
          application's CMakeLists.txt to include() after find_package(Zephyr)
          (the flash group, as ld-text's, to FLASH_TEXT NOCOPY);
          the Kconfig fragment it needs (CONFIG_CODE_DATA_RELOCATION=y) is
          written beside it, with the extension replaced by .conf
          (-o itcm.cmake also writes itcm.conf, for -DEXTRA_CONF_FILE;
          firmware-sampler/zephyr/README.md shows the build line)
  list    one function per line: symbol, section, object, source
  curve   the benefit curve: per budget, the samples the plan and
          density-greedy move and the cycles they are predicted to take
          (per unit of work for a capture tcmprof sim modelled)
The padding is predicted for the layout of the chosen format, so ld and
zephyr can not be asked for in one run; without either, the layout is
zephyr's for a --build-dir (a west build) and ld's otherwise. Entries a
format can not express are listed on stderr. The files are written all or
none: when one can not be written, every old file is left as it was.

--budget takes bytes or a size with a K, KiB, M or MiB suffix (32K = 32768);
the default is all the ITCM the image leaves free. A budget that fits no
candidate function is refused, naming the smallest one.

The map file must come from the link that wrote the ELF: another build's
map (the relinked image's, say) is refused.

Several captures of one image, each of a workload, mix by the share of the
time each takes: CAPTURE:WEIGHT, e.g. echo.tcmcap:3 bulk.tcmcap:1 (a capture
without a weight weighs 1). The plan then also says what share of each
workload's busy samples it moves.`,
		Example: `  tcmprof plan --build-dir build before.tcmcap --budget 32K \
      --format zephyr -o itcm.cmake --format json -o plan.json
  tcmprof plan --elf demo.elf --map demo.map --board qemu-demo run.tcmcap \
      --format ld -o itcm.ld --format json -o plan.json
  tcmprof plan --build-dir build before.tcmcap \
      --exclude 'z_impl_*' --exclude 'net_*.c' --format list -o plan.txt \
      --svg curve.svg`,
		Args: withUsage(cobra.MinimumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			var err error
			if o.captures, err = parseCaptureArgs(args); err != nil {
				return err
			}
			return runCommand(o, s, runF, runPlan)
		},
	}
	o.input.addFlags(c)
	f := c.Flags()
	f.StringVar(&o.budget, "budget", "", "ITCM bytes the plan may add, e.g. 32K or 24576 (default: all the free ITCM)")
	f.StringArrayVar(&o.excludes, "exclude", nil, "glob of functions never to move (symbol, base name, source path or file name); repeatable")
	f.StringArrayVar(&o.formats, "format", nil, "output format: zephyr, ld, ld-text, list, json or curve; pairs with the -o that follows")
	f.StringArrayVarP(&o.outputs, "output", "o", nil, "file to write in the matching --format")
	f.StringVar(&o.svg, "svg", "", "draw the benefit curve (busy samples moved and predicted cycles against budget) as SVG")
	f.IntVar(&o.minSamples, "min-samples", place.DefaultMinSamples, "fewest busy samples a function needs to be planned")
	f.StringVar(&o.objective, "objective", string(place.DefaultObjective), "what the plan maximises: "+objectiveNames())
	addWideFlag(c, &o.wide)
	f.StringVar(&o.simJSON, "sim-json", "", "a \"tcmprof sim --json\" result of this image: the line fills the misses objective ranks by")
	f.BoolVar(&o.runnerUp, "runner-up", false, "plan the stalls objective's second-ranked plan instead of its choice, to time both on the board")
	f.BoolVar(&o.keepOrder, "keep-flash-order", false, "leave the code in flash in its order: no flash group (--format ld-text) for a build that links only the ITCM block")
	return c
}

func objectiveNames() string {
	var names []string
	for _, obj := range place.Objectives() {
		names = append(names, string(obj))
	}
	return strings.Join(names, ", ")
}

// readSimMisses sets each function's Misses from a sim --json result of
// the same image, matched by start address.
func readSimMisses(path string, in *place.Input) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var res sim.Summary
	if err := json.Unmarshal(data, &res); err != nil {
		return fmt.Errorf("%s: not a tcmprof sim --json result: %w", path, err)
	}
	misses := make(map[uint32]uint64, len(res.Functions))
	for _, f := range res.Functions {
		misses[f.Addr] += f.Misses
	}
	matched := 0
	for i := range in.Funcs {
		if m, ok := misses[in.Funcs[i].Addr]; ok {
			in.Funcs[i].Misses = int64(m)
			matched++
		}
	}
	if matched == 0 {
		return fmt.Errorf("%s: no function of it starts where one of the image does: a result of another image?", path)
	}
	return nil
}

func runPlan(o *planOptions, s Streams) error {
	in, sym, err := o.input.placeInput(s, o.captures, o.checkSources)
	if err != nil {
		return err
	}
	summary := s.Out
	if slices.Contains(o.outputs, stdoutName) { // that file has standard output
		summary = s.Err
	}
	if o.simJSON != "" {
		if err := readSimMisses(o.simJSON, in); err != nil {
			return err
		}
	}
	var cyclesPerUnit float64
	if m := sym.Capture.Model; m != nil && m.Units > 0 {
		cyclesPerUnit = float64(m.Cycles) / float64(m.Units)
	}
	plan, err := place.Build(in, place.Options{Budget: o.budgetBytes, Excludes: o.excludes, MinSamples: o.minSamples,
		Layout: o.layout, Objective: place.Objective(o.objective), CyclesPerUnit: cyclesPerUnit, RunnerUp: o.runnerUp, KeepFlashOrder: o.keepOrder})
	if err != nil {
		return budgetAdvice(err)
	}
	if len(plan.Entries) == 0 {
		return nothingToPlan(sym.Capture, in, plan)
	}
	for _, w := range plan.Warnings {
		fmt.Fprintf(s.Err, "tcmprof: warning: %s\n", w)
	}
	if len(plan.FlashGroup) > 0 && slices.Contains(o.formats, formatLD) && !slices.Contains(o.formats, formatLDText) {
		fmt.Fprintf(s.Err, "tcmprof: warning: the plan links the %d sampled functions it leaves in flash together, and its prediction counts on it: write them with --format ld-text, or plan with --keep-flash-order\n", len(plan.FlashGroup))
	}
	// Hot code the linker can not move alone is worth a build change
	// (-ffunction-sections), so it is said where it is seen.
	for _, x := range plan.Excluded {
		if (x.Reason == place.ReasonNoSection || x.Reason == place.ReasonNotText) && x.Samples >= plan.MinSamples {
			fmt.Fprintf(s.Err, "tcmprof: warning: skipped %s (%d samples): %s, %s\n", x.Key, x.Samples, x.Reason, x.Detail)
		}
	}
	// Every output or none: a second -o that cannot be written must not
	// leave the first one replaced by a plan the others do not match.
	// Standard output can not be taken back: it is written once every
	// file is.
	var files atomicfile.Set
	skips := make([][]linker.Skip, len(o.formats))
	for i, format := range o.formats {
		if o.outputs[i] == stdoutName {
			continue
		}
		if skips[i], err = o.writePlan(files.Add, o.outputs[i], format, plan); err != nil {
			return err
		}
	}
	if o.svg != "" {
		title := fmt.Sprintf("ITCM benefit curve, build-id %s", plan.BuildID)
		if err := files.Add(o.svg, func(w io.Writer) error { return place.RenderCurveSVG(w, plan, title) }); err != nil {
			return err
		}
	}
	if err := files.Commit(); err != nil {
		return err
	}
	for i, format := range o.formats {
		if o.outputs[i] == stdoutName {
			toStdout := func(path string, write func(io.Writer) error) error { return writeOutput(s, path, write) }
			if skips[i], err = o.writePlan(toStdout, stdoutName, format, plan); err != nil {
				return err
			}
		}
		for _, sk := range skips[i] {
			fmt.Fprintf(s.Err, "tcmprof: warning: %s: skipped %s\n", outputName(o.outputs[i]), sk)
		}
		if format == formatZephyr {
			for _, c := range linker.ZephyrCollisions(plan, in.Funcs) {
				fmt.Fprintf(s.Err, "tcmprof: warning: %s: Zephyr's relocation of %s (%s of %s) also moves %s (%s of %s): ITCM use will exceed the prediction\n",
					o.outputs[i], c.Planned.Symbol, c.Planned.Section, c.Planned.Object, c.Other.Symbol, c.Other.Section, c.Other.Object)
			}
		}
	}
	if err := place.WriteSummary(summary, plan, o.wide); err != nil {
		return err
	}
	if len(o.captures) > 1 {
		return o.writeWorkloadGains(summary, plan, sym)
	}
	return nil
}

// writeWorkloadGains says, for each capture of a mix, what share of its
// own busy samples the plan moves into ITCM: what each workload gains.
func (o *planOptions) writeWorkloadGains(w io.Writer, plan *place.Plan, mix *profile.Symbolized) error {
	fmt.Fprintln(w, "\nby workload (busy samples of each capture in the planned functions):")
	t := texttable.New("  ", "moved", "of busy", "weight", "capture")
	names := o.captureNames()
	parts, err := readWorkloads(o.captures, mix)
	if err != nil {
		return err
	}
	for i, a := range o.captures {
		busy, moved := 0, 0
		for pc, n := range parts.busyPCs[i] {
			busy += n
			if plannedAt(plan, pc) {
				moved += n
			}
		}
		share := 0.0
		if busy > 0 {
			share = float64(moved) / float64(busy)
		}
		t.Row(names[i], wording.Percent(share), fmt.Sprint(busy), fmt.Sprintf("%g", a.weight))
	}
	return t.Write(w, texttable.Limit(o.wide))
}

// captureNames names the captures of a mix in a table: by their file
// names, unless two have one name or --wide asks for the paths given.
func (o *planOptions) captureNames() []string {
	names, paths := make([]string, len(o.captures)), make([]string, len(o.captures))
	seen := make(map[string]bool)
	unique := !o.wide
	for i, a := range o.captures {
		names[i], paths[i] = filepath.Base(a.path), a.path
		unique = unique && !seen[names[i]]
		seen[names[i]] = true
	}
	if !unique {
		return paths
	}
	return names
}

// plannedAt reports whether addr lies in a function the plan moves.
func plannedAt(plan *place.Plan, addr uint32) bool {
	for _, e := range plan.Entries {
		if addr >= e.Addr && addr-e.Addr < e.Size {
			return true
		}
	}
	return false
}

// checkSources refuses, before the capture is read and analysed, a build
// without a map and outputs that would overwrite an input: every -o, the
// Kconfig fragment beside a zephyr one, and --svg.
func (o *planOptions) checkSources(src sources) error {
	var outputs []namedFile
	for i, out := range o.outputs {
		outputs = append(outputs, namedFile{"-o", out})
		for _, conf := range confPath(out, o.formats[i]) {
			outputs = append(outputs, namedFile{"-o " + out + "'s Kconfig fragment", conf})
		}
	}
	outputs = append(outputs, namedFile{"--svg", o.svg})
	inputs := append(append(src.files(), captureFiles(o.captures)...), namedFile{"--sim-json", o.simJSON})
	if err := checkOutputs(outputs, inputs); err != nil {
		return err
	}
	if src.mapFile == "" {
		where := "give --map"
		if o.input.buildDir != "" {
			where = fmt.Sprintf("--build-dir %s has no zephyr/zephyr.map; give --map", o.input.buildDir)
		}
		return fmt.Errorf("plan needs the link map (input sections and objects): %s", where)
	}
	return nil
}

// validate checks the format/output pairs and sets the layout they need
// and the budget.
func (o *planOptions) validate() error {
	if len(o.formats) != len(o.outputs) {
		return fmt.Errorf("%d --format but %d -o: give them in pairs", len(o.formats), len(o.outputs))
	}
	if err := checkMinSamples(o.minSamples); err != nil {
		return err
	}
	if !slices.Contains(place.Objectives(), place.Objective(o.objective)) {
		return fmt.Errorf("unknown --objective %q (%s)", o.objective, objectiveNames())
	}
	if place.Objective(o.objective) == place.ObjectiveMisses && o.simJSON == "" {
		return errors.New("--objective misses ranks by the line fills a model run measured: give --sim-json")
	}
	o.budgetBytes = -1
	if o.budget != "" {
		b, err := parseSize(o.budget)
		if err != nil {
			return fmt.Errorf("--budget: %w", err)
		}
		o.budgetBytes = b
	}
	var layout place.Layout
	seen := make(map[string]bool)
	for i, f := range o.formats {
		switch f {
		case formatZephyr, formatLD:
			if f == formatZephyr && o.outputs[i] == stdoutName {
				return errors.New("--format zephyr -o -: zephyr writes two files (FILE.cmake and FILE.conf beside it); give a file name")
			}
			l := place.Layout(f)
			if layout != "" && layout != l {
				return errors.New("--format ld and zephyr lay the functions out in different orders, so their padding differs: make one plan for each")
			}
			layout = l
		case formatList, formatJSON, formatCurve, formatLDText:
		default:
			return fmt.Errorf("unknown --format %q (zephyr, ld, ld-text, list, json or curve)", f)
		}
		for _, out := range append([]string{o.outputs[i]}, confPath(o.outputs[i], f)...) {
			if seen[out] {
				return fmt.Errorf("-o %s given twice", out)
			}
			seen[out] = true
		}
	}
	if layout == "" {
		// A west build is placed by zephyr_code_relocate: its summary and
		// list name only what that can move (not a library's plain .text).
		layout = place.LayoutLD
		if o.input.buildDir != "" {
			layout = place.LayoutZephyr
		}
	}
	o.layout = layout
	return nil
}

// confPath is the Kconfig fragment written beside a zephyr output.
func confPath(out, format string) []string {
	if format != formatZephyr {
		return nil
	}
	return []string{strings.TrimSuffix(out, filepath.Ext(out)) + ".conf"}
}

// writePlan writes the output in format to path through put (a file of
// an atomicfile.Set, or standard output), with the Kconfig fragment beside
// a zephyr one.
func (o *planOptions) writePlan(put func(path string, write func(io.Writer) error) error, path, format string, p *place.Plan) ([]linker.Skip, error) {
	var skipped []linker.Skip
	err := put(path, func(w io.Writer) error {
		var err error
		switch format {
		case formatJSON:
			return place.WritePlanJSON(w, p)
		case formatList:
			return linker.WriteList(w, p)
		case formatCurve:
			return place.WriteCurveTable(w, p.Curve, p.CyclesPerUnit, o.wide)
		case formatLD:
			skipped, err = linker.RenderLD(w, p)
		case formatLDText:
			skipped, err = linker.RenderLDText(w, p)
		case formatZephyr:
			skipped, err = linker.RenderZephyr(w, p)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, conf := range confPath(path, format) {
		if err := put(conf, func(w io.Writer) error {
			_, err := io.WriteString(w, linker.ZephyrKconfig)
			return err
		}); err != nil {
			return nil, err
		}
	}
	return skipped, nil
}

// parseSize reads a byte count: "4096", "0x1000", "32K", "32KiB", "1M",
// "1MiB" (K and M are binary, as memory sizes are).
func parseSize(s string) (int64, error) {
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"K", 1 << 10}, {"M", 1 << 20}, {"k", 1 << 10}} {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 0, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a size in bytes (e.g. 32K, 32KiB, 1M or 24576)", s)
	}
	if n > (1<<32)/mult {
		return 0, fmt.Errorf("%q is more than 4 GiB", s)
	}
	return n * mult, nil
}

// nothingToPlan is plan's error when no function can move, which an empty
// plan would not say: the outputs would build and verify as if the
// capture had been planned.
func nothingToPlan(c *sample.Capture, in *place.Input, p *place.Plan) error {
	inFuncs := 0
	for _, f := range in.Funcs {
		inFuncs += f.Samples
	}
	var why string
	switch {
	case len(c.Records) == 0:
		why = "the capture holds no samples"
	case in.BusySamples == 0:
		why = fmt.Sprintf("none of the capture's %d samples is busy", len(c.Records))
	case inFuncs == 0:
		why = fmt.Sprintf("none of the capture's %d busy samples is in a function of the image", in.BusySamples)
	default:
		why = fmt.Sprintf("no function that may move has --min-samples %d busy samples or more (not planned: %s)", p.MinSamples, p.NotPlanned())
	}
	return errors.New("nothing to plan: " + why)
}

// budgetAdvice adds to a budget the plan can not use the --budget that
// would do.
func budgetAdvice(err error) error {
	var b *place.BudgetError
	switch {
	case !errors.As(err, &b):
		return err
	case b.Need > 0:
		return fmt.Errorf("%w; give --budget %d or more", err, b.Need)
	default:
		return fmt.Errorf("%w; give --budget %d or less, or none for all of it", err, b.Free)
	}
}
