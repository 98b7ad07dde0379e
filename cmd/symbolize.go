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
	"strconv"
	"sync"

	"github.com/spf13/cobra"
	"github.com/tcmprof/tcmprof/elf"
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
		Short: "Print the function and file:line (with inlined frames) of code addresses",
		Long: `symbolize maps each address to its inline chain, innermost frame first, like
llvm-symbolizer: for each frame the function, then file:line:column, and a
blank line after each address ("??" when nothing is known). Addresses come
from the arguments or, if there are none, from standard input, one per line,
in hex with or without 0x; the Thumb bit is ignored. --json prints one object
per address per line instead.`,
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
	in := bufio.NewReaderSize(stdin, 64<<10)
	var batch []uint32
	for lineNo := 0; ; {
		batch = batch[:0]
		var stop error // what ends the input after this batch: io.EOF, a bad line, a read error
		for stop == nil {
			lineNo++
			line, err := in.ReadSlice('\n')
			if err == bufio.ErrBufferFull {
				stop = fmt.Errorf("stdin line %d: longer than %d bytes", lineNo, in.Size())
				break
			}
			if tok := bytes.TrimSpace(line); len(tok) > 0 {
				addr, perr := parseAddr(tok)
				if perr != nil {
					stop = fmt.Errorf("stdin line %d: %w", lineNo, perr)
					break
				}
				batch = append(batch, addr)
			}
			if stop = err; in.Buffered() == 0 || len(batch) == maxBatch {
				break
			}
		}
		// What was answered before a bad line is still printed.
		p.answerAll(im, batch)
		if stop == io.EOF {
			return nil
		}
		if stop != nil {
			return stop
		}
		if err := p.out.Flush(); err != nil {
			return err
		}
	}
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
// they are answered: a file of addresses comes all buffered.
const maxBatch = 1 << 16

// maxCachedAnswers bounds the answer cache: a firmware image has at most a
// few hundred thousand distinct code addresses, but input is unbounded.
const maxCachedAnswers = 1 << 20

// symbolPrinter writes frames in llvm-symbolizer's default shape or as
// JSON lines.
type symbolPrinter struct {
	out *bufio.Writer
	// answers caches the output for each address, kept in chunks:
	// samples repeat the same PCs over and over, and a few large buffers
	// spare the collector a slice per address.
	answers map[uint32]answerRef
	chunks  [][]byte
	// workers render a batch's answers in parallel, each its share.
	workers []*answerWorker
}

// answerRef is where an answer is: chunks[chunk][off:off+n].
type answerRef struct{ chunk, off, n uint32 }

func (r answerRef) in(chunks [][]byte) []byte { return chunks[r.chunk][r.off : r.off+r.n] }

// answerChunk is the size of the chunks answers are kept in.
const answerChunk = 256 << 10

// minShare is the fewest addresses worth handing to another worker.
const minShare = 256

// answerWorker renders its share of a batch's answers.
type answerWorker struct {
	json, noDemangle bool
	// quoted caches each function and file name as a JSON string.
	quoted  map[string][]byte
	scratch []byte
	// chunks hold the answers it rendered in this batch (fresh, by
	// address; a share may ask for one several times), answers the
	// share's answers in order.
	chunks  [][]byte
	cur     int // the chunk being filled
	fresh   map[uint32]answerRef
	answers [][]byte
}

func newSymbolPrinter(out *bufio.Writer, json, noDemangle bool) *symbolPrinter {
	p := &symbolPrinter{out: out, answers: map[uint32]answerRef{}}
	for range runtime.GOMAXPROCS(0) {
		p.workers = append(p.workers, &answerWorker{json: json, noDemangle: noDemangle,
			quoted: map[string][]byte{}, fresh: map[uint32]answerRef{}})
	}
	return p
}

// answerAll writes the answers to addrs in order. Shares of addrs are
// symbolized (decoding the DWARF they need) and rendered on all cores,
// reading the cache; then written in order, and the new answers cached.
func (p *symbolPrinter) answerAll(im *elf.Image, addrs []uint32) {
	n := max(1, min(len(p.workers), len(addrs)/minShare))
	if n == 1 { // no thread to wake and wait for, which costs most on a busy machine
		p.workers[0].answer(p, im, addrs)
	} else {
		var wg sync.WaitGroup
		for w, worker := range p.workers[:n] {
			share := addrs[w*len(addrs)/n : (w+1)*len(addrs)/n]
			wg.Go(func() { worker.answer(p, im, share) })
		}
		wg.Wait()
	}
	for _, w := range p.workers[:n] {
		for _, b := range w.answers {
			p.out.Write(b)
		}
		if len(p.answers) >= maxCachedAnswers {
			continue // the chunks are reused for the next batch
		}
		base := uint32(len(p.chunks))
		p.chunks = append(p.chunks, w.chunks...)
		w.chunks = nil
		for addr, r := range w.fresh {
			if _, ok := p.answers[addr]; !ok {
				r.chunk += base
				p.answers[addr] = r
			}
		}
	}
}

// answer renders the answers to share into w.answers, reading the
// printer's cache.
func (w *answerWorker) answer(p *symbolPrinter, im *elf.Image, share []uint32) {
	w.answers = w.answers[:0]
	clear(w.fresh)
	for k := range w.chunks { // left from a batch the full cache took nothing from
		w.chunks[k] = w.chunks[k][:0]
	}
	w.cur = 0
	for _, addr := range share {
		if r, ok := p.answers[addr]; ok {
			w.answers = append(w.answers, r.in(p.chunks))
			continue
		}
		r, ok := w.fresh[addr]
		if !ok {
			w.scratch = w.render(w.scratch[:0], addr, im.Symbolize(addr))
			r = w.store(w.scratch)
			w.fresh[addr] = r
		}
		w.answers = append(w.answers, r.in(w.chunks))
	}
}

// store copies b into w's chunks.
func (w *answerWorker) store(b []byte) answerRef {
	for w.cur < len(w.chunks) && len(w.chunks[w.cur])+len(b) > cap(w.chunks[w.cur]) {
		w.cur++
	}
	if w.cur == len(w.chunks) {
		w.chunks = append(w.chunks, make([]byte, 0, max(answerChunk, len(b))))
	}
	k := w.cur
	r := answerRef{chunk: uint32(k), off: uint32(len(w.chunks[k])), n: uint32(len(b))}
	w.chunks[k] = append(w.chunks[k], b...)
	return r
}

func (w *answerWorker) name(f elf.Frame) string {
	if w.noDemangle && f.Mangled != "" {
		return f.Mangled
	}
	return f.Function
}

func (w *answerWorker) render(b []byte, addr uint32, frames []elf.Frame) []byte {
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
