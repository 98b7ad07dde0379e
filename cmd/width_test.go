// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tcmprof/tcmprof/internal/texttable"
)

// checkFits fails t for every line of out wider than an 80-column
// terminal (texttable.Width runes); what names the output.
func checkFits(t *testing.T, what, out string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > texttable.Width {
			t.Errorf("%s has a %d-column line: %q", what, n, line)
		}
	}
}

// fitsEighty says which outputs must fit 80 columns (issue 26 §9): the
// text of report, rank and plan without --wide.
func fitsEighty(args []string) bool {
	return len(args) > 0 && slices.Contains([]string{"report", "rank", "plan"}, args[0]) &&
		!slices.Contains(args, "--wide") && !slices.Contains(args, "--json")
}
