// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/spf13/cobra"
	"github.com/tcmprof/tcmprof/elf"
	"github.com/tcmprof/tcmprof/elf/dwarfline"
)

type symbolizeOptions struct {
	addrs      []uint32 // from the arguments; none: read standard input
	elf        string
	json       bool
	noDemangle bool
}

func newSymbolizeCmd(s Streams, runF func(*symbolizeOptions, Streams) error) *cobra.Command {
	o := &symbolizeOptions{}
	c := &cobra.Command{
		Use:   "symbolize --elf FILE [--json] [--no-demangle] [ADDR...]",
		Short: "Print the function and file:line (inline frames) of addresses",
		Long: `symbolize maps each address to its inline chain, innermost frame first, like
llvm-symbolizer: for each frame the function, then file:line:column, and a
blank line after each address ("??" when nothing is known). Addresses come
from the arguments or, if there are none, from standard input, one per line,
in hex with or without 0x; the Thumb bit is ignored. --json prints one object
per address per line instead.

A line of standard input that is no address is answered "??" (in JSON, with
an "error") and the input goes on; at its end the command says how many
lines were not addresses and exits 1. A bad argument is refused before any
address is answered.`,
		Example: `  tcmprof symbolize --elf zephyr.elf 0x60001234 60001a3c
  tcmprof symbolize --elf zephyr.elf --json < pcs.txt`,
		RunE: func(c *cobra.Command, args []string) error {
			// All are checked before any is answered.
			o.addrs = make([]uint32, len(args))
			for i, a := range args {
				var err error
				if o.addrs[i], err = parseAddr([]byte(a)); err != nil {
					return err
				}
			}
			return runCommand(o, s, runF, runSymbolize)
		},
	}
	c.Flags().StringVar(&o.elf, "elf", "", "firmware ELF with symbols (and DWARF for file:line)")
	c.Flags().BoolVar(&o.json, "json", false, `one JSON object per address: {"address","frames":[{"function","file","line"}]}`)
	c.Flags().BoolVar(&o.noDemangle, "no-demangle", false, "print C++ linkage names as they are in the ELF")
	_ = c.MarkFlagRequired("elf")
	return c
}

func runSymbolize(o *symbolizeOptions, s Streams) error {
	im, err := elf.Open(o.elf)
	if err != nil {
		return err
	}
	// Warnings about the whole image come first; those about a compile
	// unit's DWARF come once the addresses have decoded it.
	warned := printImageWarnings(s.Err, o.elf, im, 0)
	out := bufio.NewWriterSize(s.Out, 64<<10)
	p := newSymbolPrinter(out, o.json, o.noDemangle)
	err = symbolizeAll(im, p, s.In, o.addrs)
	// What was answered before a bad address is still printed.
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	printImageWarnings(s.Err, o.elf, im, warned)
	return err
}

func symbolizeAll(im *elf.Image, p *symbolPrinter, stdin io.Reader, addrs []uint32) error {
	if len(addrs) > 0 {
		p.answerAll(im, addrs)
		return nil
	}
	// Stream standard input in batches: take every line already buffered
	// (at least one), answer them (on all cores) and flush before waiting
	// for more, so that an interactive or pipelined caller gets its
	// answers without waiting for EOF, and a file of addresses is decoded
	// and rendered in parallel.
	//
	// A line that is no address is answered "??", as one with an address
	// nothing is known of, and the input goes on: one bad line in a pipe
	// of 200,000 addresses must not lose the rest. The error that ends the
	// command says how many there were.
	in := bufio.NewReaderSize(stdin, 64<<10)
	var batch []uint32
	var bad badLines
	answered := 0 // lines with an address or something else
	for lineNo := 0; ; {
		batch = batch[:0]
		var stop error // what ends the input after this batch: io.EOF, a read error
		for stop == nil {
			lineNo++
			line, err := in.ReadSlice('\n')
			var badErr error
			if err == bufio.ErrBufferFull {
				for err == bufio.ErrBufferFull { // the rest of the line
					_, err = in.ReadSlice('\n')
				}
				line, badErr = nil, fmt.Errorf("stdin line %d: longer than %d bytes", lineNo, in.Size())
				answered++
			}
			if tok := bytes.TrimSpace(line); len(tok) > 0 {
				answered++
				addr, perr := parseAddr(tok)
				if perr == nil {
					batch = append(batch, addr)
				} else {
					badErr = fmt.Errorf("stdin line %d: %w", lineNo, perr)
				}
			}
			if badErr != nil {
				// The answers stay in the order of the lines.
				p.answerAll(im, batch)
				batch = batch[:0]
				p.answerBad(line, badErr)
				bad.add(badErr)
			}
			if stop = err; in.Buffered() == 0 || len(batch) == maxBatch {
				break
			}
		}
		p.answerAll(im, batch)
		if stop == io.EOF {
			return bad.err(answered)
		}
		if stop != nil {
			return stop
		}
		if err := p.out.Flush(); err != nil {
			return err
		}
	}
}

// badLines counts the lines of standard input that were no address.
type badLines struct {
	n     int
	first error
}

func (b *badLines) add(err error) {
	if b.n == 0 {
		b.first = err
	}
	b.n++
}

// err is the one line that ends a run with bad lines, nil without.
func (b *badLines) err(lines int) error {
	if b.n == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d lines of standard input were answered ?? for not being an address; the first: %w", b.n, lines, b.first)
}

// printImageWarnings prints the image's warnings after the first done already
// printed and returns how many it has printed in all.
func printImageWarnings(w io.Writer, path string, im *elf.Image, done int) int {
	ws := im.Warnings()
	for _, msg := range ws[min(done, len(ws)):] {
		fmt.Fprintf(w, "tcmprof: warning: %s: %s\n", path, msg)
	}
	return len(ws)
}

// parseAddr reads a 32-bit hex address, with or without 0x.
func parseAddr(tok []byte) (uint32, error) {
	digits := tok
	if len(digits) > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X') {
		digits = digits[2:]
	}
	if len(digits) == 0 {
		return 0, fmt.Errorf("bad address %q: want hex, e.g. 0x60001234", tok)
	}
	var v uint64
	for _, c := range digits {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, fmt.Errorf("bad address %q: want hex, e.g. 0x60001234", tok)
		}
		if v = v<<4 | uint64(d); v > math.MaxUint32 {
			return 0, fmt.Errorf("address %q is wider than 32 bits", tok)
		}
	}
	return uint32(v), nil
}

// maxBatch bounds how many addresses of standard input are read before
// they are answered (a file of addresses comes all buffered). A batch's
// answers are rendered in memory, about 100 bytes each, before they are
// written, in buffers reused batch after batch: fresh memory costs a page
// fault per 4 KB, and a fault costs more than rendering 40 answers.
const maxBatch = 1 << 13

// pieceAddrs is how many addresses of a batch a core takes at a time:
// small, so that the cores finish a batch together even when the first
// address of a compile unit stops one to decode the unit.
const pieceAddrs = 512

// symbolPrinter writes frames in llvm-symbolizer's default shape or as
// JSON lines.
type symbolPrinter struct {
	out *bufio.Writer
	// workers render a batch's pieces in parallel, one per core.
	workers []*answerWorker
	// A batch is answered in the order of its addresses, keys (address
	// << 32 | position in the batch, sorted), so that lookups walk each
	// unit's tables in order rather than jumping over megabytes of them
	// (at random addresses, cache and TLB misses were most of a lookup),
	// and an address repeated in the batch is looked up once. pieces hold
	// the answers to each piece of keys, and answers where the answer to
	// each address of the batch is.
	keys    []uint64
	pieces  [][]byte
	answers []answerRef
}

// answerRef is where an answer is: pieces[piece][off:off+n].
type answerRef struct{ piece, off, n uint32 }

// answerWorker renders the pieces of a batch it takes.
type answerWorker struct {
	json, noDemangle bool
	// quoted caches each function and file name as a JSON string.
	quoted map[string][]byte
	frames []dwarfline.Frame
}

func newSymbolPrinter(out *bufio.Writer, json, noDemangle bool) *symbolPrinter {
	p := &symbolPrinter{out: out}
	for range runtime.GOMAXPROCS(0) {
		p.workers = append(p.workers, &answerWorker{json: json, noDemangle: noDemangle, quoted: map[string][]byte{}})
	}
	return p
}

// answerAll writes the answers to addrs in order. Pieces of addrs, in
// address order, are symbolized (decoding the DWARF they need) and
// rendered on all cores, then written in the order of addrs.
func (p *symbolPrinter) answerAll(im *elf.Image, addrs []uint32) {
	p.keys = p.keys[:0]
	for i, a := range addrs {
		p.keys = append(p.keys, uint64(a)<<32|uint64(i))
	}
	slices.Sort(p.keys)
	p.answers = slices.Grow(p.answers[:0], len(addrs))[:len(addrs)]
	n := (len(addrs) + pieceAddrs - 1) / pieceAddrs
	for len(p.pieces) < n {
		p.pieces = append(p.pieces, nil)
	}
	var next atomic.Int64
	take := func(w *answerWorker) {
		for k := int(next.Add(1) - 1); k < n; k = int(next.Add(1) - 1) {
			p.pieces[k] = w.answer(p, im, k, p.keys[k*pieceAddrs:min(len(addrs), (k+1)*pieceAddrs)])
		}
	}
	// The calling goroutine takes pieces too: a lone piece wakes no
	// thread, which costs most on a busy machine.
	var wg sync.WaitGroup
	for _, w := range p.workers[1:max(1, min(len(p.workers), n))] {
		wg.Go(func() { take(w) })
	}
	take(p.workers[0])
	wg.Wait()
	for _, r := range p.answers {
		p.out.Write(p.pieces[r.piece][r.off : r.off+r.n])
	}
}

// answer renders the answers to piece k of the batch's keys into that
// piece's buffer, which it returns, and notes where each is.
func (w *answerWorker) answer(p *symbolPrinter, im *elf.Image, k int, keys []uint64) []byte {
	b := p.pieces[k][:0]
	var r answerRef
	for j, key := range keys {
		addr := uint32(key >> 32)
		if j == 0 || addr != uint32(keys[j-1]>>32) {
			w.frames = im.AppendFrames(w.frames[:0], addr)
			off := len(b)
			b = w.render(b, addr, w.frames)
			r = answerRef{piece: uint32(k), off: uint32(off), n: uint32(len(b) - off)}
		}
		p.answers[uint32(key)] = r
	}
	return b
}

// answerBad writes the answer to a line that is no address: "??" as for
// an unknown address, or in JSON the line and why.
func (p *symbolPrinter) answerBad(line []byte, why error) {
	if !p.workers[0].json {
		p.out.WriteString("??\n??:0:0\n\n")
		return
	}
	b, _ := json.Marshal(struct {
		Address string     `json:"address"`
		Error   string     `json:"error"`
		Frames  []struct{} `json:"frames"`
	}{string(bytes.TrimSpace(line)), why.Error(), []struct{}{}})
	p.out.Write(append(b, '\n'))
}

func (w *answerWorker) name(f dwarfline.Frame) string {
	if w.noDemangle && f.Mangled != "" {
		return f.Mangled
	}
	return f.Function
}

func (w *answerWorker) render(b []byte, addr uint32, frames []dwarfline.Frame) []byte {
	if w.json {
		b = append(b, `{"address":"0x`...)
		b = strconv.AppendUint(b, uint64(addr), 16)
		b = append(b, `","frames":[`...)
		for i, f := range frames {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"function":`...)
			b = append(b, w.quote(w.name(f))...)
			b = append(b, `,"file":`...)
			b = append(b, w.quote(f.File)...)
			b = append(b, `,"line":`...)
			b = strconv.AppendInt(b, int64(f.Line), 10)
			b = append(b, '}')
		}
		return append(b, "]}\n"...)
	}
	if len(frames) == 0 {
		return append(b, "??\n??:0:0\n\n"...)
	}
	for _, f := range frames {
		name, file := w.name(f), f.File
		if name == "" {
			name = "??"
		}
		if file == "" {
			file = "??"
		}
		b = append(append(append(append(b, name...), '\n'), file...), ':')
		b = append(strconv.AppendInt(b, int64(f.Line), 10), ':')
		b = append(strconv.AppendInt(b, int64(f.Column), 10), '\n')
	}
	return append(b, '\n')
}

func (w *answerWorker) quote(s string) []byte {
	if q, ok := w.quoted[s]; ok {
		return q
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep C++ template brackets readable
	_ = enc.Encode(s)        // a string always encodes
	q := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	w.quoted[s] = q
	return q
}
