// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Trace format version (firmware-sampler/qemu/plugin/README.md). A reader
// refuses a newer major; a minor version only adds record kinds that an
// older reader may skip (none so far).
const (
	TraceMajor = 1
	TraceMinor = 0
)

const (
	traceMagic = "TCMTRACE"
	tagBlock   = 0x8
	tagCut     = 0x9
	tagEnd     = 0xF
	// maxBlockInsns bounds a block definition: QEMU translates at most 512
	// instructions per block (TCG_MAX_INSNS); anything far above that is a
	// damaged trace, not a reason to allocate.
	maxBlockInsns = 4096
	maxBuildID    = 64
	readChunk     = 1 << 20
)

// Block is a straight run of instructions that QEMU translated as one unit
// and the trace executes as a whole.
type Block struct {
	// Index is the block's position in the reader's table (Reader.Blocks),
	// in the order the blocks appeared: translated blocks and the blocks
	// the reader makes for cut executions (see Reader).
	Index int
	Start uint32  // address of the first instruction
	Sizes []uint8 // size in bytes of each instruction, 2 or 4 (Thumb)
}

// Len is the number of instructions.
func (b *Block) Len() int { return len(b.Sizes) }

// Addr is the address of instruction i.
func (b *Block) Addr(i int) uint32 {
	a := b.Start
	for _, s := range b.Sizes[:i] {
		a += uint32(s)
	}
	return a
}

// Reader reads a trace as the sequence of executed blocks. It holds only
// the block table, so a trace of any length streams in constant memory.
//
// An execution that QEMU abandoned part-way (a CUT record) comes out as an
// execution of a block holding only the instructions that ran; those
// blocks are made once per cut point and added to the table.
type Reader struct {
	r       io.Reader
	buf     []byte
	pos     int // next unread byte of buf
	end     int // bytes of buf filled
	offset  int64
	BuildID []byte // of the traced image, as the plugin was told; nil if not given

	blocks   []*Block // every block, by Index
	byID     []*Block // the blocks the trace defines, by plugin id
	prefixes map[prefixKey]*Block
	pending  *Block // the latest execution, held until the next record shows it was whole
	done     bool

	execs, cuts uint64 // records read, checked against END
	cutInsns    uint64
}

// ReaderStats count what a trace held so far.
type ReaderStats struct {
	Executions uint64 // EXEC records
	Blocks     int    // blocks the trace defined
	Cuts       uint64 // executions QEMU abandoned part-way (CUT records)
	// CutInstructions are the instructions those executions did not run
	// from their block (the I/O instruction that then ran alone included).
	CutInstructions uint64
}

// Stats counts what the reader has read so far.
func (t *Reader) Stats() ReaderStats {
	return ReaderStats{Executions: t.execs, Blocks: len(t.byID), Cuts: t.cuts, CutInstructions: t.cutInsns}
}

type prefixKey struct {
	block int
	n     int
}

// NewReader reads the trace header from r.
func NewReader(r io.Reader) (*Reader, error) {
	t := &Reader{r: r, buf: make([]byte, readChunk), prefixes: make(map[prefixKey]*Block)}
	var head [16]byte
	n, err := io.ReadFull(r, head[:])
	t.offset = int64(n)
	if err != nil {
		if n == 0 || string(head[:n]) == traceMagic[:min(n, len(traceMagic))] {
			return nil, errors.New("trace is empty or truncated in its header")
		}
		return nil, errors.New("not a tcmprof trace (no TCMTRACE header)")
	}
	if string(head[:8]) != traceMagic {
		return nil, errors.New("not a tcmprof trace (no TCMTRACE header)")
	}
	version := binary.LittleEndian.Uint32(head[8:])
	major, minor := version>>16, version&0xFFFF
	if major != TraceMajor {
		return nil, fmt.Errorf("trace format version %d.%d; this tcmprof reads %d.x", major, minor, TraceMajor)
	}
	idLen := binary.LittleEndian.Uint32(head[12:])
	if idLen > maxBuildID {
		return nil, fmt.Errorf("trace header claims a %d-byte build-id (at most %d)", idLen, maxBuildID)
	}
	if idLen > 0 {
		id := make([]byte, (idLen+3)&^3)
		n, err := io.ReadFull(r, id)
		t.offset += int64(n)
		if err != nil {
			return nil, errors.New("trace is truncated in its header")
		}
		t.BuildID = id[:idLen]
	}
	return t, nil
}

// Blocks is the block table so far, by Index.
func (t *Reader) Blocks() []*Block { return t.blocks }

var errNoEnd = errors.New("trace ends without its END record (QEMU was killed, or the plugin could not write)")

// word returns the next little-endian word.
func (t *Reader) word() (uint32, error) {
	if t.end-t.pos < 4 {
		if err := t.fill(); err != nil {
			return 0, err
		}
	}
	w := binary.LittleEndian.Uint32(t.buf[t.pos:])
	t.pos += 4
	return w, nil
}

// fill moves the unread bytes to the front and reads at least one word.
func (t *Reader) fill() error {
	t.offset += int64(t.pos)
	t.end = copy(t.buf, t.buf[t.pos:t.end])
	t.pos = 0
	for t.end < 4 {
		n, err := t.r.Read(t.buf[t.end:])
		t.end += n
		if err == io.EOF {
			if t.end == 0 {
				return errNoEnd
			}
			if t.end < 4 {
				return fmt.Errorf("trace ends inside a record at byte %d", t.offset+int64(t.end))
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// at is the byte offset of the word just read, for messages.
func (t *Reader) at() int64 { return t.offset + int64(t.pos) - 4 }

// Next returns the next executed block, and io.EOF after the END record.
func (t *Reader) Next() (*Block, error) {
	if t.done {
		return nil, io.EOF
	}
	for {
		w, err := t.word()
		if err != nil {
			return nil, err
		}
		if w < 1<<31 {
			if w >= uint32(len(t.byID)) {
				return nil, fmt.Errorf("trace byte %d: execution of block %d, which is not defined", t.at(), w)
			}
			t.execs++
			prev := t.pending
			t.pending = t.byID[w]
			if prev != nil {
				return prev, nil
			}
			continue
		}
		switch w >> 28 {
		case tagBlock:
			if err := t.readBlock(w & 0x0FFFFFFF); err != nil {
				return nil, err
			}
		case tagCut:
			b, err := t.readCut()
			if err != nil {
				return nil, err
			}
			if b != nil {
				return b, nil
			}
		case tagEnd:
			if err := t.readEnd(w); err != nil {
				return nil, err
			}
			t.done = true
			if b := t.pending; b != nil {
				t.pending = nil
				return b, nil
			}
			return nil, io.EOF
		default:
			return nil, fmt.Errorf("trace byte %d: unknown record 0x%08x", t.at(), w)
		}
	}
}

func (t *Reader) readBlock(n uint32) error {
	at := t.at()
	if n == 0 || n > maxBlockInsns {
		return fmt.Errorf("trace byte %d: block of %d instructions (1 to %d)", at, n, maxBlockInsns)
	}
	id, err := t.word()
	if err != nil {
		return err
	}
	if id != uint32(len(t.byID)) {
		return fmt.Errorf("trace byte %d: block id %d out of order (want %d)", at, id, len(t.byID))
	}
	start, err := t.word()
	if err != nil {
		return err
	}
	if start&1 != 0 {
		return fmt.Errorf("trace byte %d: block %d starts at odd address 0x%08x", at, id, start)
	}
	b := &Block{Index: len(t.blocks), Start: start, Sizes: make([]uint8, n)}
	var w uint32
	end := uint64(start)
	for i := range b.Sizes {
		if i%4 == 0 {
			if w, err = t.word(); err != nil {
				return err
			}
		}
		s := uint8(w >> (8 * (i % 4)))
		if s != 2 && s != 4 {
			return fmt.Errorf("trace byte %d: block %d instruction %d has size %d (Thumb: 2 or 4)", at, id, i, s)
		}
		b.Sizes[i] = s
		end += uint64(s)
	}
	if end > 1<<32 {
		return fmt.Errorf("trace byte %d: block %d runs past the 4 GB address space", at, id)
	}
	t.blocks = append(t.blocks, b)
	t.byID = append(t.byID, b)
	return nil
}

// readCut handles CUT id: the held execution ran only up to the single
// instruction of block id, which then ran alone. It returns the shortened
// execution (nil when nothing of it ran) and holds block id as the latest.
func (t *Reader) readCut() (*Block, error) {
	at := t.at()
	id, err := t.word()
	if err != nil {
		return nil, err
	}
	if id >= uint32(len(t.byID)) {
		return nil, fmt.Errorf("trace byte %d: cut at block %d, which is not defined", at, id)
	}
	single := t.byID[id]
	if single.Len() != 1 {
		return nil, fmt.Errorf("trace byte %d: cut at block %d of %d instructions (want 1)", at, id, single.Len())
	}
	cut := t.pending
	if cut == nil {
		return nil, fmt.Errorf("trace byte %d: cut before any execution", at)
	}
	k, addr := -1, cut.Start
	for i, s := range cut.Sizes {
		if addr == single.Start {
			k = i
			break
		}
		addr += uint32(s)
	}
	if k < 0 {
		return nil, fmt.Errorf("trace byte %d: cut at 0x%08x, outside the block at 0x%08x it cuts", at, single.Start, cut.Start)
	}
	t.cuts++
	t.cutInsns += uint64(cut.Len() - k)
	t.pending = single
	if k == 0 {
		return nil, nil
	}
	return t.prefix(cut, k), nil
}

// prefix is the block of the first n instructions of b, made once.
func (t *Reader) prefix(b *Block, n int) *Block {
	key := prefixKey{b.Index, n}
	if p, ok := t.prefixes[key]; ok {
		return p
	}
	p := &Block{Index: len(t.blocks), Start: b.Start, Sizes: b.Sizes[:n:n]}
	t.blocks = append(t.blocks, p)
	t.prefixes[key] = p
	return p
}

func (t *Reader) readEnd(w uint32) error {
	at := t.at()
	if w != tagEnd<<28 {
		return fmt.Errorf("trace byte %d: bad END record 0x%08x", at, w)
	}
	var counts [3]uint64
	for i := range counts {
		lo, err := t.word()
		if err != nil {
			return err
		}
		hi, err := t.word()
		if err != nil {
			return err
		}
		counts[i] = uint64(hi)<<32 | uint64(lo)
	}
	if counts[0] != t.execs || counts[1] != uint64(len(t.byID)) || counts[2] != t.cuts {
		return fmt.Errorf("trace END counts %d executions, %d blocks, %d cuts; the trace holds %d, %d, %d (records lost)",
			counts[0], counts[1], counts[2], t.execs, len(t.byID), t.cuts)
	}
	if t.end > t.pos {
		return fmt.Errorf("trace has %d bytes after its END record", t.end-t.pos)
	}
	var one [1]byte
	if n, _ := io.ReadFull(t.r, one[:]); n > 0 {
		return errors.New("trace has bytes after its END record")
	}
	return nil
}
