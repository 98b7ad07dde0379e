// SPDX-License-Identifier: Apache-2.0

package place

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/tcmprof/tcmprof/internal/wording"
)

// WriteSummary prints what a plan predicts (ITCM use, share of busy samples
// covered, whether it is proven optimal), the greedy samples-per-byte plan
// beside it, the planned functions, why functions were left out (counted by
// reason, and listed when they were sampled) and the benefit curve. It is
// what "tcmprof plan" prints; the plan's warnings are the caller's to show.
func WriteSummary(w io.Writer, p *Plan) error {
	pr := p.Prediction
	fmt.Fprintf(w, "plan (%s layout): %d functions, %d bytes of the %d-byte budget (code %d, padding %d, %d veneers in ITCM, %d ITCM veneers removed)\n",
		p.Layout, pr.Functions, pr.Bytes, p.Budget, pr.Code, pr.Padding, pr.ITCMStubs, pr.RemovedStubs)
	fmt.Fprintf(w, "ITCM use: %d of %d bytes predicted (%d before)\n", pr.ITCMUsed, p.ITCMSize, p.ITCMUsed)
	fmt.Fprintf(w, "busy samples covered: %d of %d (%s)\n", pr.Samples, p.BusySamples, wording.Percent(pr.Share))
	fmt.Fprintf(w, "stall samples removed (predicted): %.0f (%s of busy samples); cycles: %s of now\n",
		pr.Stalls, wording.Percent(pr.StallShare), predictedCycles(pr, 0))
	if pr.CyclesHigh > 0 {
		fmt.Fprintf(w, "cycles: between %s and %s of now (no stall left at all; the code left in flash stalling as predicted, +%.0f %% for its layout)\n",
			wording.Percent(pr.CyclesLow), wording.Percent(pr.CyclesHigh), 100*LayoutLuck)
	}
	if p.CyclesPerUnit > 0 {
		between := ""
		if pr.CyclesHigh > 0 {
			between = fmt.Sprintf(", between %.0f and %.0f", p.CyclesPerUnit*pr.CyclesLow, p.CyclesPerUnit*pr.CyclesHigh)
		}
		fmt.Fprintf(w, "cycles per unit (predicted): %.0f -> %s%s\n", p.CyclesPerUnit, predictedCycles(pr, p.CyclesPerUnit), between)
	}
	if p.Filled {
		fmt.Fprintf(w, "the budget holds every function with %d samples or more: the plan also takes the sampled ones below\n", p.MinSamples)
	}
	objective := p.Objective
	if objective == "" {
		objective = ObjectiveSamples
	}
	switch {
	case objective == ObjectiveStalls:
		fmt.Fprintf(w, "objective stalls: the fewest predicted stalls of the stalls knapsack, greedy by stalls per byte and density-greedy\n")
	case !objective.exact():
		fmt.Fprintf(w, "objective %s: a greedy ranking\n", objective)
	case p.Optimal:
		fmt.Fprintf(w, "objective %s: exact plan, proven optimal under the cost model\n", objective)
	default:
		fmt.Fprintf(w, "objective %s: exact plan, search stopped early; no plan covers more than %d samples\n", objective, p.UpperBound)
	}
	fmt.Fprintf(w, "greedy by samples per byte: %d functions, %d bytes, %d samples (%s), %.0f stall samples removed (predicted)\n",
		p.Greedy.Functions, p.Greedy.Bytes, p.Greedy.Samples, wording.Percent(p.Greedy.Share), p.Greedy.Stalls)
	fmt.Fprintf(w, "veneers in the image: %d now, %d predicted\n", p.VeneersBefore, pr.Veneers)
	if len(p.Excluded) > 0 {
		fmt.Fprintf(w, "not planned: %s\n", exclusionCounts(p.Excluded))
	}
	if len(p.Entries) > 0 {
		fmt.Fprintln(w, "\nplanned:")
		for _, e := range p.Entries {
			fmt.Fprintf(w, "  %6d samples  %6.1f stalls  %5d B  %s\n", e.Samples, e.Stalls, e.Size, e.Key)
		}
	}
	var sampled []Exclusion
	for _, x := range p.Excluded {
		if x.Samples > 0 && x.Reason != ReasonFewSamples {
			sampled = append(sampled, x)
		}
	}
	if len(sampled) > 0 {
		fmt.Fprintln(w, "\nnot planned although sampled:")
		for _, x := range sampled {
			detail := x.Reason
			if x.Detail != "" {
				detail += ": " + x.Detail
			}
			fmt.Fprintf(w, "  %6d samples  %s (%s)\n", x.Samples, x.Key, detail)
		}
	}
	fmt.Fprintln(w, "\nbenefit by budget:")
	return WriteCurveTable(w, p.Curve, p.CyclesPerUnit)
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
