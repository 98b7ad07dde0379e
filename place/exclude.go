// SPDX-License-Identifier: Apache-2.0

package place

import (
	"fmt"
	"path"
	"strings"
)

// Reasons a function is never planned. Safety reasons are checked again by
// verify: a function excluded for one of them must not be in ITCM after the
// rebuild unless it already was.
const (
	ReasonPinned     = "pinned" // Func.Pin says why
	ReasonInITCM     = "already in ITCM"
	ReasonBoot       = "boot-critical" // runs before the ITCM copy, or is called by code that does
	ReasonExcluded   = "excluded by pattern"
	ReasonNoSection  = "no own input section" // shares its section: object not built with -ffunction-sections
	ReasonNotText    = "not a .text.* section"
	ReasonFewSamples = "too few samples"
)

// Exclusion records why a function is not a candidate.
type Exclusion struct {
	Entry
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// Safety reports whether the reason protects correctness (boot order, the
// sampler, pinned code, the user's wish) rather than expected benefit.
func (x *Exclusion) Safety() bool {
	switch x.Reason {
	case ReasonPinned, ReasonBoot, ReasonExcluded:
		return true
	}
	return false
}

// checkPatterns rejects malformed --exclude globs up front.
func checkPatterns(patterns []string) error {
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("bad exclude pattern %q: %w", p, err)
		}
	}
	return nil
}

// matchExclude returns the first pattern matching the function's symbol,
// base name, source path or source base name.
func matchExclude(f *Func, patterns []string) (string, bool) {
	for _, p := range patterns {
		for _, s := range []string{f.Symbol, f.Key.Base, f.Key.Source, path.Base(f.Key.Source)} {
			if s == "" || s == "." {
				continue
			}
			if ok, _ := path.Match(p, s); ok {
				return p, true
			}
		}
	}
	return "", false
}

// bootClosure marks the functions that run before the ITCM copy and
// returns, for each, the root it was reached from: the roots, and over call
// edges what they call, transitively. A root that calls one of the copy
// routines contributes only its calls up to its last call to a copy
// routine (Input.BootCopies says why); every other function contributes
// all its calls. Roots and copy routines are matched by full symbol or by
// base name; unknown roots are returned so the plan can warn about them (a
// misspelt root would silently unpin boot code).
func bootClosure(in *Input, roots, copies []string) (from []string, unknown []string) {
	fs := in.Funcs
	named := func(i int, names []string) bool {
		for _, n := range names {
			if fs[i].Symbol == n || fs[i].Key.Base == n {
				return true
			}
		}
		return false
	}
	byAddr := make(map[uint32]int, len(fs))
	for i := range fs {
		byAddr[fs[i].Addr] = i
	}
	type call struct {
		site   uint32
		callee int
	}
	calls := make([][]call, len(fs))
	for _, e := range in.Edges {
		c, ok1 := byAddr[e.Caller]
		t, ok2 := byAddr[e.Callee]
		if ok1 && ok2 && c != t {
			calls[c] = append(calls[c], call{e.Site, t})
		}
	}
	from = make([]string, len(fs))
	isRoot := make([]bool, len(fs))
	var queue []int
	for _, r := range roots {
		found := false
		for i := range fs {
			if fs[i].Symbol == r || fs[i].Key.Base == r {
				found = true
				isRoot[i] = true
				if from[i] == "" {
					from[i] = r
					queue = append(queue, i)
				}
			}
		}
		if !found {
			unknown = append(unknown, r)
		}
	}
	isCopy := make([]bool, len(fs))
	for i := range fs {
		isCopy[i] = named(i, copies)
	}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		cs := calls[c]
		if isRoot[c] && !isCopy[c] {
			last, copies := uint32(0), false
			for _, k := range cs {
				if isCopy[k.callee] {
					last, copies = max(last, k.site), true
				}
			}
			if copies {
				var before []call
				for _, k := range cs {
					if k.site <= last {
						before = append(before, k)
					}
				}
				cs = before
			}
		}
		for _, k := range cs {
			if from[k.callee] == "" {
				from[k.callee] = from[c]
				queue = append(queue, k.callee)
			}
		}
	}
	return from, unknown
}

// classify returns the reason function i can not be planned ("" if it can)
// in layout.
func classify(m *model, i int, bootFrom []string, excludes []string, minSamples int, layout Layout) (reason, detail string) {
	f := &m.in.Funcs[i]
	switch {
	case f.Pin != "":
		return ReasonPinned, f.Pin
	case m.itcm[i]:
		return ReasonInITCM, ""
	case bootFrom[i] != "":
		return ReasonBoot, "reachable from " + bootFrom[i]
	}
	if p, ok := matchExclude(f, excludes); ok {
		return ReasonExcluded, p
	}
	switch {
	case f.Section == "":
		return ReasonNoSection, "shares its input section of " + objectOrUnknown(f)
	case f.Section == ".text" && layout == LayoutZephyr:
		return ReasonNotText, "plain .text of " + objectOrUnknown(f) + ": Zephyr's gen_relocate_app.py only relocates sections named .text.*; build it with -ffunction-sections"
	case f.Section == ".text":
		// The function is all of its object's .text (newlib's memcpy in
		// libc_nano.a:lib_a-memcpy.o): an ld pattern naming that object's
		// .text moves exactly it.
	case !strings.Contains(f.Section, ".text."):
		// Zephyr's gen_relocate_app.py only relocates sections whose name
		// contains ".text."; keep both outputs consistent.
		return ReasonNotText, "section " + f.Section
	}
	// After the section checks, which a plain .text passes by ending the
	// switch early: it needs its samples as much as any other.
	if f.Samples < minSamples {
		return ReasonFewSamples, fmt.Sprintf("%d < %d", f.Samples, minSamples)
	}
	return "", ""
}

func objectOrUnknown(f *Func) string {
	switch {
	case f.Object == "":
		return "an unknown object"
	case f.Archive != "":
		return f.Archive + ":" + f.Object
	}
	return f.Object
}
