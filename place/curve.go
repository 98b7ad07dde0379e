// SPDX-License-Identifier: Apache-2.0

package place

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tcmprof/tcmprof/internal/svgplot"
	"github.com/tcmprof/tcmprof/internal/wording"
)

// BankSize is the granule of the i.MX RT FlexRAM: ITCM, DTCM and OCRAM
// share 32 KB banks, so ITCM comes in 32 KB steps and the benefit curve
// marks them.
const BankSize = 32 << 10

// WriteCurveTable prints the benefit curve: for each budget, the share of
// busy samples the plan moves and the bytes it uses, its marginal benefit
// (share points per KiB added since the previous budget), the predicted
// cycles against the planned-from image's (per unit of work when
// cyclesPerUnit > 0: the capture was modelled), density-greedy's share and
// cycles beside, and whether the plan is proven optimal. That fits
// texttable.Width columns; wide adds greedy's bytes and the plan's average
// benefit per KiB (its share over the budget).
func WriteCurveTable(w io.Writer, curve []CurvePoint, cyclesPerUnit float64, wide bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	cycles := "cycles"
	if cyclesPerUnit > 0 {
		cycles = "cycles/unit"
	}
	// The plan's columns, then greedy's share and its cycles under a
	// second "cycles": "greedy cycles/unit" would pass 80 columns.
	head := []string{"budget", "plan", "bytes", "pp/KiB", cycles, "greedy", cycles, "optimal"}
	if wide {
		head = []string{"budget", "plan", "bytes", "greedy", "bytes", "%/KiB", "pp/KiB", "optimal", cycles, "greedy " + cycles}
	}
	fmt.Fprintf(tw, "%s\t\n", strings.Join(head, "\t"))
	prev := CurvePoint{}
	for _, c := range curve {
		perKB, marginal := "-", "-"
		if c.Budget > 0 {
			perKB = fmt.Sprintf("%.3f", 100*c.Exact.Share/(float64(c.Budget)/1024))
		}
		if c.Budget > prev.Budget {
			marginal = fmt.Sprintf("%.3f", 100*(c.Exact.Share-prev.Exact.Share)/(float64(c.Budget-prev.Budget)/1024))
		}
		budget, plan, greedy := fmt.Sprint(c.Budget), wording.Percent(c.Exact.Share), wording.Percent(c.Greedy.Share)
		planCycles, greedyCycles := predictedCycles(c.Exact, cyclesPerUnit), predictedCycles(c.Greedy, cyclesPerUnit)
		row := []string{budget, plan, fmt.Sprint(c.Exact.Bytes), marginal, planCycles, greedy, greedyCycles, fmt.Sprint(c.Optimal)}
		if wide {
			row = []string{budget, plan, fmt.Sprint(c.Exact.Bytes), greedy, fmt.Sprint(c.Greedy.Bytes), perKB, marginal, fmt.Sprint(c.Optimal), planCycles, greedyCycles}
		}
		fmt.Fprintf(tw, "%s\t\n", strings.Join(row, "\t"))
		prev = c
	}
	return tw.Flush()
}

// predictedCycles is what is left of the planned-from image's cycles:
// per unit when cyclesPerUnit is known, else as a share.
func predictedCycles(p Prediction, cyclesPerUnit float64) string {
	if cyclesPerUnit > 0 {
		return fmt.Sprintf("%.0f", cyclesPerUnit*(1-p.StallShare))
	}
	return wording.Percent(1 - p.StallShare)
}

// kibAxis is the ITCM budget axis, ticks at round numbers of KiB.
func kibAxis(maxBudget uint32) svgplot.Axis {
	var kibTicks []float64
	for _, t := range svgplot.LinearTicks(0, float64(maxBudget)/1024, 6) {
		kibTicks = append(kibTicks, t*1024)
	}
	return svgplot.Axis{Label: "ITCM budget", Max: float64(maxBudget), Ticks: kibTicks,
		Format: func(v float64) string { return fmt.Sprintf("%.0f KiB", v/1024) }}
}

// curveChart is the benefit curve as a chart: share of busy samples covered
// against the ITCM budget, greedy and the plan.
func curveChart(curve []CurvePoint, maxBudget uint32) *svgplot.Chart {
	c := &svgplot.Chart{
		Title: "busy samples moved",
		X:     kibAxis(maxBudget),
		Y: svgplot.Axis{Label: "busy samples in ITCM", Max: 1, Ticks: []float64{0, 0.25, 0.5, 0.75, 1},
			Format: func(v float64) string { return fmt.Sprintf("%.0f %%", 100*v) }},
	}
	series := []struct {
		class, name, color string
		pick               func(CurvePoint) Prediction
	}{
		{"greedy", "greedy by density", "#d95f02", func(c CurvePoint) Prediction { return c.Greedy }},
		{"exact", "plan", "#1b9e77", func(c CurvePoint) Prediction { return c.Exact }},
	}
	for _, s := range series {
		line := svgplot.Series{Name: s.name, Class: s.class, Color: s.color}
		for _, c := range curve {
			p := s.pick(c)
			line.Points = append(line.Points, svgplot.Point{X: float64(c.Budget), Y: p.Share,
				Title: fmt.Sprintf("%s: %d B budget, %s of busy samples, %d B used", s.class, c.Budget, wording.Percent(p.Share), p.Bytes)})
		}
		c.Series = append(c.Series, line)
	}
	return c
}

// cyclesChart is the predicted cycles (per unit, or as a share of the
// planned-from image's) against the ITCM budget, greedy and the plan, with
// a dashed line at every FlexRAM bank boundary.
func cyclesChart(curve []CurvePoint, maxBudget uint32, cyclesPerUnit float64) *svgplot.Chart {
	scale, label := 100.0, "cycles, % of now"
	format := func(v float64) string { return fmt.Sprintf("%.0f %%", v) }
	if cyclesPerUnit > 0 {
		scale, label, format = cyclesPerUnit, "cycles per unit", svgplot.Compact
	}
	c := &svgplot.Chart{
		Title: "predicted cycles (stalls removed, from the samples)",
		X:     kibAxis(maxBudget),
		Y:     svgplot.Axis{Label: label, Max: scale, Format: format},
	}
	for bank := uint32(BankSize); bank <= maxBudget; bank += BankSize {
		c.Series = append(c.Series, svgplot.Series{Name: "32 KB bank", Class: "bank", Color: "#999999", Dashed: true, NoMarkers: true,
			Points: []svgplot.Point{{X: float64(bank), Y: 0}, {X: float64(bank), Y: scale}}})
	}
	for _, s := range []struct {
		class, name, color string
		pick               func(CurvePoint) Prediction
	}{
		{"greedy-cycles", "greedy by density", "#d95f02", func(c CurvePoint) Prediction { return c.Greedy }},
		{"plan-cycles", "plan", "#1b9e77", func(c CurvePoint) Prediction { return c.Exact }},
	} {
		line := svgplot.Series{Name: s.name, Class: s.class, Color: s.color}
		for _, c := range curve {
			p := s.pick(c)
			y := scale * (1 - p.StallShare)
			line.Points = append(line.Points, svgplot.Point{X: float64(c.Budget), Y: y,
				Title: fmt.Sprintf("%s: %d B budget, %s cycles, %d B used", s.class, c.Budget, predictedCycles(p, cyclesPerUnit), p.Bytes)})
		}
		c.Series = append(c.Series, line)
	}
	return c
}

// CurveXY maps a curve point to chart coordinates: x by budget over
// [0, maxBudget], y by share over [0, 1]. RenderCurveSVG places every
// point with it; tests use it to find the points again.
func CurveXY(budget uint32, share float64, maxBudget uint32) (x, y float64) {
	return curveChart(nil, maxBudget).XY(float64(budget), share)
}

// RenderCurveSVG draws two charts of the plan's benefit curve as one
// standalone SVG document: the share of busy samples covered against the
// ITCM budget (circles of class "exact" and "greedy") and the predicted
// cycles (class "plan-cycles" and "greedy-cycles", per unit when the plan
// knows the cycles per unit), marked at 32 KB bank boundaries (class
// "bank"). Each point's <title> gives its numbers.
func RenderCurveSVG(w io.Writer, p *Plan, title string) error {
	var maxBudget uint32
	for _, c := range p.Curve {
		maxBudget = max(maxBudget, c.Budget)
	}
	return svgplot.Render(w, title, curveChart(p.Curve, maxBudget), cyclesChart(p.Curve, maxBudget, p.CyclesPerUnit))
}
