// SPDX-License-Identifier: Apache-2.0

package svgplot

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestTicks(t *testing.T) {
	if got, want := LinearTicks(0, 2500, 6), []float64{0, 500, 1000, 1500, 2000, 2500}; !slices.Equal(got, want) {
		t.Errorf("LinearTicks(0, 2500) = %v, want %v", got, want)
	}
	if got, want := logTicks(100, 3000), []float64{100, 200, 500, 1000, 2000}; !slices.Equal(got, want) {
		t.Errorf("logTicks(100, 3000) = %v, want %v", got, want)
	}
	if got, want := logTicks(10, 50000), []float64{10, 100, 1000, 10000}; !slices.Equal(got, want) {
		t.Errorf("logTicks(10, 50000) = %v, want %v", got, want)
	}
	for v, want := range map[float64]string{950: "950", 1500: "1500", 20000: "20k", 12500: "12.5k", 1.5e6: "1.5M"} {
		if got := Compact(v); got != want {
			t.Errorf("Compact(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestXY: a log axis puts each decade at the same distance, a linear axis
// each equal step; values off the axis are clamped to its ends.
func TestXY(t *testing.T) {
	c := &Chart{X: Axis{Min: 10, Max: 10000, Log: true}, Y: Axis{Min: 0, Max: 100}}
	x10, y0 := c.XY(10, 0)
	x100, y50 := c.XY(100, 50)
	x1000, y100 := c.XY(1000, 100)
	if math.Abs((x100-x10)-(x1000-x100)) > 1e-9 || x10 != marginLeft || y0 != marginTop+plotHeight || y100 != marginTop || y50 != marginTop+plotHeight/2 {
		t.Errorf("XY: x %v %v %v, y %v %v %v", x10, x100, x1000, y0, y50, y100)
	}
	if x, y := c.XY(0, 200); x != marginLeft || y != marginTop {
		t.Errorf("XY(0, 200) = %v, %v: not clamped", x, y)
	}
}

// TestRender: two panels in one well-formed document, a band path per
// banded series, one circle per point carrying its title, escaped text.
func TestRender(t *testing.T) {
	c := &Chart{Title: "a < b", X: Axis{Label: "x", Min: 1, Max: 100, Log: true}, Y: Axis{Label: "y", Max: 10},
		Series: []Series{{Name: "s & t", Class: "s", Color: "red", Band: true, Points: []Point{{X: 1, Y: 1, Lo: 0, Hi: 2, Title: "one"}, {X: 100, Y: 5, Lo: 4, Hi: 6, Title: "two"}}},
			{Class: "ref", Color: "gray", Dashed: true, NoMarkers: true, Points: []Point{{X: 1, Y: 1}, {X: 100, Y: 100}}}}}
	var buf bytes.Buffer
	if err := Render(&buf, "doc", c, c); err != nil {
		t.Fatal(err)
	}
	var circles, bands, groups int
	var titles []string
	dec := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, buf.String())
		}
		if se, ok := tok.(xml.StartElement); ok {
			switch se.Name.Local {
			case "circle":
				circles++
			case "g":
				groups++
			case "path":
				for _, a := range se.Attr {
					if a.Name.Local == "class" && a.Value == "s band" {
						bands++
					}
				}
			}
		}
		if cd, ok := tok.(xml.CharData); ok {
			titles = append(titles, string(cd))
		}
	}
	if circles != 4 || bands != 2 || groups != 2 {
		t.Errorf("%d circles, %d bands, %d panels; want 4, 2, 2", circles, bands, groups)
	}
	text := strings.Join(titles, "|")
	for _, want := range []string{"a < b", "s & t", "one", "two"} {
		if !strings.Contains(text, want) {
			t.Errorf("text %q lacks %q", text, want)
		}
	}
}
