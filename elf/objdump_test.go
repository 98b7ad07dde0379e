// SPDX-License-Identifier: Apache-2.0

package elf

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// objdumpInsn is one instruction line of `arm-none-eabi-objdump -d`.
type objdumpInsn struct {
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

// objdump disassembles path with the binutils oracle and returns every
// instruction line, data (.word/.short) excluded.
func objdump(t testing.TB, path string) []objdumpInsn {
	t.Helper()
	var out []objdumpInsn
	fn := ""
	for _, line := range strings.Split(runTool(t, "arm-none-eabi-objdump", "-d", "-w", path), "\n") {
		if m := objdumpFunc.FindStringSubmatch(line); m != nil {
			fn = m[2]
			continue
		}
		m := objdumpLine.FindStringSubmatch(line)
		if m == nil || strings.HasPrefix(m[3], ".") {
			continue
		}
		a, _ := strconv.ParseUint(m[1], 16, 32)
		in := objdumpInsn{Addr: uint32(a), Mnemonic: m[3], Operands: m[4], Func: fn, Len: 2}
		if len(m[2]) > 4 {
			in.Len = 4
		}
		in.ARM = len(m[2]) == 8
		if d := objdumpDest.FindStringSubmatch(m[4]); d != nil && (in.Mnemonic == "bl" || in.Mnemonic == "blx") {
			v, _ := strconv.ParseUint(d[1], 16, 32)
			in.Target, in.TargetSym, in.HasTarget = uint32(v), d[2], true
		}
		out = append(out, in)
	}
	if len(out) == 0 {
		t.Fatalf("objdump -d %s: no instructions parsed", path)
	}
	return out
}
