// SPDX-License-Identifier: Apache-2.0

// Package symbolizer answers addresses of an image with their inline
// chains as llvm-symbolizer prints them, or as JSON lines: the output of
// tcmprof symbolize. A batch of addresses is looked up in address order and
// rendered on all cores, then written in the order it came in.
package symbolizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/tcmprof/tcmprof/elf/dwarfline"
	"github.com/tcmprof/tcmprof/elf/image"
)

// MaxBatch is how many addresses a reader of a stream of them (standard
// input: a file of addresses comes all buffered) should answer at a time.
// A batch's answers are rendered in memory, about 100 bytes each, before
// they are written, in buffers reused batch after batch: fresh memory
// costs a page fault per 4 KB, and a fault costs more than rendering 40
// answers.
const MaxBatch = 1 << 13

// pieceAddrs is how many addresses of a batch a core takes at a time:
// small, so that the cores finish a batch together even when the first
// address of a compile unit stops one to decode the unit.
const pieceAddrs = 512

// Printer writes the answers to addresses, each its inline chain, in
// llvm-symbolizer's default shape or as JSON lines.
type Printer struct {
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

// NewPrinter returns a Printer writing to out: JSON lines if json, C++
// linkage names as they are in the ELF if noDemangle.
func NewPrinter(out *bufio.Writer, json, noDemangle bool) *Printer {
	p := &Printer{out: out}
	for range runtime.GOMAXPROCS(0) {
		p.workers = append(p.workers, &answerWorker{json: json, noDemangle: noDemangle, quoted: map[string][]byte{}})
	}
	return p
}

// AnswerAll writes the answers to addrs in order. Pieces of addrs, in
// address order, are symbolized (decoding the DWARF they need) and
// rendered on all cores, then written in the order of addrs.
func (p *Printer) AnswerAll(im *image.Image, addrs []uint32) {
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
func (w *answerWorker) answer(p *Printer, im *image.Image, k int, keys []uint64) []byte {
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

// Flush writes what the answers left in the output's buffer.
func (p *Printer) Flush() error { return p.out.Flush() }

// AnswerBad writes the answer to a line that is no address: "??" as for
// an unknown address, or in JSON the line and why.
func (p *Printer) AnswerBad(line []byte, why error) {
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
