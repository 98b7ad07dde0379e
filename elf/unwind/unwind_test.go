// SPDX-License-Identifier: Apache-2.0

package unwind

import (
	"encoding/binary"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tcmprof/tcmprof/elf/image"
	"github.com/tcmprof/tcmprof/internal/armtest"
)

// readelfRule is one row of `readelf -wF`: from loc on, CFA = r13 + cfa,
// and the return address is saved at CFA + ra (ra 0: still in LR).
type readelfRule struct {
	loc     uint32
	cfa, ra int64
}

var readelfCFA = regexp.MustCompile(`^r13\+(\d+)$`)

// readelfRules reads the CFA and return-address columns of every FDE of
// path with the binutils oracle, by FDE range (several FDEs may start at 0:
// --gc-sections keeps the dead ones there).
func readelfRules(t testing.TB, path string) map[[2]uint32][]readelfRule {
	t.Helper()
	rules := map[[2]uint32][]readelfRule{}
	var fde [2]uint32
	cfaCol, raCol := -1, -1
	for _, line := range strings.Split(armtest.Output(t, "arm-none-eabi-readelf", "-wF", path), "\n") {
		if m := readelfFDEHeader.FindStringSubmatch(line); m != nil {
			b, _ := strconv.ParseUint(m[1], 16, 32)
			e, _ := strconv.ParseUint(m[2], 16, 32)
			fde = [2]uint32{uint32(b), uint32(e)}
			continue
		}
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == "LOC" {
			cfaCol, raCol = -1, -1
			for i, c := range f {
				switch c {
				case "CFA":
					cfaCol = i
				case "ra":
					raCol = i
				}
			}
			continue
		}
		if !readelfRowLine.MatchString(line) || cfaCol < 0 || cfaCol >= len(f) {
			continue
		}
		m := readelfCFA.FindStringSubmatch(f[cfaCol])
		if m == nil {
			continue
		}
		loc, _ := strconv.ParseUint(f[0], 16, 32)
		r := readelfRule{loc: uint32(loc)}
		r.cfa, _ = strconv.ParseInt(m[1], 10, 64)
		if raCol >= 0 && strings.HasPrefix(f[raCol], "c") {
			r.ra, _ = strconv.ParseInt(f[raCol][1:], 10, 64)
		}
		rules[fde] = append(rules[fde], r)
	}
	return rules
}

// ruleAt is the row in force at pc inside the FDE of function fn.
func ruleAt(t testing.TB, rules map[[2]uint32][]readelfRule, fn *image.Function, pc uint32) readelfRule {
	t.Helper()
	var got readelfRule
	found := false
	for _, r := range rules[[2]uint32{fn.Addr, fn.Addr + fn.Size}] {
		if r.loc <= pc {
			got, found = r, true
		}
	}
	if !found {
		t.Fatalf("readelf has no row for %#x in the FDE of %s", pc, fn.Name)
	}
	return got
}

// chain is a call stack of the extras image built from readelf's rules:
// alpha_sum (a leaf: its return address is in LR), called by itcm_hot
// (through a veneer; return address saved at CFA-4), called by main, whose
// return address is 0 (the outermost frame).
type chain struct {
	u                       *Unwinder
	pc, hotCall, mainCall   uint32 // the sampled PC and the two call sites
	sp, cfaSum, cfaHot, top uint32 // SP and the CFA of each frame
	snapshot                Snapshot
	hotRAAt, mainRAAt       uint32 // where the return addresses lie
}

func newChain(t testing.TB) *chain {
	t.Helper()
	e := armtest.BuildExtras(t)
	img, err := image.Open(e.ELF)
	if err != nil {
		t.Fatal(err)
	}
	u, err := New(img)
	if err != nil || !u.HasCFI() {
		t.Fatalf("New: %v", err)
	}
	rules := readelfRules(t, e.ELF)
	c := &chain{u: u}
	var sumAt, hotAt, mainAt *image.Function
	for _, in := range armtest.Objdump(t, e.ELF) {
		switch {
		case in.Func == "alpha_sum" && in.Mnemonic == "mul.w":
			c.pc = in.Addr // inside the loop, after the push
		case in.Func == "itcm_hot" && in.HasTarget && strings.Contains(in.TargetSym, "alpha_sum"):
			c.hotCall = in.Addr
		case in.Func == "main" && in.HasTarget && strings.Contains(in.TargetSym, "itcm_hot"):
			c.mainCall = in.Addr
		}
	}
	for _, f := range img.Functions() {
		switch f.Name {
		case "alpha_sum":
			sumAt = f
		case "itcm_hot":
			hotAt = f
		case "main":
			mainAt = f
		}
	}
	if c.pc == 0 || c.hotCall == 0 || c.mainCall == 0 || sumAt == nil || hotAt == nil || mainAt == nil {
		t.Fatalf("objdump: alpha_sum's mul %#x, itcm_hot's call %#x, main's call %#x", c.pc, c.hotCall, c.mainCall)
	}
	sum, hot, main := ruleAt(t, rules, sumAt, c.pc), ruleAt(t, rules, hotAt, c.hotCall), ruleAt(t, rules, mainAt, c.mainCall)
	if sum.ra != 0 || hot.ra == 0 || main.ra == 0 {
		t.Fatalf("readelf: alpha_sum ra %d (want in LR), itcm_hot ra %d, main ra %d (want saved)", sum.ra, hot.ra, main.ra)
	}
	c.sp = 0x20001000
	c.cfaSum = c.sp + uint32(sum.cfa)
	c.cfaHot = c.cfaSum + uint32(hot.cfa)
	c.top = c.cfaHot + uint32(main.cfa)
	c.hotRAAt, c.mainRAAt = uint32(int64(c.cfaHot)+hot.ra), uint32(int64(c.top)+main.ra)
	words := make([]uint32, (c.top-c.sp)/4)
	for i := range words {
		words[i] = 0xA5A5A5A5
	}
	words[(c.hotRAAt-c.sp)/4] = (c.mainCall + 4) | 1
	words[(c.mainRAAt-c.sp)/4] = 0
	c.snapshot = Snapshot{PC: c.pc, SP: c.sp, LR: (c.hotCall + 4) | 1, Words: words}
	return c
}

// The unwinder follows the rules readelf prints for the image's CFI:
// through a leaf whose return address is in LR, a caller that saved it,
// and into the outermost frame.
func TestUnwindFollowsReadelfRules(t *testing.T) {
	c := newChain(t)
	frames, stop := c.u.Unwind(c.snapshot)
	want := []Frame{{PC: c.pc, SP: c.sp}, {PC: c.hotCall, SP: c.cfaSum}, {PC: c.mainCall, SP: c.cfaHot}}
	if !reflect.DeepEqual(frames, want) || stop != StopOutermost {
		t.Errorf("Unwind = %+v, %v; want %+v, complete", frames, stop, want)
	}
}

func TestUnwindStops(t *testing.T) {
	c := newChain(t)
	at := func(addr uint32) int { return int((addr - c.sp) / 4) }
	for _, tc := range []struct {
		name   string
		change func(s *Snapshot)
		frames int
		stop   Stop
	}{
		{"main's return address above the snapshot", func(s *Snapshot) { s.Words = s.Words[:at(c.mainRAAt)] }, 3, StopDepth},
		{"itcm_hot's return address above the snapshot", func(s *Snapshot) { s.Words = s.Words[:at(c.hotRAAt)] }, 2, StopDepth},
		{"a return address after no call", func(s *Snapshot) { s.Words[at(c.hotRAAt)] = c.mainCall | 1 }, 2, StopNotACall},
		{"an LR after no call", func(s *Snapshot) { s.LR = c.pc | 1 }, 1, StopNotACall},
		{"a PC without CFI", func(s *Snapshot) { s.PC = 0x70000000 }, 1, StopNoCFI},
		{"the stack's top right above main's SP", func(s *Snapshot) {
			s.Words, s.AtTop = s.Words[:at(c.cfaHot)], true
		}, 3, StopOutermost},
		{"an exception entered from the process stack", func(s *Snapshot) { s.LR = 0xFFFFFFFD }, 1, StopException},
		{"an exception frame above the snapshot", func(s *Snapshot) { s.LR, s.Words = 0xFFFFFFF1, s.Words[:at(c.cfaSum)+4] }, 1, StopDepth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := c.snapshot
			s.Words = append([]uint32(nil), s.Words...)
			tc.change(&s)
			frames, stop := c.u.Unwind(s)
			if len(frames) != tc.frames || stop != tc.stop {
				t.Errorf("%d frames, %v; want %d, %v: %+v", len(frames), stop, tc.frames, tc.stop, frames)
			}
		})
	}
}

// A handler on the main stack preempted by another: the unwinder goes on
// through the exception frame (basic or FP-extended, with or without the
// aligner word) into the interrupted function, at its PC, with its LR.
func TestUnwindThroughAnExceptionFrame(t *testing.T) {
	c := newChain(t)
	for _, tc := range []struct {
		name      string
		excReturn uint32
		words     uint32 // frame words the core stacked
		xpsr      uint32
	}{
		{"basic frame", 0xFFFFFFF1, 8, 0x01000000},
		{"basic frame with the aligner word", 0xFFFFFFF1, 9, 0x01000200},
		{"FP-extended frame", 0xFFFFFFE1, 26, 0x01000000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// alpha_sum (its LR is EXC_RETURN) interrupted itcm_hot just
			// after its call: itcm_hot's frame sits above the exception frame.
			interrupted := c.hotCall + 4
			hotSP := c.cfaSum + 4*tc.words
			hotCFA := hotSP + (c.cfaHot - c.cfaSum)
			words := make([]uint32, (hotCFA-c.sp)/4)
			frame := (c.cfaSum - c.sp) / 4
			words[frame+5] = 0x60000001                     // the interrupted LR: not used, itcm_hot saved its own
			words[frame+6] = interrupted                    // the interrupted PC
			words[frame+7] = tc.xpsr                        // xPSR
			words[(hotCFA-4-c.sp)/4] = (c.mainCall + 4) | 1 // itcm_hot's saved return address
			frames, stop := c.u.Unwind(Snapshot{PC: c.pc, SP: c.sp, LR: tc.excReturn, Words: words})
			want := []Frame{{PC: c.pc, SP: c.sp}, {PC: interrupted, SP: hotSP, Interrupted: true}, {PC: c.mainCall, SP: hotCFA}}
			if !reflect.DeepEqual(frames, want) || stop != StopDepth {
				t.Errorf("Unwind = %+v, %v; want %+v, truncated by depth", frames, stop, want)
			}
		})
	}
}

// FuzzUnwind feeds the unwinder stack snapshots of any content: every
// walk ends, within MaxFrames frames, with SPs that never go down,
// and never panics.
func FuzzUnwind(f *testing.F) {
	c := newChain(f)
	seed := func(s Snapshot) {
		b := make([]byte, 4*len(s.Words))
		for i, w := range s.Words {
			binary.LittleEndian.PutUint32(b[4*i:], w)
		}
		f.Add(s.PC, s.SP, s.LR, b, s.AtTop)
	}
	seed(c.snapshot)
	loop := c.snapshot
	loop.Words = []uint32{(c.hotCall + 4) | 1, (c.hotCall + 4) | 1, (c.hotCall + 4) | 1}
	seed(loop)
	seed(Snapshot{PC: c.pc, SP: 0xFFFFFFF0, LR: 0xFFFFFFF1, Words: make([]uint32, 40)})
	f.Fuzz(func(t *testing.T, pc, sp, lr uint32, mem []byte, atTop bool) {
		words := make([]uint32, min(len(mem)/4, 64))
		for i := range words {
			words[i] = binary.LittleEndian.Uint32(mem[4*i:])
		}
		frames, stop := c.u.Unwind(Snapshot{PC: pc, SP: sp, LR: lr, Words: words, AtTop: atTop})
		if len(frames) == 0 || len(frames) > MaxFrames {
			t.Fatalf("%d frames (%v)", len(frames), stop)
		}
		for i := 1; i < len(frames); i++ {
			if frames[i].SP < frames[i-1].SP {
				t.Fatalf("frame %d's SP %#x below frame %d's %#x", i, frames[i].SP, i-1, frames[i-1].SP)
			}
		}
	})
}

var noCFIBuild = &armtest.Build{
	Prefix: "tcmprof-elf-nocfi",
	Src:    "testdata/nocfi",
	Recipe: []string{"unwind_test.go"},
	Make: func(src, out string) error {
		gcc := func(args ...string) error {
			return armtest.Run(out, "arm-none-eabi-gcc", append(append([]string(nil), armtest.CFlags...), args...)...)
		}
		if err := gcc("-c", filepath.Join(src, "main.c"), "-o", "main.o"); err != nil {
			return err
		}
		if err := gcc("-c", filepath.Join(src, "leaf.S"), "-o", "leaf.o"); err != nil {
			return err
		}
		return gcc("-nostdlib", "-nostartfiles", "-Wl,-Ttext=0x60000000", "-Wl,-e,main", "-o", "nocfi.elf", "main.o", "leaf.o")
	},
}

// An assembly function has no subprogram DIE, but the line table of the
// unit GNU as made for it (-g) names its source: Zephyr's z_arm_svc
// (swap_helper.S) is planned by that file.
func TestAssemblyFunctionSourceFromItsLineTable(t *testing.T) {
	img, err := image.Open(filepath.Join(noCFIBuild.Dir(t), "nocfi.elf"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"copy_words": "leaf.S", "pushing_sum": "leaf.S", "main": "main.c"}
	for _, f := range img.Functions() {
		if suffix, ok := want[f.Name]; ok {
			if !strings.HasSuffix(f.Source, "/testdata/nocfi/"+suffix) {
				t.Errorf("%s: source %q, want .../testdata/nocfi/%s", f.Name, f.Source, suffix)
			}
			delete(want, f.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("functions missing: %v", want)
	}
}

// Code without CFI, called from C: in copy_words, which leaves SP and LR
// alone like newlib's assembly memcpy, the walk goes on to main through
// LR (as gdb's prologue analysis does); in pushing_sum, which saved LR
// where no CFI says, it stops. Both PCs are the loops' loads.
func TestUnwindThroughAFramelessLeafWithoutCFI(t *testing.T) {
	path := filepath.Join(noCFIBuild.Dir(t), "nocfi.elf")
	img, err := image.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	u, err := New(img)
	if err != nil || !u.HasCFI() {
		t.Fatalf("New: %v", err)
	}
	var copyLoad, sumLoad, mainCall uint32
	var mainFn *image.Function
	for _, in := range armtest.Objdump(t, path) {
		switch {
		case in.Func == "copy_words" && strings.HasPrefix(in.Mnemonic, "ldr"):
			copyLoad = in.Addr
		case in.Func == "pushing_sum" && strings.HasPrefix(in.Mnemonic, "ldr"):
			sumLoad = in.Addr
		case in.Func == "main" && in.HasTarget && strings.Contains(in.TargetSym, "copy_words"):
			mainCall = in.Addr
		}
	}
	for _, f := range img.Functions() {
		if f.Name == "main" {
			mainFn = f
		}
	}
	if copyLoad == 0 || sumLoad == 0 || mainCall == 0 || mainFn == nil {
		t.Fatalf("objdump: copy_words' load %#x, pushing_sum's %#x, main's call %#x", copyLoad, sumLoad, mainCall)
	}
	// main's frame at its call, from readelf: its return address (0: the
	// outermost frame) at CFA+ra.
	mainRule := ruleAt(t, readelfRules(t, path), mainFn, mainCall)
	const sp = 0x20001000
	words := make([]uint32, mainRule.cfa/4)
	for i := range words {
		words[i] = 0xA5A5A5A5
	}
	words[(mainRule.cfa+mainRule.ra)/4] = 0
	lr := (mainCall + 4) | 1

	frames, stop := u.Unwind(Snapshot{PC: copyLoad, SP: sp, LR: lr, Words: words})
	want := []Frame{{PC: copyLoad, SP: sp}, {PC: mainCall, SP: sp}}
	if !reflect.DeepEqual(frames, want) || stop != StopOutermost {
		t.Errorf("in copy_words: %+v, %v; want %+v, complete", frames, stop, want)
	}
	frames, stop = u.Unwind(Snapshot{PC: sumLoad, SP: sp - 8, LR: lr, Words: append([]uint32{0, 0}, words...)})
	if len(frames) != 1 || stop != StopNoCFI {
		t.Errorf("in pushing_sum: %+v, %v; want one frame, no CFI", frames, stop)
	}
}

// framelessLeaf's instruction tests, on the encodings GNU as gives:
// what touches SP or LR, and what leaves them alone.
func TestFramelessLeafEncodings(t *testing.T) {
	for _, tc := range []struct {
		asm     string
		h1, h2  uint16 // h2 0: a 16-bit instruction
		touches bool
	}{
		{"push {r4, lr}", 0xB510, 0, true},
		{"pop {r4, pc}", 0xBD10, 0, true},
		{"sub sp, #8", 0xB082, 0, true},
		{"mov lr, r0", 0x4686, 0, true},
		{"mov sp, r1", 0x468D, 0, true},
		{"add sp, r2", 0x4495, 0, true},
		{"mov r0, sp", 0x4668, 0, false},
		{"bx lr", 0x4770, 0, false},
		{"add r4, r3", 0x441C, 0, false},
		{"ldr r1, [pc, #24]", 0x4906, 0, false},
		{"cbz r2, .+14", 0xB12A, 0, false},
		{"push.w {r4-r11, lr}", 0xE92D, 0x4FF0, true},
		{"ldmia.w sp!, {r4, lr}", 0xE8BD, 0x4010, true},
		{"ldmia.w r0, {r1, lr}", 0xE890, 0x4002, true},
		{"sub.w sp, sp, #64", 0xF1AD, 0x0D40, true},
		{"ldr.w lr, [r0]", 0xF8D0, 0xE000, true},
		{"mov.w lr, #0", 0xF04F, 0x0E00, true},
		{"vpush {d8}", 0xED2D, 0x8B02, true},
		{"msr msp, r0", 0xF380, 0x8808, true},
		{"ldr.w r3, [r1], #4", 0xF851, 0x3B04, false},
		{"str.w r3, [r0], #4", 0xF840, 0x3B04, false},
		{"orr.w r3, r1, r0", 0xEA41, 0x0300, false},
		{"ands.w r3, r3, #3", 0xF013, 0x0303, false},
	} {
		var got bool
		if tc.h2 == 0 {
			got = touchesSPOrLR16(tc.h1)
		} else {
			got = touchesSPOrLR32(tc.h1, tc.h2)
		}
		if got != tc.touches {
			t.Errorf("%s (%04x %04x): touches SP or LR = %v, want %v", tc.asm, tc.h1, tc.h2, got, tc.touches)
		}
	}
}
