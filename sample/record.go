// SPDX-License-Identifier: Apache-2.0

package sample

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Fields is the set of per-record fields of a run (protocol §2).
type Fields uint8

// Record fields; FieldPC is always set.
const (
	FieldPC     Fields = 1 << 0
	FieldLR     Fields = 1 << 1
	FieldExc    Fields = 1 << 2
	FieldThread Fields = 1 << 3

	knownFields = FieldPC | FieldLR | FieldExc | FieldThread
)

// String lists the fields as the --fields flag spells them: "pc,lr,exc,thread".
func (f Fields) String() string {
	var names []string
	for _, n := range fieldNames {
		if f&n.f != 0 {
			names = append(names, n.name)
		}
	}
	if rest := f &^ knownFields; rest != 0 {
		names = append(names, fmt.Sprintf("0x%02x", uint8(rest)))
	}
	return strings.Join(names, ",")
}

var fieldNames = []struct {
	f    Fields
	name string
}{{FieldPC, "pc"}, {FieldLR, "lr"}, {FieldExc, "exc"}, {FieldThread, "thread"}}

// ParseFields parses a comma-separated field list ("pc", "pc,lr",
// "pc,lr,exc,thread"); "ctx" is short for exc,thread. PC is always added.
func ParseFields(s string) (Fields, error) {
	f := FieldPC
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(strings.ToLower(name))
		switch name {
		case "pc":
			f |= FieldPC
		case "lr":
			f |= FieldLR
		case "exc":
			f |= FieldExc
		case "thread":
			f |= FieldThread
		case "ctx":
			f |= FieldExc | FieldThread
		default:
			return 0, fmt.Errorf("unknown field %q (want pc, lr, exc, thread or ctx)", name)
		}
	}
	return f, nil
}

// Record is one sample. Fields not recorded in the run are zero.
type Record struct {
	Index  uint32 // record number since START
	PC, LR uint32
	Exc    uint16 // 0 = thread mode, else the active exception number
	Thread uint32
}

func zigzag(d int32) uint32   { return uint32(d<<1) ^ uint32(d>>31) }
func unzigzag(v uint32) int32 { return int32(v>>1) ^ -int32(v&1) }

// appendRecord appends r coded against prev (protocol §2, DATA) and makes r
// the new prev. The Index is not coded: records are consecutive.
func appendRecord(b []byte, fields Fields, prev *Record, r Record) []byte {
	b = binary.AppendUvarint(b, uint64(zigzag(int32(r.PC-prev.PC)>>1)))
	if fields&FieldLR != 0 {
		b = binary.AppendUvarint(b, uint64(zigzag(int32(r.LR-prev.LR))))
	}
	if fields&FieldExc != 0 {
		b = binary.AppendUvarint(b, uint64(r.Exc))
	}
	if fields&FieldThread != 0 {
		b = binary.AppendUvarint(b, uint64(zigzag(int32(r.Thread-prev.Thread))))
	}
	*prev = r
	return b
}

var (
	errVarint   = errors.New("truncated or over-long varint")
	errExcRange = errors.New("exception number above 511")
)

// uvarint32 reads an unsigned LEB128 of at most 5 bytes and 32 bits.
func uvarint32(b []byte) (uint32, int, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 || n > 5 || v > 0xFFFFFFFF {
		return 0, 0, errVarint
	}
	return uint32(v), n, nil
}

// readRecord decodes one record coded against prev, makes it the new prev
// and returns it with the number of bytes read.
func readRecord(b []byte, fields Fields, prev *Record) (Record, int, error) {
	var r Record
	v, n, err := uvarint32(b)
	if err != nil {
		return r, 0, err
	}
	r.PC = prev.PC + uint32(unzigzag(v))<<1
	off := n
	if fields&FieldLR != 0 {
		if v, n, err = uvarint32(b[off:]); err != nil {
			return r, 0, err
		}
		r.LR = prev.LR + uint32(unzigzag(v))
		off += n
	}
	if fields&FieldExc != 0 {
		if v, n, err = uvarint32(b[off:]); err != nil {
			return r, 0, err
		}
		if v > 511 {
			return r, 0, errExcRange
		}
		r.Exc = uint16(v)
		off += n
	}
	if fields&FieldThread != 0 {
		if v, n, err = uvarint32(b[off:]); err != nil {
			return r, 0, err
		}
		r.Thread = prev.Thread + uint32(unzigzag(v))
		off += n
	}
	*prev = r
	return r, off, nil
}
