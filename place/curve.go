package place

import (
	"fmt"
	"html"
	"io"
	"strings"
	"text/tabwriter"
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
		fmt.Fprintf(tw, "%d\t%.2f%%\t%d\t%.2f%%\t%d\t%s\t%s\t%v\t\n", c.Budget, 100*c.Exact.Share, c.Exact.Bytes,
			100*c.Greedy.Share, c.Greedy.Bytes, perKB, marginal, c.Optimal)
		prev = c
	}
	return tw.Flush()
}

// Geometry of the curve chart, in SVG user units.
const (
	svgWidth, svgHeight = 640, 400
	svgLeft, svgRight   = 60, 20
	svgTop, svgBottom   = 30, 50
)

// CurveXY maps a curve point to chart coordinates: x by budget over
// [0, maxBudget], y by share over [0, 1]. RenderCurveSVG places every
// point with it; tests use it to find the points again.
func CurveXY(budget uint32, share float64, maxBudget uint32) (x, y float64) {
	plotW := float64(svgWidth - svgLeft - svgRight)
	plotH := float64(svgHeight - svgTop - svgBottom)
	x = svgLeft
	if maxBudget > 0 {
		x += plotW * float64(budget) / float64(maxBudget)
	}
	y = svgTop + plotH*(1-share)
	return x, y
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
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">
<title>%s</title>
<rect width="100%%" height="100%%" fill="white"/>
`, svgWidth, svgHeight, svgWidth, svgHeight, html.EscapeString(title))
	x0, y0 := CurveXY(0, 0, maxBudget)
	x1, y1 := CurveXY(maxBudget, 1, maxBudget)
	fmt.Fprintf(&b, `<path d="M%.1f %.1f H%.1f M%.1f %.1f V%.1f" stroke="black" fill="none"/>
`, x0, y0, x1, x0, y0, y1)
	for _, s := range []float64{0, 0.25, 0.5, 0.75, 1} {
		_, y := CurveXY(0, s, maxBudget)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%.0f%%</text>
`, x0-6, y+4, 100*s)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%d KiB</text>
<text x="%.1f" y="%.1f" text-anchor="middle">ITCM budget</text>
<text x="%d" y="%d" transform="rotate(-90 %d %d)" text-anchor="middle">busy samples in ITCM</text>
`, x1, y0+18, maxBudget/1024, (x0+x1)/2, y0+38, 16, (svgTop+svgHeight-svgBottom)/2, 16, (svgTop+svgHeight-svgBottom)/2)
	series := []struct {
		class, color string
		pick         func(CurvePoint) Prediction
	}{
		{"greedy", "#d95f02", func(c CurvePoint) Prediction { return c.Greedy }},
		{"exact", "#1b9e77", func(c CurvePoint) Prediction { return c.Exact }},
	}
	for _, s := range series {
		var d strings.Builder
		for i, c := range curve {
			x, y := CurveXY(c.Budget, s.pick(c).Share, maxBudget)
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%.1f %.1f ", cmd, x, y)
		}
		fmt.Fprintf(&b, `<path class="%s" d="%s" stroke="%s" fill="none" stroke-width="2"/>
`, s.class, strings.TrimSpace(d.String()), s.color)
		for _, c := range curve {
			p := s.pick(c)
			x, y := CurveXY(c.Budget, p.Share, maxBudget)
			fmt.Fprintf(&b, `<circle class="%s" cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s: %d B budget, %.2f%% of busy samples, %d B used</title></circle>
`, s.class, x, y, s.color, s.class, c.Budget, 100*p.Share, p.Bytes)
		}
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#1b9e77">exact</text>
<text x="%d" y="%d" fill="#d95f02">greedy by density</text>
</svg>
`, svgLeft+10, svgTop-10, svgLeft+70, svgTop-10)
	_, err := io.WriteString(w, b.String())
	return err
}
