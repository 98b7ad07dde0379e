// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/tcmprof/tcmprof/internal/wording"
)

// ModelJSON is the configuration as `tcmprof sim --json` reports it.
type ModelJSON struct {
	CacheSize uint32    `json:"cache_size"`
	CacheWays uint32    `json:"cache_ways"`
	LineSize  uint32    `json:"line_size"`
	Sets      uint32    `json:"sets"`
	Policy    string    `json:"policy"`
	Penalty   uint32    `json:"penalty"`
	TCM       []string  `json:"tcm"`
	Exclude   []string  `json:"exclude"`
	Unit      *UnitJSON `json:"unit"` // null without a unit marker
}

// UnitJSON is the window of `tcmprof sim --json`.
type UnitJSON struct {
	Name   string `json:"name"`
	Addr   uint32 `json:"addr"`
	Warmup uint64 `json:"warmup"`
	Count  uint64 `json:"count"` // as asked; 0 = to the end of the trace
}

// reportJSON is the whole --json object.
type reportJSON struct {
	Model ModelJSON `json:"model"`
	*Summary
}

// Model is c as reports show it.
func (c *Config) Model() ModelJSON {
	m := ModelJSON{CacheSize: c.Cache.Size, CacheWays: c.Cache.Ways, LineSize: c.Cache.LineSize, Sets: c.Cache.Sets(),
		Policy: c.Policy.String(), Penalty: c.Penalty, TCM: []string{}, Exclude: []string{}}
	for _, r := range c.TCM {
		m.TCM = append(m.TCM, r.String())
	}
	for _, r := range c.Exclude {
		m.Exclude = append(m.Exclude, r.String())
	}
	if u := c.Unit; u != nil {
		m.Unit = &UnitJSON{Name: u.Name, Addr: u.Addr, Warmup: u.Warmup, Count: u.Count}
	}
	return m
}

// WriteJSON writes the configuration and the summary as one JSON object.
func WriteJSON(w io.Writer, c *Config, s *Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(reportJSON{Model: c.Model(), Summary: s})
}

// WriteText writes the summary as text tables, top rows of each (0: all).
func WriteText(w io.Writer, c *Config, s *Summary, top int) error {
	g := c.Cache
	fmt.Fprintf(w, "model: I-cache %s, %d-way, %d-byte lines (%d sets), %s; line fill %d cycles; TCM zero-wait\n",
		byteSize(g.Size), g.Ways, g.LineSize, g.Sets(), c.Policy, c.Penalty)
	if len(c.Exclude) > 0 {
		fmt.Fprintf(w, "excluded (cost nothing): %v\n", c.Exclude)
	}
	if u := c.Unit; u != nil {
		fmt.Fprintf(w, "window: %d units (entries of %s) after %d of warm-up\n", s.Units, u.Name, u.Warmup)
		if s.TailInstructions > 0 {
			fmt.Fprintf(w, "  and %d instructions after the last entry, counted in the totals but in no unit\n", s.TailInstructions)
		}
	} else {
		fmt.Fprintln(w, "window: the whole trace (no unit marker)")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, total uint64, perUnit float64) {
		if c.Unit != nil {
			fmt.Fprintf(tw, "%s\t%d\t%.1f\tper unit\t\n", name, total, perUnit)
		} else {
			fmt.Fprintf(tw, "%s\t%d\t\t\t\n", name, total)
		}
	}
	row("instructions", s.Instructions, s.InstructionsPerUnit)
	row("line fills", s.Misses, s.MissesPerUnit)
	row("stall cycles", s.StallCycles, float64(s.StallCycles)/float64(max(s.Units, 1)))
	row("cycles", s.Cycles, s.CyclesPerUnit)
	tw.Flush()
	fmt.Fprintf(w, "stall share: %s of cycles\n", wording.Percent(s.StallShare))
	fmt.Fprintf(w, "lines: %d distinct cached lines fetched (%.1f KB); %d of %d sets over-subscribed (holding more than %d lines)\n",
		s.DistinctLines, float64(s.DistinctLines)*float64(g.LineSize)/1024, s.OversubscribedSets, g.Sets(), g.Ways)

	costs := func(title string, rows []Cost, withLib bool) {
		fmt.Fprintf(w, "\nby %s\n", title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "cycles\tshare\tinstructions\tfills\tstall cycles\t")
		if withLib {
			fmt.Fprintf(tw, "region\tlibrary\t")
		}
		fmt.Fprintf(tw, "%s\n", title)
		for i, r := range rows {
			if top > 0 && i == top {
				fmt.Fprintf(tw, "... %d more\n", len(rows)-top)
				break
			}
			fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t", r.Cycles, wording.Percent(r.CycleShare), r.Instructions, r.Misses, r.StallCycles)
			if withLib {
				fmt.Fprintf(tw, "%s\t%s\t", wording.Region(string(r.Region)), orDash(r.Library))
			}
			fmt.Fprintf(tw, "%s\n", r.Name)
		}
		tw.Flush()
	}
	costs("function", s.Functions, true)
	if len(s.Libraries) > 0 {
		costs("library", s.Libraries, false)
	}
	fmt.Fprintln(w, "\nby cache set (most fills first)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "set\tlines\tfetches\tfills\tstall cycles")
	for i, sc := range s.Sets {
		if top > 0 && i == top {
			fmt.Fprintf(tw, "... %d more\n", len(s.Sets)-top)
			break
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\n", sc.Set, sc.Lines, sc.Fetches, sc.Misses, sc.StallCycles)
	}
	return tw.Flush()
}

// byteSize is "32 KB" for whole kilobytes, else "64 B".
func byteSize(n uint32) string {
	if n%1024 == 0 {
		return fmt.Sprintf("%d KB", n/1024)
	}
	return fmt.Sprintf("%d B", n)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
