// SPDX-License-Identifier: Apache-2.0

package live

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tcmprof/tcmprof/internal/wording"
	"github.com/tcmprof/tcmprof/profile"
)

// Style says how a screen shows a line; plain text ignores it.
type Style int

const (
	Plain   Style = iota
	Heading       // column titles
)

// Line is one line of a rendered table.
type Line struct {
	Text  string
	Style Style
}

// minName is the narrowest function name column worth keeping columns for:
// below it the least important columns go first.
const minName = 16

// Lines renders t as lines at most width columns wide (0: no limit) with
// at most maxFunctions function rows (0: all). The batch output and the
// interactive screen both show these lines. A narrow width wraps the
// figures above the table onto more lines, truncates function names and
// drops the least important columns; it never cuts a number it shows.
func (t *Table) Lines(width, maxFunctions int) []Line {
	return append(t.figures(width, groupsWrapped), t.functionLines(width, maxFunctions)...)
}

// groupLines is how the figures show the busy share per region and
// context: wrapped over as many lines as they need, cut to one line each,
// or not at all.
type groupLines int

const (
	groupsWrapped groupLines = iota
	groupsCut
	groupsLeftOut
)

// minScreenRows is the fewest function rows Screen keeps room for: the
// functions are what the view is for.
const minScreenRows = 3

// Screen renders t for a screen width columns wide and height lines high
// (the interactive view): Lines with as many function rows as fit. When
// the figures above the table would leave room for fewer than
// minScreenRows rows (a small terminal, many threads and interrupts), the
// region and context lines are cut to one line each, then left out, and
// then the blank line before the table.
func (t *Table) Screen(width, height int) []Line {
	fits := func(figures []Line) bool { return len(figures)+1+min(minScreenRows, len(t.Functions)) <= height }
	var figures []Line
	for _, g := range []groupLines{groupsWrapped, groupsCut, groupsLeftOut} {
		if figures = t.figures(width, g); fits(figures) {
			break
		}
	}
	if !fits(figures) {
		figures = figures[:len(figures)-1]
	}
	rows := max(height-len(figures)-1, 0) // below the heading
	if rows == 0 {
		return figures[:min(len(figures), max(height, 0))]
	}
	return append(figures, t.functionLines(width, rows)...)
}

// figures are the lines above the function table, the blank line that
// ends them included.
func (t *Table) figures(width int, groups groupLines) []Line {
	var out []Line
	add := func(indent string, items ...string) {
		for _, l := range wrap(items, width, indent) {
			out = append(out, Line{Text: l})
		}
	}
	add("", "busy "+t.Busy.String(), fmt.Sprintf("%.0f samples/s", t.Rate),
		fmt.Sprintf("device dropped %d", t.Loss.Device), fmt.Sprintf("link lost %d", t.Loss.Link))
	span := "window"
	if t.Cumulative {
		span = "since start"
	}
	add("", fmt.Sprintf("%s %s: %d samples", span, seconds(t.Span), t.Samples),
		fmt.Sprintf("%d functions busy", len(t.Functions)), "running "+seconds(t.Elapsed))
	const indent = "          " // under the first group
	addGroup := func(items ...string) {
		switch groups {
		case groupsWrapped:
			add(indent, items...)
		case groupsCut:
			out = append(out, Line{Text: cut(wrap(items, 0, "")[0], width)})
		}
	}
	addGroup(append([]string{"region "}, groupItems(t.Regions)...)...)
	if t.Contexts != nil {
		addGroup(append([]string{"context"}, groupItems(t.Contexts)...)...)
	}
	return append(out, Line{})
}

// wrap joins items with three spaces into lines of at most width runes,
// starting a new line (with indent) before an item that does not fit; an
// item longer than a line is cut.
func wrap(items []string, width int, indent string) []string {
	var lines []string
	cur := ""
	for i, it := range items {
		switch {
		case i == 0:
			cur = it
		case width > 0 && utf8.RuneCountInString(cur)+3+utf8.RuneCountInString(it) > width:
			lines = append(lines, cut(cur, width))
			cur = indent + it
		default:
			cur += "   " + it
		}
	}
	return append(lines, cut(cur, width))
}

func seconds(d time.Duration) string {
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// groupItems names each row with its share: "flash 98.2 %".
func groupItems(rs []Row) []string {
	if len(rs) == 0 {
		return []string{"-"}
	}
	items := make([]string, len(rs))
	for i, r := range rs {
		items[i] = fmt.Sprintf("%s %s", r.Name, wording.Percent(r.Share.Fraction()))
	}
	return items
}

// column is one column of the function table before the name.
type column struct {
	title string
	left  bool // left-aligned (text); numbers are right-aligned
	// drop orders the columns a narrow screen gives up, lowest first;
	// share has none and always stays.
	drop  int
	value func(r *Row) string
}

func (t *Table) columns() []column {
	density := 2
	if t.Sort == ByDensity {
		density = 5 // the sort key stays longest
	}
	return []column{
		{title: "share", drop: 0, value: func(r *Row) string { return wording.Percent(r.Share.Fraction()) }},
		{title: wording.IntervalHeading, drop: 1, value: func(r *Row) string { return wording.Interval(r.Share.Lo, r.Share.Hi) }},
		{title: "samples", drop: 4, value: func(r *Row) string { return fmt.Sprint(r.Samples) }},
		{title: "size", drop: 3, value: func(r *Row) string { return orDash(r.Size > 0, fmt.Sprint(r.Size)) }},
		{title: "samples/B", drop: density, value: func(r *Row) string { return orDash(r.Size > 0, fmt.Sprintf("%.3f", r.Density)) }},
		{title: "region", left: true, drop: 3, value: func(r *Row) string { return r.Region }},
	}
}

func orDash(ok bool, s string) string {
	if !ok {
		return "-"
	}
	return s
}

// functionLines is the function table: a heading and one line per row.
func (t *Table) functionLines(width, maxFunctions int) []Line {
	fs := t.Functions
	if maxFunctions > 0 && len(fs) > maxFunctions {
		fs = fs[:maxFunctions]
	}
	title := fmt.Sprintf("innermost function, by %s", t.Sort)
	if t.Inline {
		title = fmt.Sprintf("function, by %s", t.Sort)
	}
	cols := t.columns()
	cells := make([][]string, len(cols))
	widths := make([]int, len(cols))
	for i, c := range cols {
		widths[i] = utf8.RuneCountInString(c.title)
		cells[i] = make([]string, len(fs))
		for j := range fs {
			cells[i][j] = c.value(&fs[j])
			widths[i] = max(widths[i], utf8.RuneCountInString(cells[i][j]))
		}
	}
	keep := make([]bool, len(cols))
	for i := range keep {
		keep[i] = true
	}
	nameWidth := 0 // no limit
	if width > 0 {
		for {
			used := 0
			for i := range cols {
				if keep[i] {
					used += widths[i] + 2
				}
			}
			nameWidth = width - used
			if nameWidth >= minName {
				break
			}
			drop := -1
			for i, c := range cols {
				if keep[i] && c.drop > 0 && (drop < 0 || c.drop < cols[drop].drop) {
					drop = i
				}
			}
			if drop < 0 {
				nameWidth = max(nameWidth, 1)
				break
			}
			keep[drop] = false
		}
	}
	line := func(cell func(i int) string, name string) string {
		var b strings.Builder
		for i, c := range cols {
			if !keep[i] {
				continue
			}
			s := cell(i)
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(s))
			if c.left {
				b.WriteString(s + pad)
			} else {
				b.WriteString(pad + s)
			}
			b.WriteString("  ")
		}
		if nameWidth > 0 {
			name = cut(name, nameWidth)
		}
		b.WriteString(name)
		return cut(b.String(), width)
	}
	out := []Line{{Text: line(func(i int) string { return cols[i].title }, title), Style: Heading}}
	for j := range fs {
		out = append(out, Line{Text: line(func(i int) string { return cells[i][j] }, fs[j].Name)})
	}
	return out
}

// cut shortens s to width runes, ending it with "…" when it was longer;
// width 0 means no limit.
func cut(s string, width int) string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width-1]) + "…"
}

// WriteText writes t as one block of plain text, as the batch mode prints
// every interval: a rule with the time, the table's lines with at most top
// functions (0: all), and a blank line.
func WriteText(w io.Writer, t *Table, top int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s\n", seconds(t.Elapsed))
	for _, l := range t.Lines(0, top) {
		b.WriteString(strings.TrimRight(l.Text, " ") + "\n")
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes t as one JSON object on one line, with at most top
// functions (0: all).
func WriteJSON(w io.Writer, t *Table, top int) error {
	fs := t.Functions
	if top > 0 && len(fs) > top {
		fs = fs[:top]
	}
	mode := "window"
	if t.Cumulative {
		mode = "cumulative"
	}
	doc := struct {
		Elapsed   float64       `json:"elapsed_s"`
		Mode      string        `json:"mode"`
		Span      float64       `json:"span_s"`
		Samples   int           `json:"samples"`
		Rate      float64       `json:"samples_per_s"`
		Busy      profile.Share `json:"busy"`
		Lost      Loss          `json:"lost"`
		Inline    bool          `json:"inline"`
		Sort      string        `json:"sort"`
		Regions   []Row         `json:"regions"`
		Contexts  []Row         `json:"contexts,omitempty"`
		Functions []Row         `json:"functions"`
		Total     int           `json:"functions_total"`
	}{
		Elapsed: t.Elapsed.Seconds(), Mode: mode, Span: t.Span.Seconds(), Samples: t.Samples, Rate: t.Rate,
		Busy: t.Busy, Lost: t.Loss, Inline: t.Inline, Sort: t.Sort.String(),
		Regions: t.Regions, Contexts: t.Contexts, Functions: fs, Total: len(t.Functions),
	}
	if doc.Regions == nil {
		doc.Regions = []Row{}
	}
	if doc.Functions == nil {
		doc.Functions = []Row{}
	}
	return json.NewEncoder(w).Encode(doc)
}
