// SPDX-License-Identifier: Apache-2.0

// Package symname holds the one rule for the clone suffixes GCC gives the
// copies of a function it specialises or splits (hash_buf.constprop.0):
// symbolization, the DWARF index, boards' boot lists and the planner's
// function keys all split and write names here.
package symname

import (
	"slices"
	"strings"
)

// cloneKinds are the suffixes GCC appends to a function it has specialised
// or split; they may be stacked (foo.isra.0.constprop.0).
var cloneKinds = []string{"constprop", "isra", "part", "cold", "lto_priv", "clone", "localalias", "specialized"}

// SplitClone splits a symbol name into its base and clone suffix:
// "hash_buf.constprop.0" → ("hash_buf", ".constprop.0"),
// "f.isra.0.cold" → ("f", ".isra.0.cold"). A suffix is made of clone kinds
// and their numbers only; a name without one is returned whole: "a.b" is
// a base name of its own, and so is GNU ld's veneer to a clone,
// "__f.isra.0_veneer".
func SplitClone(name string) (base, clone string) {
	for i := 1; i < len(name); i++ {
		if name[i] != '.' {
			continue
		}
		rest := name[i+1:]
		for _, k := range cloneKinds {
			if strings.HasPrefix(rest, k) && (len(rest) == len(k) || rest[len(k)] == '.') && isCloneSuffix(rest) {
				return name[:i], name[i:]
			}
		}
	}
	return name, ""
}

// isCloneSuffix reports whether the dot-separated parts of s are all
// clone kinds or numbers.
func isCloneSuffix(s string) bool {
	for part := range strings.SplitSeq(s, ".") {
		if !slices.Contains(cloneKinds, part) && (part == "" || strings.Trim(part, "0123456789") != "") {
			return false
		}
	}
	return true
}

// WithClone is how tcmprof writes a function with its clone suffix, as
// GCC's diagnostics do: ("run_burst", ".isra.0") → "run_burst [clone
// .isra.0]"; a name without one stays as it is.
func WithClone(base, clone string) string {
	if clone == "" {
		return base
	}
	return base + " [clone " + clone + "]"
}

// NormalizeClone replaces the numbers of a clone suffix, which GCC hands
// out afresh in every build, with N: ".constprop.3.isra.0" gives
// ".constprop.N.isra.N", so that a clone renumbered by a rebuild is found
// again.
func NormalizeClone(clone string) string {
	parts := strings.Split(clone, ".")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" && slices.Contains(cloneKinds, parts[i-1]) && strings.Trim(parts[i], "0123456789") == "" {
			parts[i] = "N"
		}
	}
	return strings.Join(parts, ".")
}
