// SPDX-License-Identifier: Apache-2.0

package symname

import "testing"

func TestSplitClone(t *testing.T) {
	for _, tc := range []struct{ name, base, clone string }{
		{"hash_buf.constprop.0", "hash_buf", ".constprop.0"},
		{"scaled.isra.0", "scaled", ".isra.0"},
		{"__sinit.part.0", "__sinit", ".part.0"},
		{"fatal.cold", "fatal", ".cold"},
		{"f.isra.0.constprop.1", "f", ".isra.0.constprop.1"},
		{"g.part.0.cold", "g", ".part.0.cold"},
		{"h.lto_priv.0", "h", ".lto_priv.0"},
		{"_ZN3dsp5applyIZ9cpp_entryEUlmE0_EEmT_m.constprop.0", "_ZN3dsp5applyIZ9cpp_entryEUlmE0_EEmT_m", ".constprop.0"},
		{"main", "main", ""},
		{"a.b", "a.b", ""},
		{"x.constprops", "x.constprops", ""},
		{".cold", ".cold", ""},
		// GNU ld's veneer to a clone: no clone of its own (Zephyr 4.2).
		{"__udc_is_initialized.isra.0_veneer", "__udc_is_initialized.isra.0_veneer", ""},
		{"f.isra.x", "f.isra.x", ""},
	} {
		base, clone := SplitClone(tc.name)
		if base != tc.base || clone != tc.clone {
			t.Errorf("SplitClone(%q) = %q, %q; want %q, %q", tc.name, base, clone, tc.base, tc.clone)
		}
	}
}

func TestNormalizeClone(t *testing.T) {
	for in, want := range map[string]string{
		"":                    "",
		".constprop.0":        ".constprop.N",
		".constprop.3.isra.0": ".constprop.N.isra.N",
		".part.12.cold":       ".part.N.cold",
		".cold":               ".cold",
		".lto_priv.0":         ".lto_priv.N",
		".specialized.1":      ".specialized.N",
		".constprop.0x":       ".constprop.0x", // not a clone number
	} {
		if got := NormalizeClone(in); got != want {
			t.Errorf("NormalizeClone(%q) = %q, want %q", in, got, want)
		}
	}
}
