// SPDX-License-Identifier: Apache-2.0

package place

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/tcmprof/tcmprof/internal/svgplot"
	"github.com/tcmprof/tcmprof/internal/wording"
)

// WriteCurveTable prints the benefit curve: for each budget, the share of
// busy samples the exact and the greedy plan cover, the bytes they use, and
// the exact plan's benefit per KiB (share points per KiB of budget) and its
// marginal benefit per KiB since the previous budget.
func WriteCurveTable(w io.Writer, curve []CurvePoint) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "budget\texact\tbytes\tgreedy\tbytes\t%/KiB\tmarginal %/KiB\toptimal\t")
	prev := CurvePoint{}
	for _, c := range curve {
		perKB, marginal := "-", "-"
		if c.Budget > 0 {
			perKB = fmt.Sprintf("%.3f", 100*c.Exact.Share/(float64(c.Budget)/1024))
		}
		if c.Budget > prev.Budget {
			marginal = fmt.Sprintf("%.3f", 100*(c.Exact.Share-prev.Exact.Share)/(float64(c.Budget-prev.Budget)/1024))
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%d\t%s\t%s\t%v\t\n", c.Budget, wording.Percent(c.Exact.Share), c.Exact.Bytes,
			wording.Percent(c.Greedy.Share), c.Greedy.Bytes, perKB, marginal, c.Optimal)
		prev = c
	}
	return tw.Flush()
}

// curveChart is the benefit curve as a chart: share of busy samples covered
// against the ITCM budget, greedy and exact plan.
func curveChart(curve []CurvePoint, maxBudget uint32) *svgplot.Chart {
	// Ticks at round numbers of KiB, not of bytes.
	var kibTicks []float64
	for _, t := range svgplot.LinearTicks(0, float64(maxBudget)/1024, 6) {
		kibTicks = append(kibTicks, t*1024)
	}
	c := &svgplot.Chart{
		X: svgplot.Axis{Label: "ITCM budget", Max: float64(maxBudget), Ticks: kibTicks,
			Format: func(v float64) string { return fmt.Sprintf("%.0f KiB", v/1024) }},
		Y: svgplot.Axis{Label: "busy samples in ITCM", Max: 1, Ticks: []float64{0, 0.25, 0.5, 0.75, 1},
			Format: func(v float64) string { return fmt.Sprintf("%.0f %%", 100*v) }},
	}
	series := []struct {
		class, name, color string
		pick               func(CurvePoint) Prediction
	}{
		{"greedy", "greedy by density", "#d95f02", func(c CurvePoint) Prediction { return c.Greedy }},
		{"exact", "exact", "#1b9e77", func(c CurvePoint) Prediction { return c.Exact }},
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

// CurveXY maps a curve point to chart coordinates: x by budget over
// [0, maxBudget], y by share over [0, 1]. RenderCurveSVG places every
// point with it; tests use it to find the points again.
func CurveXY(budget uint32, share float64, maxBudget uint32) (x, y float64) {
	return curveChart(nil, maxBudget).XY(float64(budget), share)
}

// RenderCurveSVG draws the share of busy samples covered against the ITCM
// budget, exact plan and greedy plan, as a standalone SVG document. Each
// point is a circle with class "exact" or "greedy" and a <title> giving its
// numbers.
func RenderCurveSVG(w io.Writer, curve []CurvePoint, title string) error {
	var maxBudget uint32
	for _, c := range curve {
		maxBudget = max(maxBudget, c.Budget)
	}
	return svgplot.Render(w, title, curveChart(curve, maxBudget))
}
