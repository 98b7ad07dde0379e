// SPDX-License-Identifier: Apache-2.0

package place

import (
	"fmt"
	"io"
	"sort"

	"github.com/tcmprof/tcmprof/internal/texttable"
	"github.com/tcmprof/tcmprof/internal/wording"
	"github.com/tcmprof/tcmprof/profile"
)

// DefaultMinSamples is the fewest samples a function needs to be ranked
// and planned. With k samples the relative standard error of its count is
// about 1/sqrt(k): at 10 samples that is ~32 %, so below it the ordering by
// density is mostly noise, and moving such a function is a guess.
const DefaultMinSamples = 10

// Interval is a closed interval [Lo, Hi].
type Interval struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// RankRow is one function in the ranking.
type RankRow struct {
	Func      *Func
	Samples   int
	Share     float64  // Samples / BusySamples
	ShareCI   Interval // 95 % Wilson interval of Share (profile.NewShare)
	Density   float64  // busy samples per byte
	DensityCI Interval // ShareCI scaled to samples per byte
	// Ranked is false when the function has fewer than the minimum samples;
	// such rows are listed for completeness but never planned.
	Ranked bool
}

// Rank lists the functions that have samples (call in.Validate first),
// densest first (ties by more
// samples, then by symbol, so the order is stable). minSamples <= 0 means
// DefaultMinSamples.
func Rank(in *Input, minSamples int) []RankRow {
	if minSamples <= 0 {
		minSamples = DefaultMinSamples
	}
	var rows []RankRow
	for i := range in.Funcs {
		f := &in.Funcs[i]
		if f.Samples == 0 {
			continue
		}
		// The share and its interval come from profile, like every
		// share report and diff print.
		share := profile.NewShare(f.Samples, in.BusySamples)
		ci := Interval{Lo: share.Lo, Hi: share.Hi}
		scale := float64(in.BusySamples) / float64(f.Size)
		rows = append(rows, RankRow{
			Func:      f,
			Samples:   f.Samples,
			Share:     share.Fraction(),
			ShareCI:   ci,
			Density:   profile.Density(f.Samples, f.Size),
			DensityCI: Interval{Lo: ci.Lo * scale, Hi: ci.Hi * scale},
			Ranked:    f.Samples >= minSamples,
		})
	}
	sort.SliceStable(rows, func(a, b int) bool {
		ra, rb := &rows[a], &rows[b]
		if ra.Density != rb.Density {
			return ra.Density > rb.Density
		}
		if ra.Samples != rb.Samples {
			return ra.Samples > rb.Samples
		}
		return ra.Func.Symbol < rb.Func.Symbol
	})
	return rows
}

// WriteRankTable prints rows as an aligned text table within
// texttable.Width columns: samples, share, size, samples per byte, region
// and the function, named by its source file only where two functions
// share a name. The rows with too few samples to rank come last, under a
// line that says so. wide adds the share's interval and the library, and
// names every function with its source path (rank --wide).
func WriteRankTable(w io.Writer, rows []RankRow, wide bool) error {
	titles := []string{"samples", "share", "size", "samples/B", "region", "function"}
	if wide {
		titles = []string{"samples", "share", wording.IntervalHeading, "size", "samples/B", "region", "library", "function"}
	}
	keys := make([]FuncKey, len(rows))
	for i, r := range rows {
		keys[i] = r.Func.Key
	}
	names := functionNames(keys, wide)
	t := texttable.New("  ", titles...)
	add := func(i int) {
		r := rows[i]
		cells := []string{fmt.Sprint(r.Samples), wording.Percent(r.Share)}
		if wide {
			cells = append(cells, wording.Interval(r.ShareCI.Lo, r.ShareCI.Hi))
		}
		cells = append(cells, fmt.Sprint(r.Func.Size), fmt.Sprintf("%.3f", r.Density), wording.Region(string(r.Func.Kind)))
		if wide {
			lib := r.Func.Library()
			if lib == "" {
				lib = "-"
			}
			cells = append(cells, lib)
		}
		t.Row(names[i], cells...)
	}
	var unranked []int
	for i, r := range rows {
		if r.Ranked {
			add(i)
		} else {
			unranked = append(unranked, i)
		}
	}
	if len(unranked) > 0 {
		t.Section("too few samples to rank (their density is mostly noise); never planned:")
		for _, i := range unranked {
			add(i)
		}
	}
	return t.Write(w, texttable.Limit(wide))
}
