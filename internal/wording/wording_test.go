// SPDX-License-Identifier: Apache-2.0

package wording

import "testing"

func TestForms(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Percent(0.4934), "49.3 %"},
		{Percent(1), "100.0 %"},
		{Percent(0), "0.0 %"},
		{Interval(0.451, 0.5362), "45.1–53.6 %"},
		{Region("flash"), "flash"},
		{Region(""), "unknown"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
