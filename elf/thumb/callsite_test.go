// SPDX-License-Identifier: Apache-2.0

package thumb

import (
	"debug/elf"
	"testing"

	"github.com/tcmprof/tcmprof/internal/armtest"
)

// openCode opens path and returns a CodeReader over its loaded sections.
func openCode(t testing.TB, path string) (*elf.File, CodeReader) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	c, err := newELFCode(f)
	if err != nil {
		t.Fatal(err)
	}
	return f, c.Read
}

// TestCallSiteAgainstObjdump checks, for every call objdump finds in real
// images, that BLTarget decodes the same target and state, that CallSite
// maps the return address back to the call, and that no other instruction
// boundary is taken for a return address.
func TestCallSiteAgainstObjdump(t *testing.T) {
	e := armtest.BuildExtras(t)
	for _, path := range []string{e.ELF, e.BLX, e.Pure} {
		_, code := openCode(t, path)
		insns := armtest.Objdump(t, path)
		var bls, blxImm, blxReg, negatives int
		afterCall := map[uint32]bool{}
		for _, in := range insns {
			switch {
			case in.ARM:
				continue
			case in.HasTarget:
				target, toARM, ok := BLTarget(code, in.Addr)
				if !ok || target != in.Target || toARM != (in.Mnemonic == "blx") {
					t.Errorf("%s %#x %s %s: BLTarget = %#x toARM=%v ok=%v", path, in.Addr, in.Mnemonic, in.Operands, target, toARM, ok)
				}
				if in.Mnemonic == "bl" {
					bls++
				} else {
					blxImm++
				}
			case in.Mnemonic == "blx":
				blxReg++
			default:
				if _, _, ok := BLTarget(code, in.Addr); ok {
					t.Errorf("%s %#x %s: BLTarget accepted a non-call", path, in.Addr, in.Mnemonic)
				}
				continue
			}
			ret := in.Addr + in.Len
			afterCall[ret] = true
			if site, ok := CallSite(code, ret|1); !ok || site != in.Addr {
				t.Errorf("%s: CallSite(%#x) = %#x, %v; want the %s at %#x", path, ret|1, site, ok, in.Mnemonic, in.Addr)
			}
			if _, ok := CallSite(code, ret); ok {
				t.Errorf("%s: CallSite accepted %#x, which lacks the Thumb bit", path, ret)
			}
		}
		for _, in := range insns {
			if !in.ARM && !afterCall[in.Addr] {
				negatives++
				if site, ok := CallSite(code, in.Addr|1); ok {
					t.Errorf("%s: CallSite(%#x) = %#x but objdump shows no call before it (%s %s)", path, in.Addr|1, site, in.Mnemonic, in.Operands)
				}
			}
		}
		t.Logf("%s: %d bl, %d blx imm, %d blx reg, %d non-return addresses", path, bls, blxImm, blxReg, negatives)
		if bls == 0 || blxReg == 0 || (path == e.BLX && blxImm == 0) {
			t.Errorf("%s: the fixture lost its calls", path)
		}
	}
}

func TestCallSiteRejects(t *testing.T) {
	// A BL to itself at 0x1000 (f7ff fffe) followed by blx r3 (4798).
	mem := map[uint32][]byte{0x1000: {0xff, 0xf7, 0xfe, 0xff, 0x98, 0x47}}
	code := func(addr, n uint32) ([]byte, bool) {
		for base, b := range mem {
			if addr >= base && uint64(addr-base)+uint64(n) <= uint64(len(b)) {
				return b[addr-base : addr-base+n], true
			}
		}
		return nil, false
	}
	for _, tc := range []struct {
		lr   uint32
		site uint32
		ok   bool
	}{
		{0x1005, 0x1000, true},
		{0x1007, 0x1004, true},
		{0x1004, 0, false},     // no Thumb bit
		{0xFFFFFFF9, 0, false}, // EXC_RETURN, thread mode MSP
		{0xFFFFFFFD, 0, false}, // EXC_RETURN, thread mode PSP
		{0xFFFFFFE1, 0, false}, // EXC_RETURN with FP context
		{0x1003, 0, false},     // mid-instruction
		{0x2001, 0, false},     // outside the image
		{0x0001, 0, false},     // before the image, ret-4 underflows
	} {
		site, ok := CallSite(code, tc.lr)
		if site != tc.site || ok != tc.ok {
			t.Errorf("CallSite(%#x) = %#x, %v; want %#x, %v", tc.lr, site, ok, tc.site, tc.ok)
		}
	}
	if target, toARM, ok := BLTarget(code, 0x1000); !ok || toARM || target != 0x1000 {
		t.Errorf("BLTarget(bl .) = %#x, %v, %v", target, toARM, ok)
	}
}
