#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Compiles the snippet's overlay, and the sample's overlay on top of it,
# against a stand-in board tree with dtc, then reads the result back with
# fdtget: the chosen nodes, the two CDC-ACM ports, pit0 disabled, the NCM
# interface. Prints "N passed, M failed"; exits 1 on any failure.
set -u

here=$(cd "$(dirname "$0")" && pwd)
sampler=$(dirname "$(dirname "$here")")
snippet_overlay=$sampler/snippets/tcmprof-sampler/tcmprof-sampler.overlay
sample_overlay=$sampler/samples/udp_echo/app.overlay
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

passed=0
failed=0
current=""
current_ok=1

begin() { current=$1; current_ok=1; }
fail() { echo "  $current: $*"; current_ok=0; }
end() {
	if [ "$current_ok" = 1 ]; then
		echo "ok   dts/$current"; passed=$((passed + 1))
	else
		echo "FAIL dts/$current"; failed=$((failed + 1))
	fi
}

# compile OUT.dtb FILE... : concatenates the base tree and overlays, as the
# Zephyr build merges them, and compiles with dtc (warnings are errors).
compile() {
	out=$1; shift
	cat "$here/dts_base.dts" "$@" > "$work/merged.dts"
	dtc -q -I dts -O dtb -o "$out" "$work/merged.dts" 2> "$work/dtc.err"
}

expect() { # expect DTB PATH PROP WANT
	got=$(fdtget -t s "$1" "$2" "$3" 2>/dev/null) || { fail "$2 has no $3"; return; }
	[ "$got" = "$4" ] || fail "$2 $3 = \"$got\", want \"$4\""
}

begin snippet_overlay_compiles
compile "$work/snippet.dtb" "$snippet_overlay" || fail "dtc: $(cat "$work/dtc.err")"
end

begin snippet_chosen_nodes
dtb=$work/snippet.dtb
transport=$(fdtget -t s "$dtb" /chosen tcmprof,transport 2>/dev/null)
console=$(fdtget -t s "$dtb" /chosen zephyr,console 2>/dev/null)
shell_uart=$(fdtget -t s "$dtb" /chosen zephyr,shell-uart 2>/dev/null)
[ -n "$transport" ] || fail "no chosen tcmprof,transport"
[ -n "$console" ] || fail "no chosen zephyr,console"
[ "$transport" != "$console" ] || fail "transport and console are the same port ($console)"
[ "$shell_uart" = "$console" ] || fail "shell ($shell_uart) is not on the console port ($console)"
for node in "$transport" "$console"; do
	case $node in
	/soc/usbd@402e0000/*) ;;
	*) fail "$node is not a child of zephyr_udc0 (/soc/usbd@402e0000)" ;;
	esac
	expect "$dtb" "$node" compatible zephyr,cdc-acm-uart
done
end

begin snippet_keeps_pit0_disabled
expect "$work/snippet.dtb" /soc/pit@40084000 status disabled
end

begin snippet_overrides_an_enabled_pit0
# An application that enabled pit0 still gets it disabled by the snippet,
# which is appended after it (the C BUILD_ASSERT is the backstop).
printf '&pit0 { status = "okay"; };\n' > "$work/enable_pit.overlay"
compile "$work/override.dtb" "$work/enable_pit.overlay" "$snippet_overlay" ||
	fail "dtc: $(cat "$work/dtc.err")"
expect "$work/override.dtb" /soc/pit@40084000 status disabled
end

begin snippet_needs_zephyr_udc0
# The check can fail: without the label the overlay does not compile.
sed 's/zephyr_udc0: //' "$here/dts_base.dts" > "$work/no_udc.dts"
cat "$work/no_udc.dts" "$snippet_overlay" > "$work/merged.dts"
if dtc -q -I dts -O dtb -o "$work/no_udc.dtb" "$work/merged.dts" 2>/dev/null; then
	fail "compiled although zephyr_udc0 is missing"
fi
end

begin sample_overlay_with_snippet
compile "$work/sample.dtb" "$snippet_overlay" "$sample_overlay" || fail "dtc: $(cat "$work/dtc.err")"
expect "$work/sample.dtb" /cdc_ncm_eth0 compatible zephyr,cdc-ncm-ethernet
expect "$work/sample.dtb" /soc/ethernet@402d8000 status disabled
expect "$work/sample.dtb" /soc/mdio@402d8004 status disabled
expect "$work/sample.dtb" /chosen tcmprof,transport \
	"$(fdtget -t s "$work/snippet.dtb" /chosen tcmprof,transport)"
end

echo "dts: $passed passed, $failed failed"
[ "$failed" = 0 ]
