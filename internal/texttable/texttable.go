// SPDX-License-Identifier: Apache-2.0

// Package texttable writes the text of report, rank and plan within a
// terminal's 80 columns: tables of right-aligned figures with the name
// last, cut in the middle ("net_if_ip…_src_addr") only when the line would
// run past the width and never so that two names read the same; and
// sentences wrapped between phrases. Width 0 (the commands' --wide) writes
// every name whole and every sentence on one line. Widths count runes,
// as text/tabwriter does: every character tcmprof prints is one column.
package texttable

import (
	"io"
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// Width is the terminal width the text fits: the classic 80 columns.
const Width = 80

// Limit is the width of a command's text: Width, or none (0) for --wide.
func Limit(wide bool) int {
	if wide {
		return 0
	}
	return Width
}

// minName is the narrowest name column: narrower, a name is cut to little
// more than its ends, and the line runs past the width instead.
const minName = 12

// ellipsis marks where a name was cut.
const ellipsis = "…"

// Table is a table of figures with a name last. The figure columns are
// right-aligned, as numbers are; the name is left-aligned after them.
type Table struct {
	indent string
	titles []string // the figure columns', then the name column's
	rows   []row
}

type row struct {
	section bool // a line of text of its own (name), not a row of figures
	cells   []string
	// name is cut to fit; lead, its indentation under the row or line
	// before, never is.
	lead, name string
}

// New starts a table whose lines begin with indent, with the titles of its
// columns: the figures' and, last, the name's.
func New(indent string, titles ...string) *Table {
	return &Table{indent: indent, titles: titles}
}

// Row adds a row: its figures (one per figure column) and its name.
func (t *Table) Row(name string, cells ...string) {
	t.rows = append(t.rows, row{cells: cells, name: name})
}

// RowUnder adds a row whose name is indented under the row or section
// before it: a caller under its callee.
func (t *Table) RowUnder(name string, cells ...string) {
	t.rows = append(t.rows, row{cells: cells, lead: "  ", name: name})
}

// Section adds a line of text between rows, such as the reason shared by
// the rows after it; it is wrapped, not cut.
func (t *Table) Section(text string) { t.rows = append(t.rows, row{section: true, name: text}) }

// Write writes the table with lines at most width runes wide (0: no
// limit): the names are cut to the room the figures leave them.
func (t *Table) Write(w io.Writer, width int) error {
	figures := len(t.titles) - 1
	widths := make([]int, figures)
	for i := range widths {
		widths[i] = utf8.RuneCountInString(t.titles[i])
		for _, r := range t.rows {
			if !r.section {
				widths[i] = max(widths[i], utf8.RuneCountInString(r.cells[i]))
			}
		}
	}
	room := 0 // no limit
	if width > 0 {
		room = width - utf8.RuneCountInString(t.indent)
		for _, wd := range widths {
			room -= wd + 2
		}
		room = max(room, minName)
	}
	names := make([]string, len(t.rows))
	budgets := make([]int, len(t.rows))
	for i, r := range t.rows {
		names[i] = r.name
		if room > 0 && !r.section {
			budgets[i] = max(room-utf8.RuneCountInString(r.lead), minName)
		}
	}
	names = shorten(names, budgets)
	var b strings.Builder
	line := func(cells []string, name string) {
		b.WriteString(t.indent)
		for _, c := range cells {
			b.WriteString(c + "  ")
		}
		b.WriteString(strings.TrimRight(name, " "))
		b.WriteString("\n")
	}
	// Right-aligned by runes: fmt's %*s would pad by bytes.
	pad := func(cells []string) []string {
		out := make([]string, len(cells))
		for i, c := range cells {
			out[i] = strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)) + c
		}
		return out
	}
	line(pad(t.titles[:figures]), t.titles[figures])
	for i, r := range t.rows {
		if r.section {
			b.WriteString(Wrap(width, t.indent+"  ", t.indent+r.name))
			continue
		}
		line(pad(r.cells), r.lead+names[i])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// shorten cuts each name longer than its budget (in runes; 0: no limit)
// in the middle, keeping its start and end around an ellipsis, and keeps
// the names apart: a cut is taken only if no other name begins and ends as
// it does, the even cut first, then those keeping more of the start. A
// name no cut within its budget tells apart is left whole.
func shorten(names []string, budgets []int) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n
		r := []rune(n)
		if budgets[i] <= 0 || len(r) <= budgets[i] {
			continue
		}
		keep := budgets[i] - 1
		for _, head := range append([]int{(keep + 1) / 2}, seq(1, keep-1)...) {
			start, end := string(r[:head]), string(r[len(r)-(keep-head):])
			if !slices.ContainsFunc(names, func(m string) bool {
				return m != n && len(m) >= len(start)+len(end) && strings.HasPrefix(m, start) && strings.HasSuffix(m, end)
			}) {
				out[i] = start + ellipsis + end
				break
			}
		}
	}
	return out
}

func seq(from, to int) []int {
	var s []int
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// Disambiguate names each row by names[i], followed, when the same name
// belongs to rows of different sources (two static functions "validate"
// in eth.c and udp.c), by as much of the end of its source path as tells
// it apart: "validate (eth.c)", "init (net/if.c)".
func Disambiguate(names, sources []string) []string {
	bySource := make(map[string]map[string]bool)
	for i, n := range names {
		if bySource[n] == nil {
			bySource[n] = make(map[string]bool)
		}
		bySource[n][sources[i]] = true
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n
		if len(bySource[n]) < 2 || sources[i] == "" {
			continue
		}
		parts := strings.Split(path.Clean(sources[i]), "/")
		for k := 1; k <= len(parts); k++ {
			tail := strings.Join(parts[len(parts)-k:], "/")
			if k == len(parts) || uniqueTail(tail, sources[i], bySource[n]) {
				out[i] = n + " (" + tail + ")"
				break
			}
		}
	}
	return out
}

// uniqueTail reports whether no source but own ends in tail.
func uniqueTail(tail, own string, sources map[string]bool) bool {
	for s := range sources {
		if s != own && (s == tail || strings.HasSuffix(s, "/"+tail)) {
			return false
		}
	}
	return true
}

// Phrases splits a sentence at sep ("; ", ", ") into phrases for Wrap,
// each but the last keeping sep's mark: "a; b" → "a;", "b".
func Phrases(s, sep string) []string {
	parts := strings.Split(s, sep)
	for i := range parts[:len(parts)-1] {
		parts[i] += strings.TrimRight(sep, " ")
	}
	return parts
}

// Wrap writes phrases as one sentence in lines at most width runes wide
// (0: one line), joined by spaces and broken between phrases; a phrase
// wider than a line is broken between its words, and a word wider than a
// line (a long path) is cut in the middle. Lines after the first begin
// with indent; the first keeps the spaces its first phrase begins with.
func Wrap(width int, indent string, phrases ...string) string {
	var b strings.Builder
	var words []string
	for i, p := range phrases {
		if i == 0 { // its leading spaces stay, before the first word
			trimmed := strings.TrimLeft(p, " ")
			b.WriteString(p[:len(p)-len(trimmed)])
			p = trimmed
		}
		if width > 0 && utf8.RuneCountInString(indent+p) > width {
			for _, wd := range strings.Fields(p) {
				words = append(words, shorten([]string{wd}, []int{width - utf8.RuneCountInString(indent)})[0])
			}
		} else {
			words = append(words, p)
		}
	}
	n := utf8.RuneCountInString(b.String()) // runes on the current line
	for i, wd := range words {
		wn := utf8.RuneCountInString(wd)
		switch {
		case i == 0:
		case width > 0 && n+1+wn > width:
			b.WriteString("\n" + indent)
			n = utf8.RuneCountInString(indent)
		default:
			b.WriteString(" ")
			n++
		}
		b.WriteString(wd)
		n += wn
	}
	return b.String() + "\n"
}
