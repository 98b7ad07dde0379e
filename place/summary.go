// SPDX-License-Identifier: Apache-2.0

package place

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/tcmprof/tcmprof/internal/texttable"
	"github.com/tcmprof/tcmprof/internal/wording"
)

// WriteSummary prints what a plan predicts (ITCM use, share of busy samples
// covered, whether it is proven optimal), the greedy samples-per-byte plan
// beside it, the planned functions, why functions were left out (counted by
// reason, and listed when they were sampled) and the benefit curve. It is
// what "tcmprof plan" prints; the plan's warnings are the caller's to show.
// It fits texttable.Width columns, functions named without their source
// unless two share a name; wide names them with their source path and
// writes each sentence on one line (plan --wide).
func WriteSummary(w io.Writer, p *Plan, wide bool) error {
	width := texttable.Limit(wide)
	say := func(phrases ...string) { fmt.Fprint(w, texttable.Wrap(width, "  ", phrases...)) }
	pr := p.Prediction
	say(fmt.Sprintf("plan (%s layout): %d functions, %d bytes of the %d-byte budget", p.Layout, pr.Functions, pr.Bytes, p.Budget),
		fmt.Sprintf("(code %d, padding %d, %d veneers in ITCM, %d ITCM veneers removed)", pr.Code, pr.Padding, pr.ITCMStubs, pr.RemovedStubs))
	say(fmt.Sprintf("ITCM use: %d of %d bytes predicted (%d before)", pr.ITCMUsed, p.ITCMSize, p.ITCMUsed))
	say(fmt.Sprintf("busy samples covered: %d of %d (%s)", pr.Samples, p.BusySamples, wording.Percent(pr.Share)))
	say(fmt.Sprintf("stall samples removed (predicted): %.0f (%s of busy samples);", pr.Stalls, wording.Percent(pr.StallShare)),
		fmt.Sprintf("cycles: %s of now", predictedCycles(pr, 0)))
	if pr.CyclesHigh > 0 {
		say(fmt.Sprintf("cycles: between %s and %s of now", wording.Percent(pr.CyclesLow), wording.Percent(pr.CyclesHigh)),
			"(no stall left at all;", "every sampled line left in flash", "counted as fetched on every pass,", fmt.Sprintf("+%.0f %% for its layout)", 100*LayoutLuck))
	}
	if p.CyclesPerUnit > 0 {
		between := ""
		if pr.CyclesHigh > 0 {
			between = fmt.Sprintf(", between %.0f and %.0f", p.CyclesPerUnit*pr.CyclesLow, p.CyclesPerUnit*pr.CyclesHigh)
		}
		say(fmt.Sprintf("cycles per unit (predicted): %.0f -> %s%s", p.CyclesPerUnit, predictedCycles(pr, p.CyclesPerUnit), between))
	}
	if p.Filled {
		say(fmt.Sprintf("the budget holds every function with %d samples or more:", p.MinSamples), "the plan also takes the sampled ones below")
	}
	objective := p.Objective
	if objective == "" {
		objective = ObjectiveSamples
	}
	switch {
	case objective == ObjectiveStalls && p.Chosen != "":
		say(append([]string{"objective stalls:"}, texttable.Phrases(p.Chosen, ", ")...)...)
	case !objective.exact():
		say(fmt.Sprintf("objective %s: a greedy ranking", objective))
	case p.Optimal:
		say(fmt.Sprintf("objective %s: exact plan, proven optimal under the cost model", objective))
	default:
		say(fmt.Sprintf("objective %s: exact plan, search stopped early;", objective), fmt.Sprintf("no plan covers more than %d samples", p.UpperBound))
	}
	say(fmt.Sprintf("greedy by samples per byte: %d functions, %d bytes, %d samples (%s),", p.Greedy.Functions, p.Greedy.Bytes, p.Greedy.Samples, wording.Percent(p.Greedy.Share)),
		fmt.Sprintf("%.0f stall samples removed (predicted)", p.Greedy.Stalls))
	say(fmt.Sprintf("veneers in the image: %d now, %d predicted", p.VeneersBefore, pr.Veneers))
	if len(p.FlashGroup) > 0 {
		output := "(--format ld-text; the prediction counts on it)"
		if p.Layout == LayoutZephyr {
			output = "(--format zephyr's FLASH_TEXT relocations; the prediction counts on it)"
		}
		say(fmt.Sprintf("flash group: the %d sampled functions left in flash (%d bytes)", len(p.FlashGroup), p.FlashGroupBytes()),
			"fit the I-cache, linked together in the flash code", output)
		if unseen := p.UnseenFunctions(); unseen >= 1 {
			say(fmt.Sprintf("functions that run without a sample: about %.0f", unseen),
				"(Chao1, from those with one and two);", "the group can not hold them,",
				"and where one lands it evicts the group's lines:", "a longer capture takes them in")
		}
	}
	if len(p.Excluded) > 0 {
		say(append([]string{"not planned:"}, texttable.Phrases(exclusionCounts(p.Excluded), ", ")...)...)
	}
	if len(p.Entries) > 0 {
		fmt.Fprintln(w, "\nplanned:")
		keys := make([]FuncKey, len(p.Entries))
		for i, e := range p.Entries {
			keys[i] = e.Key
		}
		names := functionNames(keys, wide)
		t := texttable.New("  ", "samples", "stalls", "size", "function")
		for i, e := range p.Entries {
			t.Row(names[i], fmt.Sprint(e.Samples), fmt.Sprintf("%.1f", e.Stalls), fmt.Sprint(e.Size))
		}
		if err := t.Write(w, width); err != nil {
			return err
		}
	}
	if err := writeSampledExclusions(w, p.Excluded, wide); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nbenefit by budget:")
	return WriteCurveTable(w, p.Curve, p.CyclesPerUnit, wide)
}

// writeSampledExclusions lists the sampled functions the plan left out
// for a reason other than too few samples, under each reason.
func writeSampledExclusions(w io.Writer, excluded []Exclusion, wide bool) error {
	var sampled []Exclusion
	for _, x := range excluded {
		if x.Samples > 0 && x.Reason != ReasonFewSamples {
			sampled = append(sampled, x)
		}
	}
	if len(sampled) == 0 {
		return nil
	}
	why := func(x Exclusion) string {
		if x.Detail != "" {
			return x.Reason + ": " + x.Detail
		}
		return x.Reason
	}
	// The reasons in the order of their most sampled function.
	var reasons []string
	byReason := make(map[string][]int)
	keys := make([]FuncKey, len(sampled))
	for i, x := range sampled {
		r := why(x)
		if byReason[r] == nil {
			reasons = append(reasons, r)
		}
		byReason[r] = append(byReason[r], i)
		keys[i] = x.Key
	}
	names := functionNames(keys, wide)
	fmt.Fprintln(w, "\nnot planned although sampled:")
	t := texttable.New("  ", "samples", "function")
	for _, r := range reasons {
		t.Section(r)
		for _, i := range byReason[r] {
			t.RowUnder(names[i], fmt.Sprint(sampled[i].Samples))
		}
	}
	return t.Write(w, texttable.Limit(wide))
}

// functionNames names functions in a table: by name, with as much of the
// source path as tells two of one name apart, or (wide) with the whole
// source path.
func functionNames(keys []FuncKey, wide bool) []string {
	names, sources := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		if wide {
			names[i] = k.String()
		} else {
			names[i], sources[i] = k.Name(), k.Source
		}
	}
	if wide {
		return names
	}
	return texttable.Disambiguate(names, sources)
}

// NotPlanned says how many functions each reason left out of the plan:
// "1 already in ITCM, 6 boot-critical".
func (p *Plan) NotPlanned() string { return exclusionCounts(p.Excluded) }

// exclusionCounts says how many functions each reason left out, reasons in
// alphabetical order: "1 already in ITCM, 6 boot-critical".
func exclusionCounts(xs []Exclusion) string {
	counts := make(map[string]int)
	for _, x := range xs {
		counts[x.Reason]++
	}
	reasons := make([]string, 0, len(counts))
	for r := range counts {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%d %s", counts[r], r)
	}
	return strings.Join(parts, ", ")
}

// UnseenFunctions estimates how many functions ran during the capture but
// got no sample, from how many got one (f1) and two (f2): Chao's
// estimator, f1²/2f2 (f1(f1-1)/2 without any of two). A flash group can
// not hold code the capture did not see, and such code, run every unit of
// work, evicts the group's lines where it lands: on the demo at 32 KB, two
// functions (the estimate, from a capture of 4,000 echoes: 2.1) cost the
// group 2 % of the cycles per echo, and a capture four times as long took
// them in (docs/placement.md).
func (p *Plan) UnseenFunctions() float64 {
	var f1, f2 float64
	seen := make(map[[3]string]bool)
	count := func(e Entry) {
		id := [3]string{e.Archive, e.Object, e.Section}
		if seen[id] {
			return
		}
		seen[id] = true
		switch e.Samples {
		case 1:
			f1++
		case 2:
			f2++
		}
	}
	// The sampled functions are in one of these: planned, left out for a
	// reason, or a candidate left in flash (the group names those).
	for _, e := range slices.Concat(p.Entries, p.FlashGroup) {
		count(e)
	}
	for _, x := range p.Excluded {
		count(x.Entry)
	}
	if f2 == 0 {
		return f1 * (f1 - 1) / 2
	}
	return f1 * f1 / (2 * f2)
}
