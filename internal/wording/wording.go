// SPDX-License-Identifier: Apache-2.0

// Package wording is how every tcmprof command writes the figures and
// names its tables share: a percentage, a 95 % interval, a memory region.
// One form each, so that rank, report, diff, plan, sim, top and bench say
// the same thing the same way ("49.3 %", "45.1–53.6 %", "flash"). A
// function's clone suffix is written by symname.WithClone, beside the rule
// that splits it off.
package wording

import "fmt"

// IntervalHeading is the title of a column of Interval values.
const IntervalHeading = "95 % interval"

// Percent writes a fraction (0.4934) as a percentage to one decimal
// ("49.3 %"), with a space before the sign as in the SI's usage.
func Percent(fraction float64) string { return fmt.Sprintf("%.1f %%", 100*fraction) }

// Interval writes the bounds of a share's interval, given as fractions,
// as percentages: "45.1–53.6 %".
func Interval(lo, hi float64) string { return fmt.Sprintf("%.1f–%.1f %%", 100*lo, 100*hi) }

// Region writes the kind of memory a function or sample is in (elf's
// RegionKind: "flash", "itcm", ..., not a board's name for the region,
// such as "FLASH"), "unknown" for none.
func Region(kind string) string {
	if kind == "" {
		return "unknown"
	}
	return kind
}

// Name is v's name in names, or v formatted with unknown: a number a
// protocol does not define (as a newer device might send) still prints.
func Name[T ~uint8](names map[T]string, v T, unknown string) string {
	if name, ok := names[v]; ok {
		return name
	}
	return fmt.Sprintf(unknown, uint8(v))
}
