// SPDX-License-Identifier: Apache-2.0

// Package place ranks functions by busy samples per byte and plans which of
// them to move into ITCM under a byte budget, counting what each choice
// really costs in ITCM: alignment padding as GNU ld lays input sections out,
// and the long-branch veneers that calls between flash and ITCM need.
//
// The package is pure: it reads no files and works on Input, a plain
// description of one linked image (functions, call edges, ITCM occupancy)
// and its busy samples, which place/imageinput fills in from a build's
// ELF, map and object files. A Plan is data (see Plan), kept as JSON by
// WritePlanJSON; the linker package renders it for the build and verifies
// a rebuilt image against it.
package place

import (
	"errors"
	"fmt"

	"github.com/tcmprof/tcmprof/elf/board"
	"github.com/tcmprof/tcmprof/elf/mapfile"
	"github.com/tcmprof/tcmprof/elf/symname"
)

// FuncKey names a function so that the name survives a rebuild: the source
// file it was compiled from (DWARF DW_AT_name joined with DW_AT_comp_dir),
// the symbol's base name and the GCC clone suffix (".constprop.0",
// ".isra.1", ".part.0", ".cold"...; empty for none), split by
// symname.SplitClone.
// Static functions with the same base name in different files stay apart
// because Source differs.
type FuncKey struct {
	Source string `json:"source,omitempty"`
	Base   string `json:"base"`
	Clone  string `json:"clone,omitempty"`
}

func (k FuncKey) String() string {
	name := k.Name()
	if k.Source == "" {
		return name
	}
	return name + " (" + k.Source + ")"
}

// Name is the function's name without its source: the base name with
// the clone suffix as GCC writes it ("run_burst [clone .isra.0]").
func (k FuncKey) Name() string { return symname.WithClone(k.Base, k.Clone) }

// KeyFor builds the FuncKey of symbol compiled from source.
func KeyFor(source, symbol string) FuncKey {
	base, clone := symname.SplitClone(symbol)
	return FuncKey{Source: source, Base: base, Clone: clone}
}

// Func is one function of the linked image, one per input section: the
// integrator drops aliases (several symbols at one address) and keeps one.
type Func struct {
	Key    FuncKey `json:"key"`
	Symbol string  `json:"symbol"` // full ELF symbol name, clone suffix included
	// Section is the input section that holds the function and nothing
	// else, as named in its object file: ".text.foo" with
	// -ffunction-sections, but also ".text.startup.main",
	// ".text.unlikely.foo", or plain ".text" for an object whose .text is
	// this one function (newlib's lib_a-memcpy.o). Empty when the function
	// shares its input section with others (plain .text of an object built
	// without -ffunction-sections): it can only move with all of them.
	Section string `json:"section"`
	// Object is the object file as the linker names it in the map file
	// ("CMakeFiles/app.dir/src/ip.c.obj"); for an archive member it is the
	// member name ("ip.o") and Archive is the archive's path.
	Object  string `json:"object,omitempty"`
	Archive string `json:"archive,omitempty"`
	Addr    uint32 `json:"addr"` // start address, Thumb bit cleared
	// Size is the size of the input section (from the map file or the
	// object's section header). It can exceed the symbol's st_size by the
	// tail padding the assembler adds; the section is what the linker moves.
	Size  uint32 `json:"size"`
	Align uint32 `json:"align"` // the input section's sh_addralign (power of two; 0 is taken as 1)
	// Region is the board's name of the memory region the function is in
	// ("FLASH", "ITCM", ...): ld builds a stub group per region. Kind is
	// its kind, what reports show ("flash", "itcm", ...). Whether a
	// function is in ITCM is decided by address, not by these.
	Region  string           `json:"region,omitempty"`
	Kind    board.RegionKind `json:"kind,omitempty"`
	Samples int              `json:"samples"` // busy samples whose PC falls in the function
	// Stalls is the estimate of how many of Samples are instruction-fetch
	// stalls (StallSamples): what moving the function to ITCM removes.
	Stalls float64 `json:"stalls,omitempty"`
	// Lines split the estimate over the function's sampled cache lines,
	// for the cache-pressure prediction of the code left in flash.
	Lines []LineHeat `json:"lines,omitempty"`
	// WorkloadLines, for a mix of captures (Input.WorkloadScale), are the
	// line heat of each workload's own capture, in its own samples.
	WorkloadLines [][]LineHeat `json:"workload_lines,omitempty"`
	// Misses is what a model run of this image measured: the line fills
	// charged to the function (tcmprof sim --json). 0 when unknown; only
	// the misses objective, the reference that needs a trace, reads it.
	Misses int64 `json:"misses,omitempty"`
	// Pin, when not empty, says why the function must never move (e.g.
	// "vector table", "veneer", "sampler code"). The planner also pins
	// boot-critical code by itself (see Input.BootRoots).
	Pin string `json:"pin,omitempty"`
}

// Library is the function's library label, as reports give it
// (mapfile.LibraryName): "libnet.a" for an archive member, else the object.
func (f *Func) Library() string { return mapfile.LibraryName(f.Archive, f.Object) }

// Edge is a direct call (BL) or tail call (B.W) from the function that
// starts at Caller to the function that starts at Callee, made by the
// instruction at Site. Edges must be resolved through existing veneers: a
// call that reaches foo through __foo_veneer is an edge to foo. Site orders
// a boot root's calls around its call to the ITCM copy (Input.BootCopies);
// 0 when unknown, which counts as before the copy.
type Edge struct {
	Caller uint32 `json:"caller"`
	Callee uint32 `json:"callee"`
	Site   uint32 `json:"site,omitempty"`
}

// Input is what the planner knows about one image and its profile.
type Input struct {
	// Funcs lists every function of the image (not only sampled ones):
	// call edges into unsampled functions decide the veneers a plan costs.
	Funcs []Func
	Edges []Edge
	// BusySamples is the number of non-idle samples in the profile, the
	// denominator of every share.
	BusySamples int
	// ITCM address range and the bytes already used in it by this image
	// (existing ITCM code, its veneers, the vector table or guard gap if any).
	ITCMStart, ITCMSize, ITCMUsed uint32
	// BootRoots are symbols that run before the ITCM copy (reset handler,
	// early hooks, the copy routine itself). They and the functions they
	// call before the copy, transitively, stay where they are.
	BootRoots []string
	// BootCopies are the routines that copy the ITCM code from flash. In a
	// root that calls one, only the calls at or below the address of its
	// last call to a copy routine run before ITCM is filled: boot code is
	// straight-line, so address order is execution order, and what follows
	// (main, the kernel) may move. Roots that call no copy routine, and
	// every function reached from a root (the copy routines included),
	// count with all their calls. Empty: every root's calls count.
	BootCopies []string
	BuildID    string // hex GNU build-id of the image, recorded in the Plan
	// ICache is the board's instruction cache and FillPenalty the cycles
	// a line fill from flash costs (imageinput sets
	// board.FlashLineFillCycles, the cache model's default too): with
	// Func.Lines they predict how the cache treats the code a plan leaves
	// in flash.
	// A zero geometry leaves the prediction out.
	ICache      board.CacheGeometry
	FillPenalty float64
	// Shift says where the code in flash moves when the ITCM block grows;
	// zero when unknown (then only the moved bytes before code shift it).
	Shift FlashShift
	// WorkloadScale, when the profile mixes several workloads' captures,
	// is per workload the mix's samples per sample of its own capture
	// (sample.Copies), and Func.WorkloadLines its line heat. The workloads
	// run at different times, so the cache-pressure prediction sees each
	// one's lines apart: pooled, the lines of one would look as if they
	// competed for the sets with the other's.
	WorkloadScale []float64
}

// FlashShift is how the ITCM output section's load image sits in flash
// before the code: it starts at Load and holds Size bytes (in 8-byte
// steps); the code section after it (.text) starts at the first multiple
// of CodeAlign after it, at CodeStart now.
type FlashShift struct {
	Load, Size, CodeStart, CodeAlign uint32
}

// InRange reports whether addr lies in the size bytes from start.
func InRange(addr, start, size uint32) bool {
	return addr >= start && uint64(addr) < uint64(start)+uint64(size)
}

// InITCM reports whether addr lies in the ITCM range.
func (in *Input) InITCM(addr uint32) bool { return InRange(addr, in.ITCMStart, in.ITCMSize) }

// Validate checks the Input for the mistakes that would make a plan wrong
// rather than fail: duplicate sections, impossible sizes and alignments,
// samples that do not add up.
func (in *Input) Validate() error {
	if in.ITCMSize == 0 {
		return errors.New("ITCM size is 0")
	}
	if in.ITCMUsed > in.ITCMSize {
		return fmt.Errorf("ITCM used %d bytes exceeds its size %d", in.ITCMUsed, in.ITCMSize)
	}
	if in.BusySamples < 0 {
		return fmt.Errorf("negative busy sample count %d", in.BusySamples)
	}
	type sectionID struct{ archive, object, section string }
	seen := make(map[sectionID]string)
	addrs := make(map[uint32]string)
	total := 0
	for i := range in.Funcs {
		f := &in.Funcs[i]
		if f.Symbol == "" {
			return fmt.Errorf("function %d at %#x has no symbol name", i, f.Addr)
		}
		if f.Size == 0 {
			return fmt.Errorf("function %s has size 0", f.Symbol)
		}
		if f.Align&(f.Align-1) != 0 {
			return fmt.Errorf("function %s has alignment %d, not a power of two", f.Symbol, f.Align)
		}
		if f.Samples < 0 {
			return fmt.Errorf("function %s has a negative sample count", f.Symbol)
		}
		if f.WorkloadLines != nil && len(f.WorkloadLines) != len(in.WorkloadScale) {
			return fmt.Errorf("function %s has the line heat of %d workloads, the input %d", f.Symbol, len(f.WorkloadLines), len(in.WorkloadScale))
		}
		if other, dup := addrs[f.Addr]; dup {
			return fmt.Errorf("functions %s and %s both start at %#x (drop aliases)", other, f.Symbol, f.Addr)
		}
		addrs[f.Addr] = f.Symbol
		if f.Section != "" {
			id := sectionID{f.Archive, f.Object, f.Section}
			if other, dup := seen[id]; dup {
				return fmt.Errorf("functions %s and %s share input section %s of %s", other, f.Symbol, f.Section, f.Object)
			}
			seen[id] = f.Symbol
		}
		total += f.Samples
	}
	if total > in.BusySamples {
		return fmt.Errorf("functions hold %d samples, more than the %d busy samples", total, in.BusySamples)
	}
	return nil
}
