// SPDX-License-Identifier: Apache-2.0

package place

// The plan's JSON form is the Plan data model itself (its field tags are in
// plan.go), so reading and writing it lives beside the model: plan writes
// it, verify reads it back, and neither is a rendering for the build.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// WritePlanJSON writes the plan as indented JSON. Callers writing a file
// the user keeps should write to a temporary file and rename it.
func WritePlanJSON(w io.Writer, p *Plan) error {
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
func ReadPlanJSON(r io.Reader) (*Plan, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var p Plan
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
