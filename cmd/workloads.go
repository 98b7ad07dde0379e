// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"fmt"

	"github.com/tcmprof/tcmprof/profile"
	"github.com/tcmprof/tcmprof/sample"
)

// workloads are the captures of a mix, each symbolized on its own: their
// busy samples by PC and the mix's samples per sample of each
// (sample.Copies).
type workloads struct {
	busyPCs []map[uint32]int
	scale   []float64
}

// readWorkloads symbolizes each capture of a mix against the image and
// options the mix was (mix), not the build opened again.
func readWorkloads(captures []captureArg, mix *profile.Symbolized) (workloads, error) {
	var w workloads
	var parts []sample.Part
	for _, a := range captures {
		c, err := sample.ReadFile(a.path)
		if err != nil {
			return w, err
		}
		parts = append(parts, sample.Part{Name: a.path, Capture: c, Weight: a.weight})
		sym, err := profile.Symbolize(c, mix.Image, mix.Options)
		if err != nil {
			return w, fmt.Errorf("%s: %w", a.path, err)
		}
		w.busyPCs = append(w.busyPCs, busyPCs(sym))
	}
	w.scale = sample.Copies(parts)
	return w, nil
}

// busyPCs counts the busy samples by PC.
func busyPCs(sym *profile.Symbolized) map[uint32]int {
	busy := make(map[uint32]int)
	for _, st := range sym.Stacks {
		if !st.Idle {
			busy[st.PC.Addr] += st.Count
		}
	}
	return busy
}
