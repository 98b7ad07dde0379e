// SPDX-License-Identifier: Apache-2.0

package sample

import "testing"

// The record decoder refuses a 1.2 stack that claims common words its thread's
// last record does not hold, and a PC code wider than 33 bits.
func TestCodingV12Refusals(t *testing.T) {
	c := NewRecordCoder(FieldPC|FieldLR|FieldStack, CodingV12)
	// PC 0, LR 0, SP 0x100, 2 words, 1 common: no reference.
	if _, _, err := c.Read([]byte{0, 0, 0x80, 0x04, 2, 1, 0}); err != errStackSame {
		t.Errorf("common words without a reference: %v", err)
	}
	c = NewRecordCoder(FieldPC, CodingV12)
	if _, _, err := c.Read([]byte{0x80, 0x80, 0x80, 0x80, 0x20}); err != errVarint {
		t.Errorf("a 34-bit PC code: %v", err)
	}
	if r, _, err := c.Read([]byte{0xfc, 0xff, 0xff, 0xff, 0x1f}); err != nil || r.PC != 0x80000000 {
		t.Errorf("a 33-bit PC code: %+v, %v", r, err)
	}
}
