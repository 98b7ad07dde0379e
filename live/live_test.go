// SPDX-License-Identifier: Apache-2.0

package live

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tcmprof/tcmprof/profile"
	"github.com/tcmprof/tcmprof/profile/profiletest"
	"github.com/tcmprof/tcmprof/sample"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// scene is a capture of the test firmware (profile/testdata) with samples
// in inlined code, a leaf, a library function, ITCM code, an interrupt
// and the WFI idle loop.
type scene struct {
	fw      *profiletest.Firmware
	capture *sample.Capture
	hashPC  uint32 // in mix, inlined into hash_step, inlined into hash_buf
}

func newScene(t *testing.T) *scene {
	fw := profiletest.CheckedIn(t) // the same on every machine, with or without a toolchain
	sc := &scene{fw: fw, hashPC: fw.Find(t, "hash_buf", `^eor`, 0)}
	idlePC := fw.Next(t, "idle_loop", fw.Find(t, "idle_loop", `^wfi`, 0))
	sc.capture = fw.Capture(t, sample.FieldPC|sample.FieldExc|sample.FieldThread,
		profiletest.Group{N: 400, PC: sc.hashPC, Thread: 1},
		profiletest.Group{N: 250, PC: fw.Entry(t, "leaf_add") + 4, Thread: 1},
		profiletest.Group{N: 50, PC: fw.Entry(t, "leaf_add") + 4, Exc: 24},
		profiletest.Group{N: 120, PC: fw.Entry(t, "net_checksum") + 4, Thread: 1},
		profiletest.Group{N: 80, PC: fw.Entry(t, "fast_scale") + 4, Thread: 1},
		profiletest.Group{N: 300, PC: idlePC, Thread: 2},
		profiletest.Group{N: 30, PC: fw.Entry(t, "hash_buf"), Thread: 1},
	)
	return sc
}

func (sc *scene) options() profile.Options {
	return profile.Options{Map: sc.fw.Map, Idle: profile.DefaultIdleRules()}
}

func (sc *scene) aggregator(t *testing.T, opts Options) *Aggregator {
	t.Helper()
	sites, err := profile.NewSites(sc.fw.Image, sc.options())
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAggregator(sites, profile.DefaultIdleRules(), sc.capture.Header.Fields, 0, t0, opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// feed adds records in frames of up to 100, as a session would.
func feed(a *Aggregator, recs []sample.Record) {
	for len(recs) > 0 {
		n := min(len(recs), 100)
		a.Add(recs[:n])
		recs = recs[n:]
	}
}

func rowsByName(rs []Row) map[string]Row {
	m := make(map[string]Row)
	for _, r := range rs {
		m[r.Name] = r
	}
	return m
}

// With inlined code folded in, the cumulative table is report's analysis
// of the same records: busy share, every function's samples, size and
// samples per byte, every region.
func TestTableAgreesWithReport(t *testing.T) {
	sc := newScene(t)
	a := sc.aggregator(t, Options{Interval: time.Second, Window: 5 * time.Second, Inline: true})
	feed(a, sc.capture.Records)
	a.Tick(t0.Add(2 * time.Second))
	tb := a.Table(View{Cumulative: true})

	an, err := profile.Analyze(sc.capture, sc.fw.Image, sc.options())
	if err != nil {
		t.Fatal(err)
	}
	if tb.Busy != an.Busy || tb.Samples != an.Samples {
		t.Errorf("busy %v of %d; report %v of %d", tb.Busy, tb.Samples, an.Busy, an.Samples)
	}
	if len(tb.Functions) != len(an.Functions) {
		t.Fatalf("%d functions; report has %d", len(tb.Functions), len(an.Functions))
	}
	for i, f := range an.Functions {
		got := tb.Functions[i]
		if got.Name != f.Name || got.Samples != f.Samples || got.Share != f.Share || got.Size != f.Size || got.Density != f.Density || got.Region != string(f.Region) {
			t.Errorf("function %d: %+v; report %+v", i, got, f)
		}
	}
	regions := rowsByName(tb.Regions)
	for _, g := range an.Regions {
		if r := regions[g.Name]; r.Samples != g.Samples || r.Share != g.Share {
			t.Errorf("region %s: %+v; report %+v", g.Name, r, g)
		}
	}
	if len(tb.Regions) != len(an.Regions) {
		t.Errorf("regions %+v; report %+v", tb.Regions, an.Regions)
	}
	// Contexts: the interrupt by its name, threads by id until the run's
	// thread table comes, then by name.
	ctx := rowsByName(tb.Contexts)
	if ctx["irq 8"].Samples != 50 || ctx["0x00000001"].Samples != 400+250+120+80+30 {
		t.Errorf("contexts %+v", tb.Contexts)
	}
	a.SetThreads(sc.capture.Threads)
	if ctx := rowsByName(a.Table(View{Cumulative: true}).Contexts); ctx["main"].Samples != 880 {
		t.Errorf("contexts with thread names %+v", ctx)
	}
	if tb.Rate != float64(an.Samples)/2 || tb.Span != 2*time.Second || tb.Elapsed != 2*time.Second {
		t.Errorf("rate %v over %v, elapsed %v", tb.Rate, tb.Span, tb.Elapsed)
	}
}

// Without --inline a sample counts for the innermost function of its
// inline chain, as addr2line -i names it first.
func TestInnermostFunction(t *testing.T) {
	sc := newScene(t)
	a := sc.aggregator(t, Options{Interval: time.Second, Window: time.Second})
	feed(a, sc.capture.Records)
	a.Tick(t0.Add(time.Second))
	tb := a.Table(View{})
	chain := sc.fw.Addr2line(t, sc.hashPC)
	if len(chain) < 3 {
		t.Fatalf("addr2line gives no inline chain at 0x%x: %v", sc.hashPC, chain)
	}
	innermost := strings.Fields(chain[0])[0] // "mix fw.c:14"
	fs := rowsByName(tb.Functions)
	if f, ok := fs[innermost]; !ok || f.Samples != 400 || f.Size != 0 || f.Density != 0 {
		t.Errorf("innermost %q: %+v in %+v", innermost, f, tb.Functions)
	}
	// hash_buf keeps the samples outside its inlined code, with its size.
	if f := fs["hash_buf"]; f.Samples != 30 || f.Size != sc.fw.SymbolSize(t, "hash_buf") {
		t.Errorf("hash_buf: %+v", f)
	}
	// By samples per byte, sized rows first, inlined code last.
	a.Tick(t0.Add(2 * time.Second))
	byDensity := a.Table(View{Cumulative: true, Sort: ByDensity}).Functions
	if last := byDensity[len(byDensity)-1]; last.Name != innermost {
		t.Errorf("by density, last is %+v", last)
	}
	for i := 1; i < len(byDensity)-1; i++ {
		if byDensity[i].Density > byDensity[i-1].Density {
			t.Errorf("not by density: %+v", byDensity)
		}
	}
}

// The window holds the last intervals only; the total holds everything
// since the start, until a reset.
func TestWindowAndTotal(t *testing.T) {
	sc := newScene(t)
	a := sc.aggregator(t, Options{Interval: time.Second, Window: 2 * time.Second, Inline: true})
	leaf := []sample.Record{{PC: sc.fw.Entry(t, "leaf_add") + 4, Thread: 1}}
	scale := []sample.Record{{PC: sc.fw.Entry(t, "fast_scale") + 4, Thread: 1}}
	index := uint32(0)
	add := func(recs []sample.Record, n int) {
		for range n {
			r := recs[0]
			r.Index = index
			index++
			a.Add([]sample.Record{r})
		}
	}
	add(leaf, 100)
	a.Tick(t0.Add(time.Second))
	add(leaf, 50)
	a.Tick(t0.Add(2 * time.Second))
	add(scale, 70)
	a.Tick(t0.Add(3 * time.Second))
	w := a.Table(View{})
	if fs := rowsByName(w.Functions); w.Samples != 120 || fs["leaf_add"].Samples != 50 || fs["fast_scale"].Samples != 70 || w.Span != 2*time.Second || w.Rate != 60 {
		t.Errorf("window: %d samples over %v at %v/s, %+v", w.Samples, w.Span, w.Rate, w.Functions)
	}
	c := a.Table(View{Cumulative: true})
	if fs := rowsByName(c.Functions); c.Samples != 220 || fs["leaf_add"].Samples != 150 || c.Span != 3*time.Second {
		t.Errorf("total: %d samples over %v, %+v", c.Samples, c.Span, c.Functions)
	}
	a.Reset(t0.Add(3500 * time.Millisecond))
	add(scale, 10)
	a.Tick(t0.Add(4500 * time.Millisecond))
	for _, v := range []View{{}, {Cumulative: true}} {
		tb := a.Table(v)
		if tb.Samples != 10 || len(tb.Functions) != 1 || tb.Span != time.Second || tb.Elapsed != 4500*time.Millisecond {
			t.Errorf("after reset (%+v): %d samples over %v, %+v", v, tb.Samples, tb.Span, tb.Functions)
		}
	}
}

// Gaps in the record indices are link loss; the growth of the device's
// drop counter during the run is device loss; both per window and total.
func TestLoss(t *testing.T) {
	sc := newScene(t)
	a := sc.aggregator(t, Options{Interval: time.Second, Window: time.Second})
	pc := sc.fw.Entry(t, "leaf_add") + 4
	recs := func(idx ...uint32) []sample.Record {
		var out []sample.Record
		for _, i := range idx {
			out = append(out, sample.Record{Index: i, PC: pc})
		}
		return out
	}
	// The HEADER before START reports the last run: not ours.
	a.Header(&sample.Header{State: sample.StateIdle, Dropped: 500})
	a.Header(&sample.Header{State: sample.StateRunning, Dropped: 0})
	a.Add(recs(0, 1, 2, 5, 6))
	a.Add(recs(6, 7)) // 6 twice
	a.Header(&sample.Header{State: sample.StateRunning, Dropped: 40})
	a.Tick(t0.Add(time.Second))
	a.Add(recs(8, 20))
	a.Header(&sample.Header{State: sample.StateRunning, Dropped: 45})
	a.Tick(t0.Add(2 * time.Second))
	if w := a.Table(View{}); w.Loss != (Loss{Device: 5, Link: 11}) || w.Samples != 2 {
		t.Errorf("window: loss %+v, %d samples", w.Loss, w.Samples)
	}
	if c := a.Table(View{Cumulative: true}); c.Loss != (Loss{Device: 45, Link: 13}) || c.Samples != 8 {
		t.Errorf("total: loss %+v, %d samples", c.Loss, c.Samples)
	}
}

// Rendering: the numbers survive every width; names are cut, and narrow
// screens drop the least important columns first.
func TestLinesNarrow(t *testing.T) {
	sc := newScene(t)
	a := sc.aggregator(t, Options{Interval: time.Second, Window: time.Second, Inline: true})
	feed(a, sc.capture.Records)
	a.Tick(t0.Add(time.Second))
	tb := a.Table(View{})
	wide := tb.Lines(0, 0)
	if all := strings.Join(texts(wide), "\n"); !strings.Contains(all, "net_checksum") || !strings.Contains(all, "95 % interval") {
		t.Errorf("unlimited width:\n%s", all)
	}
	for _, width := range []int{200, 80, 60, 40, 25, 10} {
		lines := tb.Lines(width, 3)
		var heading string
		var rows []string
		for i, l := range lines {
			if n := len([]rune(l.Text)); n > width {
				t.Errorf("width %d: line %q is %d wide", width, l.Text, n)
			}
			if l.Style == Heading {
				heading, rows = l.Text, texts(lines[i+1:])
			}
		}
		// The top function (hash_buf, 430 of 930 busy samples) keeps its
		// share whatever the width.
		if len(rows) != 3 || !strings.HasPrefix(strings.TrimSpace(rows[0]), "46.2 %") {
			t.Errorf("width %d: rows %q (heading %q)", width, rows, heading)
		}
		// Above the table, narrow widths wrap rather than cut.
		all := strings.Join(texts(lines), "\n")
		for _, want := range []string{"busy 75.6 % (73.1–77.9 %)", "1230 samples/s", "device dropped 0", "link lost 0", "flash 91.4 %", "irq 8 5.4 %"} {
			if width >= 25 && !strings.Contains(all, want) { // 25: the widest item, the busy share
				t.Errorf("width %d: no %q in\n%s", width, want, all)
			}
		}
		if width >= 80 && !strings.Contains(rows[0], "hash_buf") {
			t.Errorf("width %d: name cut in %q", width, rows[0])
		}
		if width == 60 && (strings.Contains(heading, "95 % interval") || !strings.Contains(heading, "samples")) {
			t.Errorf("width %d: heading %q should drop the interval first", width, heading)
		}
	}
}

func texts(ls []Line) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Text)
	}
	return out
}

// On a small terminal (40×15: 13 lines between the title and the key
// line) the figures above the table give way, so that function rows
// still show: the region and context lines are cut to one line each, then
// left out; a tall screen shows them whole.
func TestScreenKeepsFunctionRows(t *testing.T) {
	sc := newScene(t)
	a := sc.aggregator(t, Options{Interval: time.Second, Window: time.Second, Inline: true})
	feed(a, sc.capture.Records)
	a.Tick(t0.Add(time.Second))
	tb := a.Table(View{})
	for _, size := range []struct{ width, height, rows int }{{40, 13, 3}, {40, 9, 3}, {25, 13, 3}, {80, 40, len(tb.Functions)}} {
		lines := tb.Screen(size.width, size.height)
		if len(lines) > size.height {
			t.Errorf("%dx%d: %d lines", size.width, size.height, len(lines))
		}
		rows := -1
		for i, l := range lines {
			if n := len([]rune(l.Text)); n > size.width {
				t.Errorf("%dx%d: line %q is %d wide", size.width, size.height, l.Text, n)
			}
			if l.Style == Heading {
				rows = len(lines) - i - 1
			}
		}
		if rows < size.rows || !strings.Contains(strings.Join(texts(lines), "\n"), "46.2 %") {
			t.Errorf("%dx%d: %d function rows, want %d or more:\n%s", size.width, size.height, rows, size.rows, strings.Join(texts(lines), "\n"))
		}
	}
	// Tall enough, nothing is cut: the screen is the batch output's lines.
	if got, want := texts(tb.Screen(200, 100)), texts(tb.Lines(200, 0)); !slices.Equal(got, want) {
		t.Errorf("a tall screen:\n%s\nwant the table's lines:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
