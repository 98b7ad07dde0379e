#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Checks the sample path as the Cortex-M7 build compiles it: it sits in the
# ITCM section and writes only the DTCM section, contains no division, and
# refers to nothing but itself, the DTCM state and the three port hooks (no
# call into flash, no libgcc helper, no CRC). With ISR_MAX_INSNS set, also
# bounds the instructions of tcmp_on_sample (docs/core.md counts them at -O2;
# -O0 code is longer but must still stay in ITCM).
#
#   [ISR_MAX_INSNS=n] tests/isr_check.sh <arm-gcc> <out-dir> <cflags...>
set -eu
cc=$1 out=$2
shift 2
obj=$out/sampler-m7.o
"$cc" "$@" -c -o "$obj" core/sampler.c
objdump=${cc%gcc}objdump
fail() { echo "isr_check: $*" >&2; exit 1; }

syms=$("$objdump" -t "$obj")
for f in tcmp_on_sample tcmp_sample_isr store_stack; do
	echo "$syms" | grep -Eq "\.itcm_text\.tcmp[[:space:]].*[[:space:]]$f\$" || fail "$f is not in .itcm_text.tcmp"
done
for o in isr buffer; do
	echo "$syms" | grep -Eq "\.dtcm_bss\.tcmp[[:space:]].*[[:space:]]$o\$" || fail "$o is not in .dtcm_bss.tcmp"
done

dis=$("$objdump" -d -j .itcm_text.tcmp "$obj")
if echo "$dis" | grep -Eq '[[:space:]](u|s)div'; then fail "division in the sample path"; fi

# Every relocation of the ITCM code: the allowed targets only.
bad=$("$objdump" -r -j .itcm_text.tcmp "$obj" | awk '/^[0-9a-f]+ +R_/ { print $3 }' |
	grep -Ev '^(\.dtcm_bss\.tcmp|\.itcm_text\.tcmp|tcmp_on_sample|store_stack|tcmp_port_timer_ack_next|tcmp_port_current_thread|tcmp_port_stack_room)(\+0x[0-9a-f]+)?$' || true)
[ -z "$bad" ] || fail "the sample path refers to: $bad"

n=$(echo "$dis" | awk '/<tcmp_on_sample>:/ { on = 1; next } /^$/ { on = 0 } on && /^ +[0-9a-f]+:\t[0-9a-f][0-9a-f][0-9a-f][0-9a-f]/ && !/\.word/ { n++ } END { print n + 0 }')
[ "$n" -gt 20 ] || fail "could not count the instructions of tcmp_on_sample ($n)"
if [ -n "${ISR_MAX_INSNS:-}" ] && [ "$n" -gt "$ISR_MAX_INSNS" ]; then
	fail "tcmp_on_sample has $n instructions, more than $ISR_MAX_INSNS: see docs/core.md"
fi
opt=$(printf '%s\n' "$@" | grep -E '^-O' | tail -n 1)
echo "isr_check ${opt:-}: sample path ok ($n instructions in tcmp_on_sample, ITCM/DTCM sections, no division, no foreign calls)"
