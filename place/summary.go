package place

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// WriteSummary prints what a plan predicts, next to the greedy plan, and
// why functions were left out, counted by reason.
func WriteSummary(w io.Writer, p *Plan) error {
	pr := &p.Prediction
	var b strings.Builder
	fmt.Fprintf(&b, "plan: %d functions, %d bytes of a %d-byte budget (code %d, padding %d, %d new ITCM veneers, %d ITCM veneers gone)\n",
		pr.Functions, pr.Bytes, p.Budget, pr.Code, pr.Padding, pr.ITCMStubs, pr.RemovedStubs)
	fmt.Fprintf(&b, "ITCM: %d -> %d bytes used of %d\n", p.ITCMUsed, pr.ITCMUsed, p.ITCMSize)
	proof := "optimal under the cost model"
	if !p.Optimal {
		proof = fmt.Sprintf("search stopped; no plan covers more than %d", p.UpperBound)
	}
	fmt.Fprintf(&b, "covers %d of %d busy samples (%.2f%%), %s\n", pr.Samples, p.BusySamples, 100*pr.Share, proof)
	fmt.Fprintf(&b, "greedy by density: %d functions, %d samples (%.2f%%), %d bytes\n",
		p.Greedy.Functions, p.Greedy.Samples, 100*p.Greedy.Share, p.Greedy.Bytes)
	fmt.Fprintf(&b, "veneers in the image: %d -> %d\n", p.VeneersBefore, pr.Veneers)
	counts := make(map[string]int)
	for _, x := range p.Excluded {
		counts[x.Reason]++
	}
	reasons := make([]string, 0, len(counts))
	for r := range counts {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	if len(reasons) > 0 {
		parts := make([]string, len(reasons))
		for i, r := range reasons {
			parts[i] = fmt.Sprintf("%d %s", counts[r], r)
		}
		fmt.Fprintf(&b, "not planned: %s\n", strings.Join(parts, ", "))
	}
	for _, msg := range p.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", msg)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
