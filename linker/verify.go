// SPDX-License-Identifier: Apache-2.0

package linker

import (
	"fmt"

	"github.com/tcmprof/tcmprof/place"
)

// Image is what verify needs to know about the rebuilt image.
type Image struct {
	// Funcs lists every function of the new image with Key, Symbol,
	// Section, Object, Addr and Size (the elf package fills it like the
	// planner's input).
	Funcs []place.Func
	// ITCMStart, ITCMSize: the ITCM range; ITCMUsed: bytes from ITCMStart to
	// the end of the last ITCM section (what place.Input.ITCMUsed means).
	ITCMStart, ITCMSize, ITCMUsed uint32
	// Veneers is the number of long-branch veneer symbols (__*_veneer) GNU
	// ld created.
	Veneers int
}

func (img *Image) inITCM(addr uint32) bool { return place.InRange(addr, img.ITCMStart, img.ITCMSize) }

// Violation kinds.
const (
	ViolationMissing    = "missing"          // a planned function is not in the new image
	ViolationNotInITCM  = "not in ITCM"      // a planned function stayed out of ITCM
	ViolationExcluded   = "excluded in ITCM" // a function the plan excluded is now in ITCM
	ViolationITCMUse    = "ITCM use"         // more ITCM used than predicted, beyond tolerance
	ViolationVeneers    = "veneers"          // more veneers than predicted, beyond tolerance
	ViolationITCMExceed = "ITCM overflow"    // used bytes exceed the ITCM size
	ViolationFlashGroup = "flash group"      // the plan's flash group is not linked together
)

// Violation is one way the rebuilt image departs from the plan.
type Violation struct {
	Kind   string
	Name   string // the function concerned, if any
	Detail string
}

func (v Violation) String() string {
	if v.Name == "" {
		return v.Kind + ": " + v.Detail
	}
	return v.Kind + ": " + v.Name + ": " + v.Detail
}

// Report is the outcome of Verify.
type Report struct {
	Resolved          []place.Resolution
	ITCMUsed          int64
	PredictedITCMUsed int64
	ITCMTolerance     int64
	Veneers           int
	PredictedVeneers  int
	VeneerTolerance   int
	Violations        []Violation
	// Notes are departures that are not failures: renumbered clones, less
	// ITCM or fewer veneers than predicted, unplanned newcomers in ITCM.
	Notes []string
	// GroupFrom and GroupSpan are where the plan's flash group lies in the
	// image, from its first member to the end of its last, and
	// GroupTogether what its members take laid out one after the other
	// (checkFlashGroup); zero without a group.
	GroupFrom, GroupSpan, GroupTogether uint64
}

// ITCMTolerance is how far the rebuilt image's ITCM use may exceed the
// prediction: 16 bytes for the stub section's alignment padding, plus 4
// bytes per planned function. The per-function allowance absorbs what the
// model does not see: with Zephyr, other ITCM_TEXT relocations (the SoC's
// own) interleave with the plan in gen_relocate_app.py's sort order and
// shift the alignment padding (at most 4 bytes per boundary for Thumb code
// aligned to 4); and rebuilt functions change size by a few bytes when
// literal pools or branch encodings change.
func ITCMTolerance(p *place.Plan) int64 { return 16 + 4*int64(len(p.Entries)) }

// VeneerTolerance is how many more veneers than predicted are accepted:
// 2, or 10 % of the prediction if more. Veneers follow the call graph the
// planner was given (direct BL and B.W from disassembly); calls the
// disassembly misses, such as those the compiler adds when a rebuilt
// function inlines differently, show up here.
func VeneerTolerance(p *place.Plan) int {
	return max(2, p.Prediction.Veneers/10)
}

// Verify checks a rebuilt image against its plan: every planned function is
// in ITCM, no excluded function moved into ITCM, and ITCM use and veneer
// count are within tolerance of the prediction. A nil error with
// violations is the normal "plan not met" outcome; the caller exits
// non-zero when len(Report.Violations) > 0.
func Verify(p *place.Plan, img *Image) (*Report, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if img.ITCMSize == 0 {
		return nil, fmt.Errorf("image has no ITCM range")
	}
	r := &Report{
		ITCMUsed: int64(img.ITCMUsed), PredictedITCMUsed: p.Prediction.ITCMUsed, ITCMTolerance: ITCMTolerance(p),
		Veneers: img.Veneers, PredictedVeneers: p.Prediction.Veneers, VeneerTolerance: VeneerTolerance(p),
	}
	planned := make(map[*place.Func]bool)
	r.Resolved = place.Resolve(p.Entries, img.Funcs)
	for _, res := range r.Resolved {
		name := res.Entry.Key.String()
		switch res.Match {
		case place.MatchMissing:
			r.Violations = append(r.Violations, Violation{ViolationMissing, name, "no function of this name in the new image"})
			continue
		case place.MatchRenumbered:
			r.Notes = append(r.Notes, fmt.Sprintf("%s is now %s", name, res.Func.Symbol))
		case place.MatchAmbiguous:
			r.Notes = append(r.Notes, fmt.Sprintf("%s matches several renumbered clones; checked %s", name, res.Func.Symbol))
		}
		planned[res.Func] = true
		if !img.inITCM(res.Func.Addr) {
			r.Violations = append(r.Violations, Violation{ViolationNotInITCM, name, fmt.Sprintf("%s is at %#x", res.Func.Symbol, res.Func.Addr)})
		}
	}

	// An excluded function that was in ITCM in the planned-from image (by
	// its address then, whatever its reason: pinned vector code can live
	// there too) may stay there; any other must not arrive. accounted
	// holds the ITCM functions explained either way.
	accounted := make(map[*place.Func]bool)
	excluded := make([]place.Entry, len(p.Excluded))
	for k, x := range p.Excluded {
		excluded[k] = x.Entry
	}
	for k, res := range place.Resolve(excluded, img.Funcs) {
		x := &p.Excluded[k]
		if res.Func == nil || planned[res.Func] {
			continue
		}
		if p.InITCM(x.Addr) {
			accounted[res.Func] = true
			continue
		}
		if img.inITCM(res.Func.Addr) {
			accounted[res.Func] = true
			r.Violations = append(r.Violations, Violation{ViolationExcluded, x.Key.String(),
				fmt.Sprintf("excluded (%s) but at %#x", x.Reason, res.Func.Addr)})
		}
	}
	for i := range img.Funcs {
		f := &img.Funcs[i]
		if img.inITCM(f.Addr) && !planned[f] && !accounted[f] {
			r.Notes = append(r.Notes, fmt.Sprintf("%s is in ITCM but neither planned nor there before", f.Key))
		}
	}

	if img.ITCMUsed > img.ITCMSize {
		r.Violations = append(r.Violations, Violation{ViolationITCMExceed, "", fmt.Sprintf("%d bytes used of %d", img.ITCMUsed, img.ITCMSize)})
	}
	r.checkPrediction(ViolationITCMUse, "ITCM use %d bytes", r.ITCMUsed, r.PredictedITCMUsed, r.ITCMTolerance)
	r.checkPrediction(ViolationVeneers, "%d veneers", int64(r.Veneers), int64(r.PredictedVeneers), int64(r.VeneerTolerance))
	r.checkFlashGroup(p, img)
	return r, nil
}

// checkFlashGroup checks that the plan's flash group (place.Plan.FlashGroup)
// lies together in flash: its members outside ITCM, and from the first to
// the end of the last within the I-cache's size (Plan.GroupWithin), so
// that none of its lines share a set beyond the ways, which the
// prediction counted on. A group the build did not link together (its
// fragment not INCLUDEd) leaves the sampled code spread among cold code.
// Within the cache but over what its members take laid out one after the
// other (with their alignment and 4 bytes each for what a rebuild
// changes) is a note: other code lies among them, as when a relocation
// pattern also takes a section of another object of the same name.
func (r *Report) checkFlashGroup(p *place.Plan, img *Image) {
	if len(p.FlashGroup) == 0 {
		return
	}
	lo, hi, together := uint64(1<<32), uint64(0), uint64(0)
	for _, res := range place.Resolve(p.FlashGroup, img.Funcs) {
		name := res.Entry.Key.String()
		if res.Func == nil {
			r.Violations = append(r.Violations, Violation{ViolationMissing, name, "of the flash group: no function of this name in the new image"})
			continue
		}
		f := res.Func
		if img.inITCM(f.Addr) {
			r.Violations = append(r.Violations, Violation{ViolationFlashGroup, name, fmt.Sprintf("%s is in ITCM at %#x", f.Symbol, f.Addr)})
			continue
		}
		a := uint64(max(f.Align, 1))
		together = (together+a-1)/a*a + uint64(f.Size) + 4
		lo, hi = min(lo, uint64(f.Addr)), max(hi, uint64(f.Addr)+uint64(f.Size))
	}
	if hi <= lo {
		return
	}
	r.GroupFrom, r.GroupSpan, r.GroupTogether = lo, hi-lo, together
	within := uint64(p.GroupWithin)
	if within == 0 {
		within = together // a plan that does not say
	}
	switch {
	case hi-lo > within:
		how := "is the ld-text fragment INCLUDEd in a flash output section before .text?"
		if p.Layout == place.LayoutZephyr {
			how = "was the image built with the plan's FLASH_TEXT relocations?"
		}
		r.Violations = append(r.Violations, Violation{ViolationFlashGroup, "",
			fmt.Sprintf("its %d functions are spread over %d bytes from %#x, more than the %d they must lie within; linked together they take %d (%s)",
				len(p.FlashGroup), hi-lo, lo, within, together, how)})
	case hi-lo > together:
		r.Notes = append(r.Notes, fmt.Sprintf("the flash group lies within %d bytes, within the %d it must, but its functions take %d: other code lies among them", hi-lo, within, together))
	}
}

// checkPrediction compares a measured count with its prediction: more than
// tolerance over it is a violation of kind, any other difference a note.
// what formats the count ("%d veneers").
func (r *Report) checkPrediction(kind, what string, got, predicted, tolerance int64) {
	msg := fmt.Sprintf(what+", predicted %d", got, predicted)
	switch d := got - predicted; {
	case d > tolerance:
		r.Violations = append(r.Violations, Violation{kind, "", fmt.Sprintf("%s (tolerance +%d)", msg, tolerance)})
	case d != 0:
		r.Notes = append(r.Notes, msg)
	}
}
