// SPDX-License-Identifier: Apache-2.0

package loadtest

import (
	"fmt"
	"io"
	"math"

	"github.com/tcmprof/tcmprof/internal/svgplot"
)

// palette colours the runs of one plot in order (ColorBrewer Dark2).
var palette = []string{"#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e"}

// RenderSVG draws goodput against the offered rate for each run: the mean
// over passes as a line with a marker per rate (its numbers in the
// tooltip), a band of ± 1 sd, and the line goodput = offered for
// reference. The same chart twice: a linear rate axis (the lossless rate
// and the peak) and a logarithmic one (the tail up to tens of thousands per
// second, where livelock shows). names label the runs in the legend.
func RenderSVG(w io.Writer, title string, runs []*Run, names []string) error {
	var lo, hi, top float64 = math.Inf(1), 0, 0
	for _, r := range runs {
		for _, p := range r.Summary.Curve {
			lo, hi = math.Min(lo, p.Offered), math.Max(hi, p.Offered)
			top = math.Max(top, p.Goodput+p.GoodputSD)
		}
	}
	if hi == 0 {
		return fmt.Errorf("no steps to plot")
	}
	top = math.Max(top*1.05, 1)
	var series []svgplot.Series
	for i, r := range runs {
		s := svgplot.Series{Name: names[i], Class: fmt.Sprintf("run%d", i), Color: palette[i%len(palette)], Band: true}
		for _, p := range r.Summary.Curve {
			s.Points = append(s.Points, svgplot.Point{X: p.Offered, Y: p.Goodput, Lo: p.Goodput - p.GoodputSD, Hi: p.Goodput + p.GoodputSD,
				Title: fmt.Sprintf("%s: %.0f/s offered, goodput %.1f ± %.1f/s (%d passes), loss %.2f %%", names[i], p.Offered, p.Goodput, p.GoodputSD, p.Passes, p.LossPct)})
		}
		series = append(series, s)
	}
	// goodput = offered, up to where it leaves the chart
	ideal := svgplot.Series{Name: "goodput = offered", Class: "ideal", Color: "#999", Dashed: true, NoMarkers: true,
		Points: []svgplot.Point{{X: lo, Y: lo}, {X: math.Min(hi, top), Y: math.Min(hi, top)}}}
	series = append(series, ideal)
	chart := func(log bool) *svgplot.Chart {
		c := &svgplot.Chart{
			X:      svgplot.Axis{Label: "offered rate (datagrams/s)", Min: 0, Max: hi, Log: log},
			Y:      svgplot.Axis{Label: "goodput (echoes/s)", Max: top},
			Series: series,
		}
		c.Title = "goodput, mean ± 1 sd over passes (linear rate axis)"
		if log {
			c.X.Min = lo
			c.Title = "the same, logarithmic rate axis"
		}
		return c
	}
	return svgplot.Render(w, title, chart(false), chart(true))
}
