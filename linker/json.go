// SPDX-License-Identifier: Apache-2.0

// Package linker renders a place.Plan for the build system — Zephyr's
// zephyr_code_relocate(), a GNU ld script fragment, a plain list, the plan
// as JSON — and verifies a rebuilt image against the plan.
package linker

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tcmprof/tcmprof/place"
)

// WritePlanJSON writes the plan as indented JSON. Callers writing a file
// the user keeps should write to a temporary file and rename it.
func WritePlanJSON(w io.Writer, p *place.Plan) error {
	if err := p.Validate(); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// notAPlan starts the error of a file ReadPlanJSON can not take for a plan.
const notAPlan = "not a plan file (tcmprof plan --format json writes one)"

// ReadPlanJSON reads a plan written by WritePlanJSON and validates it.
func ReadPlanJSON(r io.Reader) (*place.Plan, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var p place.Plan
	switch err := dec.Decode(&p); {
	case errors.Is(err, io.EOF):
		return nil, fmt.Errorf("%s: the file is empty", notAPlan)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", notAPlan, err)
	case p.Version == 0:
		return nil, fmt.Errorf("%s: no plan version", notAPlan)
	case dec.More():
		return nil, fmt.Errorf("%s: trailing data after the plan", notAPlan)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

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
