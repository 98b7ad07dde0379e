// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/vbauerster/cupwriter"
	"github.com/vbauerster/mpb/v8"
)

// progressLines is how often progress is written as a plain line when
// stderr is not a terminal (a log file, a pipe, CI): often enough to see
// that a run goes on, seldom enough to keep a log readable.
const progressLines = 5 * time.Second

// Columns and rows assumed on a terminal that reports 0 of them (a pty
// nobody sized, such as a serial console or some CI runners): mpb would
// otherwise draw nothing.
const (
	defaultColumns = 80
	defaultRows    = 24
)

// progress shows how a long operation goes on stderr: mpb bars when stderr
// is a terminal, else a plain line at most every progressLines (the last
// one always).
type progress struct {
	bars *mpb.Progress // nil: plain lines

	mu    sync.Mutex
	w     io.Writer
	every time.Duration
	next  time.Time // when the next plain line may be written
}

// newProgress shows progress on w, bars when tty says w is a terminal
// (Streams.ErrTTY).
func newProgress(w io.Writer, tty bool) *progress {
	p := &progress{w: w, every: progressLines}
	if tty {
		// Cursor movements whether or not w's descriptor is a terminal:
		// a test's buffer stands for one.
		p.bars = mpb.New(mpb.WithConsoleWriter(terminal{cupwriter.New(w, true)}), mpb.WithWidth(40))
	}
	return p
}

// terminal is the console the bars are drawn on: a terminal, as the
// caller said, that never reports 0 columns or rows.
type terminal struct{ *cupwriter.Writer }

func (c terminal) IsTerminal() bool { return true }

// GetTermSize is the terminal's size, or the default one where it reports
// none (a pty nobody sized) or is a test's buffer.
func (c terminal) GetTermSize() (width, height int, err error) {
	if c.Writer.IsTerminal() {
		if width, height, err = c.Writer.GetTermSize(); err == nil && width > 0 && height > 0 {
			return width, height, nil
		}
	}
	return defaultColumns, defaultRows, nil
}

// line writes a plain progress line (no bars only), at most one per
// interval unless last says it is the final one.
func (p *progress) line(last bool, format string, a ...any) {
	if p.bars != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if !last && now.Before(p.next) {
		return
	}
	p.next = now.Add(p.every)
	fmt.Fprintf(p.w, format+"\n", a...)
}

// print writes a line of text (a device's log line) above the bars, or
// as it is.
func (p *progress) print(line string) {
	if p.bars != nil {
		p.bars.Write([]byte(line))
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	io.WriteString(p.w, line)
}

// wait waits for the bars to be drawn a last time.
func (p *progress) wait() {
	if p.bars != nil {
		p.bars.Wait()
	}
}
