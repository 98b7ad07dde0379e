// SPDX-License-Identifier: Apache-2.0

package place

import (
	"github.com/tcmprof/tcmprof/elf/symname"
)

// Match says how a plan entry was found in a (rebuilt) image.
type Match string

const (
	MatchExact      Match = "exact"      // same source, base name and clone suffix
	MatchRenumbered Match = "renumbered" // same clone kinds, other numbers (.constprop.0 → .constprop.1)
	MatchAmbiguous  Match = "ambiguous"  // several renumbered clones; the closest in size was taken
	MatchMissing    Match = "missing"    // no function of that name is left
)

// Resolution is one plan entry looked up in an image.
type Resolution struct {
	Entry Entry
	Func  *Func // nil when Match is MatchMissing
	Match Match
}

// Resolve finds each entry in funcs by (source, base name, clone suffix),
// tolerating GCC's clone renumbering between builds. A function without a
// source file (no DWARF for it) matches by name alone when that is unique
// across the image, so stripped library code still resolves.
func Resolve(entries []Entry, funcs []Func) []Resolution {
	type srcBase struct{ source, base string }
	bySrcBase := make(map[srcBase][]*Func)
	byBase := make(map[string][]*Func)
	for i := range funcs {
		f := &funcs[i]
		bySrcBase[srcBase{f.Key.Source, f.Key.Base}] = append(bySrcBase[srcBase{f.Key.Source, f.Key.Base}], f)
		byBase[f.Key.Base] = append(byBase[f.Key.Base], f)
	}
	out := make([]Resolution, len(entries))
	for k, e := range entries {
		same := bySrcBase[srcBase{e.Key.Source, e.Key.Base}]
		if len(same) == 0 {
			var loose []*Func
			for _, f := range byBase[e.Key.Base] {
				if e.Key.Source == "" || f.Key.Source == "" {
					loose = append(loose, f)
				}
			}
			if len(loose) == 1 || (len(loose) > 1 && allSameClone(loose, e.Key.Clone)) {
				same = loose
			}
		}
		out[k] = resolveOne(e, same)
	}
	return out
}

func allSameClone(fs []*Func, clone string) bool {
	n := 0
	for _, f := range fs {
		if f.Key.Clone == clone {
			n++
		}
	}
	return n == 1
}

func resolveOne(e Entry, same []*Func) Resolution {
	r := Resolution{Entry: e, Match: MatchMissing}
	for _, f := range same {
		if f.Key.Clone == e.Key.Clone {
			r.Func, r.Match = f, MatchExact
			return r
		}
	}
	want := symname.NormalizeClone(e.Key.Clone)
	for _, f := range same {
		if symname.NormalizeClone(f.Key.Clone) != want {
			continue
		}
		switch {
		case r.Func == nil:
			r.Func, r.Match = f, MatchRenumbered
		default:
			r.Match = MatchAmbiguous
			if sizeDistance(f.Size, e.Size) < sizeDistance(r.Func.Size, e.Size) {
				r.Func = f
			}
		}
	}
	return r
}

func sizeDistance(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}

// Rebind returns a copy of the plan whose entries and exclusions name the
// functions of a rebuilt image (new clone numbers, sections, objects,
// addresses and sizes), so the same choice can be rendered for, and
// verified against, the new build. Entries and exclusions that no longer
// resolve are left out; the resolutions say which entries, and how each
// matched. Exclusions keep their reason and are not re-derived: a
// boot-critical function new in the rebuilt image is not among them, and
// the prediction is not recomputed: plan again for those.
func (p *Plan) Rebind(funcs []Func) (*Plan, []Resolution) {
	res := Resolve(p.Entries, funcs)
	q := *p
	q.Entries = nil
	for _, r := range res {
		if r.Func != nil {
			e := entryOf(r.Func)
			e.Samples = r.Entry.Samples // samples were measured on the old image
			q.Entries = append(q.Entries, e)
		}
	}
	// The old exclusions name the old build's objects; rendered next to
	// the new entries they would make one object look like two.
	excluded := make([]Entry, len(p.Excluded))
	for k, x := range p.Excluded {
		excluded[k] = x.Entry
	}
	q.Excluded = nil
	for k, r := range Resolve(excluded, funcs) {
		if r.Func != nil {
			x := p.Excluded[k]
			x.Entry = entryOf(r.Func)
			x.Samples = r.Entry.Samples
			q.Excluded = append(q.Excluded, x)
		}
	}
	return &q, res
}
