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

// The 1.4 record decoder refuses a thread named by a place among the
// recent threads that none holds, a PC code wider than 37 bits, and a run
// of words equal to a reference the record has none of.
func TestCodingV14Refusals(t *testing.T) {
	c := NewRecordCoder(FieldPC|FieldThread, CodingV14)
	if _, _, err := c.Read([]byte{0, 1}); err != errThreadPlace {
		t.Errorf("thread place 1 with no recent thread: %v", err)
	}
	c = NewRecordCoder(FieldPC, CodingV14)
	if _, _, err := c.Read([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x20}); err != errCode {
		t.Errorf("a 38-bit PC code: %v", err)
	}
	if r, _, err := c.Read([]byte{0xe0, 0xff, 0xff, 0xff, 0xff, 0x01}); err != nil || r.PC != 0x80000000 {
		t.Errorf("a 37-bit PC code: %+v, %v", r, err)
	}
	// PC 0, LR 0, SP 0x100 with 2 words, a run of 1 same word: no reference.
	c = NewRecordCoder(FieldPC|FieldLR|FieldStack, CodingV14)
	if _, _, err := c.Read([]byte{0, 0, 0x82, 0x80, 0x04, 1, 1, 0}); err != errStackSame {
		t.Errorf("same words without a reference: %v", err)
	}
}
