// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tcmprof/tcmprof/elf/board"
	"github.com/tcmprof/tcmprof/linker"
	"github.com/tcmprof/tcmprof/place"
	"github.com/tcmprof/tcmprof/place/imageinput"
)

// exitVerifyFailed is verify's exit code when the rebuilt image departs
// from the plan, so scripts can tell "plan not met" (3) from "could not
// check" (1).
const exitVerifyFailed = 3

type verifyOptions struct {
	input inputOptions
	plan  string
}

func newVerifyCmd(s Streams, runF func(*verifyOptions, Streams) error) *cobra.Command {
	o := &verifyOptions{}
	c := &cobra.Command{
		Use:   "verify (--elf NEW.elf | --build-dir DIR) --plan plan.json [flags]",
		Short: "Check a rebuilt image against its ITCM plan",
		Long: `verify checks the image rebuilt with a plan's output (written by
"tcmprof plan --format json"): every planned function is in ITCM (GCC clones
renumbered by the rebuild, foo.constprop.0 becoming foo.constprop.1, are
found again and noted); no function the plan excluded for safety (boot path,
sampler, pins, plan --exclude) moved into ITCM; ITCM use and the number of
long-branch veneers are within tolerance of the prediction.

Exit status: 0 when the image meets the plan, 3 when it does not (each
violation is listed, one per line, on stdout), 1 when it could not be checked.`,
		Example: `  tcmprof verify --build-dir build-itcm --plan plan.json
  tcmprof verify --elf build-itcm/demo.elf --map build-itcm/demo.map \
      --plan plan.json`,
		Args: withUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error { return runCommand(o, s, runF, runVerify) },
	}
	o.input.noBoard = true
	f := c.Flags()
	f.StringVar(&o.input.elfPath, "elf", "", "the rebuilt firmware ELF")
	f.StringVar(&o.input.buildDir, "build-dir", "", "the rebuilt west build directory: reads zephyr/zephyr.elf and zephyr.map")
	f.StringVar(&o.input.mapPath, "map", "", "the rebuilt image's map file, for input sections in the report (default: from --build-dir)")
	f.StringVar(&o.plan, "plan", "", "the plan (tcmprof plan --format json)")
	c.MarkFlagRequired("plan")
	return c
}

func runVerify(o *verifyOptions, s Streams) error {
	plan, err := readPlan(o.plan)
	if err != nil {
		return err
	}
	src, opts, img, err := o.input.openInputs(nil, nil)
	if err != nil {
		return err
	}
	// The ITCM the plan was made for is the one to check against; the
	// board's other regions only name memories in messages.
	board := &board.Board{Name: "plan", Regions: []board.Region{{Name: "ITCM", Kind: board.KindITCM, Start: plan.ITCMStart, Size: plan.ITCMSize}}}
	in, warnings, err := imageinput.Read(imageinput.Sources{Image: img, Map: opts.Map, MapPath: src.mapFile, Board: board})
	if err != nil {
		return err
	}
	printWarnings(s.Err, warnings)
	// Veneers are the linker's: they come and go with the plan, by name
	// and region, and are checked by their count alone.
	var funcs []place.Func
	for _, f := range in.Funcs {
		if f.Pin != imageinput.PinVeneer {
			funcs = append(funcs, f)
		}
	}
	rep, err := linker.Verify(plan, &linker.Image{Funcs: funcs, ITCMStart: in.ITCMStart, ITCMSize: in.ITCMSize,
		ITCMUsed: in.ITCMUsed, Veneers: imageinput.Veneers(img)})
	if err != nil {
		return err
	}
	inITCM := writeVerifyReport(s.Out, plan, rep)
	if len(rep.Violations) > 0 {
		err := violationsError(src.elf, notRebuiltHint(plan, in.BuildID, inITCM), rep.Violations)
		return exitError{err, exitVerifyFailed}
	}
	return nil
}

// notRebuiltHint says what went wrong when the image checked is plainly
// not one built with the plan's output: the very image the plan was made
// from (the stock build directory given instead of the new one), or a
// build with none of the planned functions in ITCM (the output left out
// of the build). "" otherwise.
func notRebuiltHint(p *place.Plan, imageBuildID string, inITCM int) string {
	switch {
	case p.BuildID != "" && imageBuildID == p.BuildID:
		return "it is the image the plan was made from (same build-id), not one rebuilt with the plan's output"
	case inITCM == 0 && len(p.Entries) > 0:
		return fmt.Sprintf("none of the %d planned functions is in ITCM: was the plan's output in the build "+
			"(itcm.cmake included by the app's CMakeLists.txt and itcm.conf added to its Kconfig files, or the ld fragment INCLUDEd)?", len(p.Entries))
	}
	return ""
}

// violationsError is verify's one-line error: why the image may not be the
// rebuilt one (hint, if any), then the first few violations by name; all of
// them are in the VIOLATION lines on stdout.
func violationsError(elf, hint string, vs []linker.Violation) error {
	const shown = 3
	names := make([]string, 0, shown)
	for _, v := range vs[:min(len(vs), shown)] {
		names = append(names, v.String())
	}
	more := ""
	if len(vs) > shown {
		more = fmt.Sprintf("; and %d more, listed above", len(vs)-shown)
	}
	if hint != "" {
		hint += "; "
	}
	return fmt.Errorf("%s does not meet the plan: %s%d violation(s): %s%s", elf, hint, len(vs), strings.Join(names, "; "), more)
}

// writeVerifyReport prints the report and returns how many planned
// functions are in ITCM.
func writeVerifyReport(w io.Writer, p *place.Plan, r *linker.Report) int {
	inITCM := 0
	for _, res := range r.Resolved {
		if res.Func != nil && place.InRange(res.Func.Addr, p.ITCMStart, p.ITCMSize) {
			inITCM++
		}
	}
	fmt.Fprintf(w, "planned functions in ITCM: %d of %d\n", inITCM, len(p.Entries))
	fmt.Fprintf(w, "ITCM use: %d bytes, predicted %d (tolerance +%d)\n", r.ITCMUsed, r.PredictedITCMUsed, r.ITCMTolerance)
	fmt.Fprintf(w, "veneers: %d, predicted %d (tolerance +%d)\n", r.Veneers, r.PredictedVeneers, r.VeneerTolerance)
	if r.GroupSpan > 0 {
		fmt.Fprintf(w, "flash group: %d functions in %d bytes from %#x (%d laid out together)\n", len(p.FlashGroup), r.GroupSpan, r.GroupFrom, r.GroupTogether)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, v := range r.Violations {
		fmt.Fprintf(w, "VIOLATION %s\n", v)
	}
	if len(r.Violations) == 0 {
		fmt.Fprintln(w, "OK: the image meets the plan")
	}
	return inITCM
}

func readPlan(path string) (*place.Plan, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := place.ReadPlanJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}
