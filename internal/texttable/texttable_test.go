// SPDX-License-Identifier: Apache-2.0

package texttable

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestShortenCutsInTheMiddle(t *testing.T) {
	got := shorten([]string{"net_if_ipv4_select_src_addr", "memcpy", "abc"}, []int{15, 15, 0})
	want := []string{"net_if_…rc_addr", "memcpy", "abc"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got %q, want %q", got, want)
	}
	if n := utf8.RuneCountInString(got[0]); n != 15 {
		t.Errorf("%q is %d runes, want 15", got[0], n)
	}
}

// Names that differ only where the even cut falls are cut elsewhere, so
// that no two read the same: C++ instances of one template differ in the
// middle.
func TestShortenKeepsNamesApart(t *testing.T) {
	var names []string
	for _, ty := range []string{"int", "long", "short", "char"} {
		names = append(names, fmt.Sprintf("dsp::Fir<%s, 16>::step(unsigned int)", ty))
	}
	names = append(names, names[0]) // the same function twice reads the same
	budgets := []int{20, 20, 20, 20, 20}
	got := shorten(names, budgets)
	seen := map[string]string{}
	for i, s := range got {
		if utf8.RuneCountInString(s) > 20 {
			t.Errorf("%q is wider than 20", s)
		}
		if prev, ok := seen[s]; ok && prev != names[i] {
			t.Errorf("%q stands for both %q and %q", s, prev, names[i])
		}
		seen[s] = names[i]
	}
	if got[4] != got[0] {
		t.Errorf("one name cut two ways: %q and %q", got[0], got[4])
	}
}

// A name no cut can tell apart within its budget stays whole.
func TestShortenLeavesWholeWhatItCannotTellApart(t *testing.T) {
	a, b := "x"+strings.Repeat("a", 30)+"1"+strings.Repeat("a", 30)+"x", "x"+strings.Repeat("a", 30)+"2"+strings.Repeat("a", 30)+"x"
	got := shorten([]string{a, b}, []int{12, 12})
	if got[0] != a || got[1] != b {
		t.Errorf("got %q", got)
	}
}

func TestDisambiguate(t *testing.T) {
	got := Disambiguate(
		[]string{"validate", "validate", "main", "init", "init", "validate"},
		[]string{"/fw/net/eth.c", "/fw/net/udp.c", "/fw/main.c", "/fw/net/if.c", "/fw/usb/if.c", "/fw/net/eth.c"})
	want := []string{"validate (eth.c)", "validate (udp.c)", "main", "init (net/if.c)", "init (usb/if.c)", "validate (eth.c)"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		width   int
		phrases []string
		want    string
	}{
		{0, []string{"one line,", "however long it is"}, "one line, however long it is\n"},
		{20, []string{"breaks between", "phrases first"}, "breaks between\n  phrases first\n"},
		{20, []string{"then between the words of a long phrase"}, "then between the\n  words of a long\n  phrase\n"},
		{12, []string{"  keeps its indent"}, "  keeps its\n  indent\n"},
		{12, []string{"a", "/very/long/path/name"}, "a /very…name\n"},
		{30, Phrases("1 already in ITCM, 1 no own input section, 1 pinned", ", "), "1 already in ITCM,\n  1 no own input section,\n  1 pinned\n"},
	} {
		if got := Wrap(tc.width, "  ", tc.phrases...); got != tc.want {
			t.Errorf("Wrap(%d, %q) = %q, want %q", tc.width, tc.phrases, got, tc.want)
		}
	}
}

// A table right-aligns its figures and cuts the names, never the figures,
// to the width; width 0 leaves them whole.
func TestTableFitsTheWidth(t *testing.T) {
	tab := New("  ", "samples", "share", "function")
	tab.Row("net_if_ipv4_select_src_addr", "15", "0.2 %")
	tab.RowUnder("a_caller_with_a_long_name_too", "3", "20.0 %")
	tab.Section("a line of its own, wrapped rather than cut")
	tab.Row("memcpy", "1234", "16.7 %")
	var narrow, wide bytes.Buffer
	if err := tab.Write(&narrow, 36); err != nil {
		t.Fatal(err)
	}
	want := `  samples   share  function
       15   0.2 %  net_if_i…src_addr
        3  20.0 %    a_calle…ame_too
  a line of its own, wrapped rather
    than cut
     1234  16.7 %  memcpy
`
	if narrow.String() != want {
		t.Errorf("width 36:\n%s\nwant:\n%s", narrow.String(), want)
	}
	if err := tab.Write(&wide, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(wide.String(), "  net_if_ipv4_select_src_addr\n") || !strings.Contains(wide.String(), "    a_caller_with_a_long_name_too\n") {
		t.Errorf("width 0 cut a name:\n%s", wide.String())
	}
}
