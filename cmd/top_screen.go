// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/tcmprof/tcmprof/live"
	"github.com/tcmprof/tcmprof/sample"
)

// The interactive view of top is tcell's: it keeps a cell buffer of the
// screen, writes only what changed, restores the terminal (termios, the
// main screen, the cursor) in Fini, and reports resizes as events. The
// table itself is the same live.Table the batch mode prints, rendered to
// the screen's width.

// topScreen is the state of the interactive view.
type topScreen struct {
	scr    tcell.Screen
	run    *topRun
	view   live.View
	table  *live.Table // what is shown; nil before the first interval
	paused bool
	// note is the bottom line's message (what w did) until the next key.
	note string
	// deviceLog is the last line of log text from the device, shown above
	// the bottom line once there is one.
	deviceLog string
	// rate is the running run's sampling rate from its HEADERs, in Hz
	// (0 until one came), for the title.
	rate atomic.Uint64
}

// noteEvent carries a message to the screen's goroutine: a note, or a
// line of the device's log.
type noteEvent struct {
	tcell.EventTime
	text string
	log  bool
}

func newNote(text string, log bool) *noteEvent {
	ev := &noteEvent{text: text, log: log}
	ev.SetEventNow()
	return ev
}

// runTopScreen takes over the terminal, starts the run and shows it until
// q, an interrupt or the end of the stream; the terminal is restored on
// every way out, panics included.
func runTopScreen(r *topRun, s Streams, interrupt <-chan struct{}) error {
	newScreen := tcell.NewScreen
	if s.Screen != nil {
		newScreen = s.Screen
	}
	scr, err := newScreen()
	if err == nil {
		err = scr.Init()
	}
	if err != nil {
		return fmt.Errorf("cannot use the terminal (%v); -b prints plain text instead", err)
	}
	defer scr.Fini()
	ts := &topScreen{scr: scr, run: r, view: r.o.view()}
	sess := r.dev.session
	sess.OnLog = func(line string) {
		if !r.o.quiet {
			scr.PostEvent(newNote("device: "+strings.TrimRight(line, "\r\n"), true))
		}
	}
	onHeader := sess.OnHeader
	sess.OnHeader = func(h *sample.Header) {
		onHeader(h)
		if h.State == sample.StateRunning && h.IntervalTicks > 0 {
			ts.rate.Store(uint64(h.TimerHz / h.IntervalTicks))
		}
	}
	r.begin()

	events := make(chan tcell.Event, 16)
	quit := make(chan struct{})
	defer close(quit)
	go scr.ChannelEvents(events, quit)
	tick := time.NewTicker(r.o.interval)
	defer tick.Stop()
	ts.draw()
	for n := 0; ; {
		select {
		case <-interrupt:
			return nil
		case <-r.ended:
			return nil
		case now := <-tick.C:
			r.agg.Tick(now)
			if !ts.paused {
				ts.table = r.agg.Table(ts.view)
			}
			if n++; r.o.iterations > 0 && n >= r.o.iterations {
				return nil
			}
		case ev := <-events:
			switch ev := ev.(type) {
			case *tcell.EventResize:
				scr.Sync()
			case *tcell.EventKey:
				if ts.key(ev) {
					return nil
				}
			case *noteEvent:
				if ev.log {
					ts.deviceLog = ev.text
				} else {
					ts.note = ev.text
				}
			}
		}
		ts.draw()
	}
}

// key handles a key press and reports whether to quit.
func (ts *topScreen) key(ev *tcell.EventKey) (quit bool) {
	ts.note = ""
	switch {
	case ev.Key() == tcell.KeyCtrlC, ev.Key() == tcell.KeyEscape, ev.Key() == tcell.KeyRune && (ev.Rune() == 'q' || ev.Rune() == 'Q'):
		return true
	case ev.Key() != tcell.KeyRune:
		return false
	}
	switch ev.Rune() {
	case ' ':
		ts.paused = !ts.paused
	case 'c':
		ts.view.Cumulative = !ts.view.Cumulative
	case 's':
		if ts.view.Sort == live.ByShare {
			ts.view.Sort = live.ByDensity
		} else {
			ts.view.Sort = live.ByShare
		}
	case 'r':
		ts.run.agg.Reset(time.Now())
	case 'w':
		ts.note = "writing what was captured so far…"
		go func() {
			msg, err := ts.run.save()
			if err != nil {
				msg = "w: " + err.Error()
			}
			ts.scr.PostEvent(newNote(msg, false))
		}()
		return false
	default:
		return false
	}
	// A new view shows at once, from the last interval (even when paused).
	if ts.table != nil {
		ts.table = ts.run.agg.Table(ts.view)
	}
	return false
}

// draw paints the title, the table at the screen's size, and the bottom
// line.
func (ts *topScreen) draw() {
	s := ts.scr
	s.Clear()
	w, h := s.Size()
	title := tcell.StyleDefault.Reverse(true)
	heading := tcell.StyleDefault.Bold(true)
	put := func(y int, text string, style tcell.Style) {
		if y < h {
			s.PutStrStyled(0, y, fitLine(text, w), style)
		}
	}
	put(0, ts.title(), title)
	last := h - 1 // the first line the table may not use
	if ts.deviceLog != "" {
		last--
		put(last, ts.deviceLog, tcell.StyleDefault)
	}
	y := 1
	if ts.table == nil {
		put(y, fmt.Sprintf("waiting for the first %v of records…", ts.run.o.interval), tcell.StyleDefault)
	} else {
		// As many functions as fit above the bottom line.
		for _, l := range ts.table.Screen(w, last-y) {
			if y >= last {
				break
			}
			style := tcell.StyleDefault
			if l.Style == live.Heading {
				style = heading
			}
			put(y, l.Text, style)
			y++
		}
	}
	bottom := ts.note
	if bottom == "" {
		bottom = "q quit  space pause  c window/cumulative  s sort  w write  r reset"
	}
	put(h-1, bottom, title)
	s.Show()
}

// title is the top line: what runs, which figures, and the state.
func (ts *topScreen) title() string {
	what := fmt.Sprintf("last %v", ts.run.o.window)
	if ts.view.Cumulative {
		what = "since start"
	}
	t := fmt.Sprintf("tcmprof top  %s", ts.run.name)
	if hz := ts.rate.Load(); hz > 0 {
		t += fmt.Sprintf("  %g kHz", float64(hz)/1000)
	}
	t += fmt.Sprintf("  %s  sort: %s", what, ts.view.Sort)
	if ts.paused {
		t += "  [paused]"
	}
	return t
}

// fitLine pads text with spaces to width (so a styled line spans the
// screen) or cuts it there.
func fitLine(text string, width int) string {
	r := []rune(text)
	if len(r) >= width {
		return string(r[:max(width, 0)])
	}
	return text + strings.Repeat(" ", width-len(r))
}
