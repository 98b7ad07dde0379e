// SPDX-License-Identifier: Apache-2.0

package armtest

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Insn is one instruction line of `arm-none-eabi-objdump -d`.
type Insn struct {
	Addr      uint32
	Len       uint32 // 2 or 4 (Thumb), 4 (ARM)
	ARM       bool   // an A32 instruction (printed as one 8-digit word)
	Mnemonic  string
	Operands  string
	Target    uint32 // for bl/blx <imm>: the address objdump prints
	TargetSym string
	HasTarget bool
	Func      string // the <symbol> header the line falls under
}

var (
	objdumpFunc = regexp.MustCompile(`^([0-9a-f]{8}) <(.+)>:$`)
	objdumpLine = regexp.MustCompile(`^\s*([0-9a-f]+):\t([0-9a-f]{4} [0-9a-f]{4}|[0-9a-f]{8}|[0-9a-f]{4})\s*\t(\S+)\s*(.*)$`)
	objdumpDest = regexp.MustCompile(`^([0-9a-f]+) <([^>+]+)(\+0x[0-9a-f]+)?>`)
)

// Objdump disassembles path with the binutils oracle and returns every
// instruction line, data (.word/.short) excluded.
func Objdump(t testing.TB, path string) []Insn {
	t.Helper()
	var out []Insn
	fn := ""
	for _, line := range strings.Split(Output(t, "arm-none-eabi-objdump", "-d", "-w", path), "\n") {
		if m := objdumpFunc.FindStringSubmatch(line); m != nil {
			fn = m[2]
			continue
		}
		m := objdumpLine.FindStringSubmatch(line)
		if m == nil || strings.HasPrefix(m[3], ".") {
			continue
		}
		a, _ := strconv.ParseUint(m[1], 16, 32)
		in := Insn{Addr: uint32(a), Mnemonic: m[3], Operands: m[4], Func: fn, Len: 2}
		if len(m[2]) > 4 {
			in.Len = 4
		}
		in.ARM = len(m[2]) == 8
		if in.Mnemonic == "bl" || in.Mnemonic == "blx" {
			in.Target, in.TargetSym, in.HasTarget = Destination(m[4])
		}
		out = append(out, in)
	}
	if len(out) == 0 {
		t.Fatalf("objdump -d %s: no instructions parsed", path)
	}
	return out
}

// Destination reads the address and symbol objdump prints for a branch
// operand ("8000104 <loop+0x8>"); ok is false when operand is not one.
func Destination(operand string) (addr uint32, sym string, ok bool) {
	d := objdumpDest.FindStringSubmatch(operand)
	if d == nil {
		return 0, "", false
	}
	v, _ := strconv.ParseUint(d[1], 16, 32)
	return uint32(v), d[2], true
}

var insnLine = regexp.MustCompile(`^\s*([0-9a-f]+):\t[0-9a-f]{4}(?: [0-9a-f]{4})?\s*\t(\S+)`)

// InstructionAddrs lists every instruction address objdump disassembles
// in the executable sections of path (literal pools, shown as .word,
// excluded).
func InstructionAddrs(t testing.TB, path string) []uint32 {
	t.Helper()
	out, err := exec.Command("arm-none-eabi-objdump", "-d", path).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	var addrs []uint32
	for _, line := range strings.Split(string(out), "\n") {
		m := insnLine.FindStringSubmatch(line)
		if m == nil || strings.HasPrefix(m[2], ".") {
			continue
		}
		a, err := strconv.ParseUint(m[1], 16, 32)
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, uint32(a))
	}
	if len(addrs) < 100 {
		t.Fatalf("objdump found only %d instructions in %s", len(addrs), path)
	}
	return addrs
}
