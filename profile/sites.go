// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"errors"

	"github.com/tcmprof/tcmprof/elf/board"
	"github.com/tcmprof/tcmprof/elf/image"
)

// Sites symbolizes and classifies code addresses, each once: Symbolize
// reads a capture through it, and a live view that sees the same PCs again
// and again for as long as a stream runs keeps one for the whole run. It is
// not safe for concurrent use.
type Sites struct {
	img   *image.Image
	board *board.Board
	opts  Options
	m     map[uint32]*Site
}

// NewSites returns an empty cache of the sites of img under opts (its
// board, map file and idle rules).
func NewSites(img *image.Image, opts Options) (*Sites, error) {
	if img == nil {
		return nil, errors.New("no image")
	}
	if err := opts.Idle.Validate(); err != nil {
		return nil, err
	}
	b := opts.Board
	if b == nil {
		var err error
		if b, err = board.ByName("teensy41"); err != nil {
			return nil, err
		}
	}
	return &Sites{img: img, board: b, opts: opts, m: make(map[uint32]*Site)}, nil
}

// Board is the board the sites are classified against: opts.Board, or
// teensy41 when that was nil.
func (c *Sites) Board() *board.Board { return c.board }

// At returns the site of addr, symbolizing it on its first use.
func (c *Sites) At(addr uint32) *Site {
	if st, ok := c.m[addr]; ok {
		return st
	}
	st := &Site{Addr: addr, Function: c.img.FunctionAt(addr), Frames: c.img.Symbolize(addr)}
	if kind, ok := c.board.Classify(addr, func(uint32) bool { return st.Function != nil && st.Function.Veneer }); ok {
		st.Region = kind
	}
	if c.opts.Map != nil {
		st.Library = c.opts.Map.Library(addr)
	}
	st.Idle = c.idleCode(st)
	c.m[addr] = st
	return st
}

// idleCode reports whether samples at st are idle by where they are: in a
// function the idle rules name (physical or inlined), or right after a
// WFI/WFE.
func (c *Sites) idleCode(st *Site) bool {
	rules := &c.opts.Idle
	if f := st.Function; f != nil && (rules.IdleFunction(f.Name) || rules.IdleFunction(f.Base)) {
		return true
	}
	for _, fr := range st.Frames {
		if rules.IdleFunction(fr.Function) || rules.IdleFunction(fr.Short) {
			return true
		}
	}
	if rules.WFI && st.Addr >= 4 {
		if b, ok := c.img.Bytes(st.Addr-4, 4); ok {
			return AfterWaitForInterrupt(b)
		}
		if b, ok := c.img.Bytes(st.Addr-2, 2); ok {
			return AfterWaitForInterrupt(b)
		}
	}
	return false
}
