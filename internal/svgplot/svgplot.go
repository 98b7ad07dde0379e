// SPDX-License-Identifier: Apache-2.0

// Package svgplot draws the project's line charts as standalone SVG: the
// planner's benefit curve and the load test's goodput curves. A chart is a
// pair of axes (linear or logarithmic) and series of points, each point
// optionally with a band (e.g. mean ± 1 sd) and a <title> giving its
// numbers; several charts stack into one document. It writes no JavaScript
// and needs no fonts beyond the viewer's sans-serif.
package svgplot

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// Geometry of one chart panel, in SVG user units.
const (
	Width, Height     = 640, 400
	marginLeft        = 60
	marginRight       = 20
	marginTop         = 30
	marginBottom      = 50
	plotWidth         = Width - marginLeft - marginRight
	plotHeight        = Height - marginTop - marginBottom
	legendSpacing     = 14
	legendCharWidth   = 7 // about the width of a character of the 12-unit sans-serif
	defaultTickTarget = 6
	bandOpacity       = "0.2"
	lineWidth         = "2"
	markerRadius      = "3"
	referenceDash     = "4 4"
)

// Axis is one axis of a chart. Min and Max bound the values shown; on a log
// axis both must be positive. Ticks nil picks round values (1, 2, 5 × 10^k
// on a linear axis, powers of ten and their 2 and 5 multiples on a log
// axis); Format nil prints them compactly (1500, 20k, 1.5M).
type Axis struct {
	Label    string
	Min, Max float64
	Log      bool
	Ticks    []float64
	Format   func(float64) string
}

// Point is one value of a series. With Band set, Lo and Hi bound a shaded
// band around the line (e.g. mean ± 1 sd).
type Point struct {
	X, Y   float64
	Lo, Hi float64
	Title  string // the marker's tooltip
}

// Series is a line through its points, with a circle per point unless
// NoMarkers, drawn in Color; Class names its elements for tests and style
// sheets. Dashed draws a reference line (e.g. goodput = offered).
type Series struct {
	Name      string
	Class     string
	Color     string
	Points    []Point
	Band      bool
	Dashed    bool
	NoMarkers bool
}

// Chart is one panel: axes, series and a title above the plot.
type Chart struct {
	Title  string
	X, Y   Axis
	Series []Series
}

// XY maps a value to the panel's coordinates (the first panel of a
// document; panel i is shifted down by i × Height). Values outside the axis
// are clamped to it; non-positive values on a log axis land on its minimum.
func (c *Chart) XY(x, y float64) (float64, float64) {
	return marginLeft + plotWidth*c.X.fraction(x), marginTop + plotHeight*(1-c.Y.fraction(y))
}

// fraction is where v lies along the axis, 0 at Min and 1 at Max.
func (a *Axis) fraction(v float64) float64 {
	lo, hi := a.Min, a.Max
	if a.Log {
		if v <= 0 {
			return 0
		}
		lo, hi, v = math.Log10(lo), math.Log10(hi), math.Log10(v)
	}
	if hi <= lo {
		return 0
	}
	return math.Max(0, math.Min(1, (v-lo)/(hi-lo)))
}

// ticks returns the axis's tick values inside [Min, Max].
func (a *Axis) ticks() []float64 {
	if a.Ticks != nil {
		return a.Ticks
	}
	if a.Log {
		return logTicks(a.Min, a.Max)
	}
	return LinearTicks(a.Min, a.Max, defaultTickTarget)
}

// LinearTicks returns multiples of a 1, 2 or 5 × 10^k step inside
// [lo, hi], about n of them.
func LinearTicks(lo, hi float64, n int) []float64 {
	if hi <= lo {
		return []float64{lo}
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ts []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		ts = append(ts, v)
	}
	return ts
}

// logTicks returns 1, 2, 5 × 10^k inside [lo, hi]; only the powers of ten
// when the range spans more than three decades.
func logTicks(lo, hi float64) []float64 {
	if lo <= 0 || hi <= lo {
		return nil
	}
	mults := []float64{1, 2, 5}
	if math.Log10(hi/lo) > 3 {
		mults = []float64{1}
	}
	var ts []float64
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range mults {
			if v := m * math.Pow(10, e); v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
				ts = append(ts, v)
			}
		}
	}
	return ts
}

// Compact prints a number in at most four significant characters plus a
// k or M suffix: 950, 1500, 20k, 1.5M.
func Compact(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	default:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
}

func (a *Axis) format(v float64) string {
	if a.Format != nil {
		return a.Format(v)
	}
	return Compact(math.Round(v*1000) / 1000)
}

// Render writes a standalone SVG document with the charts stacked top to
// bottom; title is the document's <title>.
func Render(w io.Writer, title string, charts ...*Chart) error {
	var b strings.Builder
	h := Height * len(charts)
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">
<title>%s</title>
<rect width="100%%" height="100%%" fill="white"/>
`, Width, h, Width, h, html.EscapeString(title))
	for i, c := range charts {
		fmt.Fprintf(&b, "<g transform=\"translate(0 %d)\">\n", i*Height)
		c.render(&b)
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// pathCmd starts a path at its first point and draws lines to the rest.
func pathCmd(i int) string {
	if i == 0 {
		return "M"
	}
	return "L"
}

func (c *Chart) render(b *strings.Builder) {
	x0, y0 := float64(marginLeft), float64(marginTop+plotHeight)
	x1, y1 := float64(marginLeft+plotWidth), float64(marginTop)
	esc := html.EscapeString
	if c.Title != "" {
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-weight=\"bold\">%s</text>\n", (x0+x1)/2, marginTop-14, esc(c.Title))
	}
	// Grid lines and tick labels first, so that the data is drawn over them.
	for _, t := range c.X.ticks() {
		x, _ := c.XY(t, c.Y.Min)
		fmt.Fprintf(b, "<path d=\"M%.1f %.1f V%.1f\" stroke=\"#ddd\"/>\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
			x, y0, y1, x, y0+16, esc(c.X.format(t)))
	}
	for _, t := range c.Y.ticks() {
		_, y := c.XY(c.X.Min, t)
		fmt.Fprintf(b, "<path d=\"M%.1f %.1f H%.1f\" stroke=\"#ddd\"/>\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
			x0, y, x1, x0-6, y+4, esc(c.Y.format(t)))
	}
	fmt.Fprintf(b, "<path d=\"M%.1f %.1f H%.1f M%.1f %.1f V%.1f\" stroke=\"black\" fill=\"none\"/>\n", x0, y0, x1, x0, y0, y1)
	mid := (marginTop + plotHeight/2)
	fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n<text x=\"16\" y=\"%d\" transform=\"rotate(-90 16 %d)\" text-anchor=\"middle\">%s</text>\n",
		(x0+x1)/2, y0+38, esc(c.X.Label), mid, mid, esc(c.Y.Label))

	for _, s := range c.Series {
		if s.Band && len(s.Points) > 0 {
			var d strings.Builder
			for i, p := range s.Points {
				x, y := c.XY(p.X, p.Hi)
				fmt.Fprintf(&d, "%s%.1f %.1f ", pathCmd(i), x, y)
			}
			for i := len(s.Points) - 1; i >= 0; i-- {
				x, y := c.XY(s.Points[i].X, s.Points[i].Lo)
				fmt.Fprintf(&d, "L%.1f %.1f ", x, y)
			}
			fmt.Fprintf(b, "<path class=\"%s band\" d=\"%sZ\" fill=\"%s\" fill-opacity=\"%s\" stroke=\"none\"/>\n", esc(s.Class), d.String(), s.Color, bandOpacity)
		}
	}
	for _, s := range c.Series {
		if len(s.Points) == 0 {
			continue
		}
		var d strings.Builder
		for i, p := range s.Points {
			x, y := c.XY(p.X, p.Y)
			fmt.Fprintf(&d, "%s%.1f %.1f ", pathCmd(i), x, y)
		}
		dash := ""
		if s.Dashed {
			dash = fmt.Sprintf(" stroke-dasharray=\"%s\"", referenceDash)
		}
		fmt.Fprintf(b, "<path class=\"%s\" d=\"%s\" stroke=\"%s\" fill=\"none\" stroke-width=\"%s\"%s/>\n", esc(s.Class), strings.TrimSpace(d.String()), s.Color, lineWidth, dash)
		if s.NoMarkers {
			continue
		}
		for _, p := range s.Points {
			x, y := c.XY(p.X, p.Y)
			fmt.Fprintf(b, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" fill=\"%s\"><title>%s</title></circle>\n", esc(s.Class), x, y, markerRadius, s.Color, esc(p.Title))
		}
	}
	// Legend: one line per named series, top left inside the plot, on a
	// white box so that the lines under it do not cross the text.
	var names []Series
	for _, s := range c.Series {
		if s.Name != "" {
			names = append(names, s)
		}
	}
	if len(names) == 0 {
		return
	}
	widest := 0
	for _, s := range names {
		widest = max(widest, len([]rune(s.Name)))
	}
	fmt.Fprintf(b, "<rect x=\"%.1f\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"white\" fill-opacity=\"0.85\"/>\n",
		x0+4, marginTop+2, widest*legendCharWidth+12, len(names)*legendSpacing+6)
	ly := float64(marginTop) + legendSpacing
	for _, s := range names {
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">%s</text>\n", x0+10, ly, s.Color, esc(s.Name))
		ly += legendSpacing
	}
}
