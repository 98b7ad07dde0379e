// SPDX-License-Identifier: Apache-2.0

package sample

import (
	"strings"
	"testing"
)

// mixPart is a capture of n records, all at pc, with the given fields.
func mixPart(name string, n int, pc uint32, fields Fields, weight float64) Part {
	c := syntheticCapture(n, fields, nil)
	for i := range c.Records {
		c.Records[i].PC = pc
	}
	return Part{Name: name, Capture: c, Weight: weight}
}

// The mixed shares are the weights, whatever the parts' lengths: 3:1 of
// an echo capture of 1,000 records and a bulk one of 3,000 gives 75 % to
// 25 %; a weight that is no whole multiple still comes out exact to a
// record.
func TestMixShares(t *testing.T) {
	for _, tc := range []struct {
		echoN, bulkN    int
		echoW, bulkW    float64
		wantEcho, wantN int
	}{
		{1000, 3000, 3, 1, 9000, 12000}, // bulk's records stand for least time: once; echo's 9 times
		{1000, 1000, 1, 1, 1000, 2000},
		{400, 1000, 2.5, 1, 2500, 3500},
		{1000, 400, 1, 2.5, 1000, 3500},
	} {
		mix, err := Mix([]Part{
			mixPart("echo.tcmcap", tc.echoN, 0x60001000, FieldPC|FieldLR, tc.echoW),
			mixPart("bulk.tcmcap", tc.bulkN, 0x60002000, FieldPC|FieldLR, tc.bulkW),
		})
		if err != nil {
			t.Fatal(err)
		}
		echo := 0
		for _, r := range mix.Records {
			if r.PC == 0x60001000 {
				echo++
			}
		}
		share := float64(tc.echoW) / float64(tc.echoW+tc.bulkW)
		if echo != tc.wantEcho || len(mix.Records) != tc.wantN {
			t.Errorf("%+v: %d of %d records are echo's, want %d of %d (%.0f %%)", tc, echo, len(mix.Records), tc.wantEcho, tc.wantN, 100*share)
		}
		if err := mix.Validate(); err != nil {
			t.Errorf("%+v: the mix is not a valid capture: %v", tc, err)
		}
	}
}

// A mix keeps the fields every part recorded, and clears the others'
// values; stacks go with LR.
func TestMixFields(t *testing.T) {
	mix, err := Mix([]Part{
		mixPart("a", 100, 0x60001000, FieldPC|FieldLR|FieldStack|FieldThread, 1),
		mixPart("b", 100, 0x60002000, FieldPC|FieldThread|FieldExc, 1),
	})
	if err != nil {
		t.Fatal(err)
	}
	if mix.Header.Fields != FieldPC|FieldThread || mix.Header.StackWords != 0 {
		t.Errorf("fields %v, %d stack words; want pc,thread and none", mix.Header.Fields, mix.Header.StackWords)
	}
	for _, r := range mix.Records {
		if r.LR != 0 || r.Stack != nil || r.Exc != 0 {
			t.Fatalf("record %d keeps a field the mix dropped: %+v", r.Index, r)
		}
	}
	if len(mix.Threads) == 0 {
		t.Error("the threads' names are lost")
	}
	if err := mix.Validate(); err != nil {
		t.Error(err)
	}
}

func TestMixRefuses(t *testing.T) {
	other := mixPart("other.tcmcap", 10, 0x60001000, FieldPC, 1)
	other.Capture.Header.BuildID = []byte{1, 2, 3}
	empty := mixPart("empty.tcmcap", 10, 0x60001000, FieldPC, 1)
	empty.Capture.Records = nil
	for _, tc := range []struct {
		parts []Part
		want  string
	}{
		{nil, "no capture"},
		{[]Part{mixPart("a.tcmcap", 10, 0x60001000, FieldPC, 1), other}, "other.tcmcap is of another image than a.tcmcap"},
		{[]Part{mixPart("a.tcmcap", 10, 0x60001000, FieldPC, 0), mixPart("b", 10, 0x60001000, FieldPC, 1)}, "a.tcmcap: weight 0"},
		{[]Part{mixPart("a.tcmcap", 10, 0x60001000, FieldPC, 1), empty}, "empty.tcmcap: no records"},
	} {
		_, err := Mix(tc.parts)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Mix of %d parts: %v, want one line with %q", len(tc.parts), err, tc.want)
		}
	}
}
