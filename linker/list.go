// SPDX-License-Identifier: Apache-2.0

// Package linker renders a place.Plan for the build system — Zephyr's
// zephyr_code_relocate(), a GNU ld script fragment, a plain list — and
// verifies a rebuilt image against the plan. The plan as JSON is the
// place package's (place.WritePlanJSON).
package linker

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/tcmprof/tcmprof/place"
)

// WriteList writes one planned function per line: symbol, section, input
// file (archive:member or object) and source file, separated by tabs.
func WriteList(w io.Writer, p *place.Plan) error {
	bw := bufio.NewWriter(w)
	for _, e := range p.Entries {
		input := e.Object
		if e.Archive != "" {
			input = e.Archive + ":" + e.Object
		}
		fmt.Fprintln(bw, strings.Join([]string{e.Symbol, e.Section, input, e.Key.Source}, "\t"))
	}
	return bw.Flush()
}

// Skip is a plan entry an output can not express, and why.
type Skip struct {
	Entry  place.Entry
	Reason string
}

func (s Skip) String() string { return s.Entry.Symbol + ": " + s.Reason }
