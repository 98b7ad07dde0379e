// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"

	"github.com/spf13/cobra"
	"github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/elf/symbolizer"
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
	im, err := image.Open(o.elf)
	if err != nil {
		return err
	}
	// Warnings about the whole image come first; those about a compile
	// unit's DWARF come once the addresses have decoded it.
	warned := printImageWarnings(s.Err, o.elf, im, 0)
	out := bufio.NewWriterSize(s.Out, 64<<10)
	p := symbolizer.NewPrinter(out, o.json, o.noDemangle)
	err = symbolizeAll(im, p, s.In, o.addrs)
	// What was answered before a bad address is still printed.
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	printImageWarnings(s.Err, o.elf, im, warned)
	return err
}

func symbolizeAll(im *image.Image, p *symbolizer.Printer, stdin io.Reader, addrs []uint32) error {
	if len(addrs) > 0 {
		p.AnswerAll(im, addrs)
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
				p.AnswerAll(im, batch)
				batch = batch[:0]
				p.AnswerBad(line, badErr)
				bad.add(badErr)
			}
			if stop = err; in.Buffered() == 0 || len(batch) == symbolizer.MaxBatch {
				break
			}
		}
		p.AnswerAll(im, batch)
		if stop == io.EOF {
			return bad.err(answered)
		}
		if stop != nil {
			return stop
		}
		if err := p.Flush(); err != nil {
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
func printImageWarnings(w io.Writer, path string, im *image.Image, done int) int {
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
