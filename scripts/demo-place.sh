#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The placement half of `make demo`: closes the loop that scripts/demo.sh
# starts. From the first capture (build/demo/before.tcmcap) it plans what
# goes into ITCM, relinks the demo firmware with the plan's GNU ld fragment,
# checks the new image against the plan (tcmprof verify), boots it, captures
# again and compares the two runs per region and function (tcmprof diff).
#
#   scripts/demo-place.sh [TCMPROF [OUT]]
#
# TCMPROF defaults to build/tcmprof, OUT to build/demo (which must hold
# before.tcmcap and firmware/ from scripts/demo.sh). DEMO_OPT, DEMO_SAMPLES
# and DEMO_TIMEOUT as for demo.sh. QEMU is killed when the script exits.
#
# Artefacts in OUT: plan.json, plan.txt (the plan's summary and benefit
# curve), curve.svg, itcm.ld (what the relink uses), itcm.cmake and
# itcm.conf (the same choice for a Zephyr build), firmware-itcm/ (the
# relinked image), verify.txt, after.tcmcap, after-report.txt, after.pb.gz,
# diff.txt and summary.txt (plan, verify and diff in one file); judge/ and
# judge.md: the before/after table of the I-cache model (scripts/judge.sh:
# stock, density-greedy and tcmprof's plans at 8, 16 and 32 KB, each
# relinked, traced and modelled: cycles per echo, speed-up, ITCM bytes).
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${1:-${TCMPROF:-build/tcmprof}}
out=${2:-build/demo}
opt=${DEMO_OPT:--Os}
samples=${DEMO_SAMPLES:-8192}
limit=${DEMO_TIMEOUT:-300}
board=qemu-demo

. scripts/demo-lib.sh

before_elf="$PWD/$out/firmware/tcmprof-demo.elf"
before_map="$PWD/$out/firmware/tcmprof-demo.map"
[ -f "$out/before.tcmcap" ] && [ -f "$before_elf" ] || fail "$out has no before.tcmcap and firmware/: run scripts/demo.sh first"
[ -x "$bin" ] || fail "$bin is not executable: build tcmprof first (make build)"

say "planning ITCM from before.tcmcap (all the free ITCM, ld layout)"
"$bin" plan --elf "$before_elf" --map "$before_map" --board "$board" "$out/before.tcmcap" \
	--format ld -o "$out/itcm.ld" --format ld-text -o "$out/text.ld" --format json -o "$out/plan.json" \
	--svg "$out/curve.svg" >"$out/plan.txt"
# The same choice for a Zephyr build: a plan of its own, since Zephyr's
# gen_relocate_app.py orders the sections differently (other padding).
"$bin" plan --elf "$before_elf" --map "$before_map" --board "$board" "$out/before.tcmcap" \
	--format zephyr -o "$out/itcm.cmake" >"$out/plan-zephyr.txt" 2>"$out/plan-zephyr.log"
# What the plan predicts: the summary down to its objective line.
sed -n '/^objective /q;p' "$out/plan.txt"

fw="$PWD/$out/firmware-itcm"
say "relinking the firmware ($opt) with itcm.ld and text.ld into $fw"
if ! make -C firmware-sampler/qemu OUT="$fw" OPT="$opt" ITCM_LD="$PWD/$out/itcm.ld" TEXT_LD="$PWD/$out/text.ld" >"$out/firmware-itcm-build.log" 2>&1; then
	tail -n 30 "$out/firmware-itcm-build.log" >&2
	fail "relink failed (log: $out/firmware-itcm-build.log)"
fi
after_elf="$fw/tcmprof-demo.elf"
after_map="$fw/tcmprof-demo.map"

say "verifying the relinked image against plan.json"
if ! "$bin" verify --elf "$after_elf" --map "$after_map" --plan "$out/plan.json" >"$out/verify.txt"; then
	cat "$out/verify.txt" >&2
	fail "the relinked image does not meet the plan"
fi
grep -v '^note:' "$out/verify.txt"

say "booting the relinked image in QEMU"
boot_qemu "$after_elf" "$out/qemu-itcm.log"
capture_from_qemu "$out/after.tcmcap" "$out/capture-itcm.log"

"$bin" report --elf "$after_elf" --map "$after_map" --board "$board" "$out/after.tcmcap" >"$out/after-report.txt"
"$bin" profile --elf "$after_elf" --map "$after_map" --board "$board" "$out/after.tcmcap" -o "$out/after.pb.gz"
"$bin" diff --elf "$before_elf" --map "$before_map" --after-elf "$after_elf" --after-map "$after_map" \
	--board "$board" --top 15 "$out/before.tcmcap" "$out/after.tcmcap" >"$out/diff.txt"
{
	echo "== plan (tcmprof plan) =="
	cat "$out/plan.txt"
	echo
	echo "== verify (tcmprof verify) =="
	cat "$out/verify.txt"
	echo
	echo "== before -> after (tcmprof diff) =="
	cat "$out/diff.txt"
} >"$out/summary.txt"

say "before -> after, busy shares per region:"
sed -n '/^by region/,/^$/p' "$out/diff.txt"
say "placement artefacts in $out/: plan.json plan.txt curve.svg itcm.ld text.ld itcm.cmake itcm.conf"
say "  firmware-itcm/ verify.txt after.tcmcap after-report.txt after.pb.gz diff.txt summary.txt"

# QEMU's samples fall in proportion to instructions, a board's in
# proportion to time: the table plans from the capture the model takes
# (docs/sim.md) and judges every plan by the model's cycles per echo.
say "judging plans with the I-cache model (docs/sim.md): stock, density-greedy and tcmprof at 8, 16 and 32 KB"
BUDGETS="8K 16K 32K" OBJECTIVES="density samples stalls" OUT="$out/judge" OPT="$opt" scripts/judge.sh >"$out/judge.md" 2>"$out/judge.log" ||
	{ tail -n 20 "$out/judge.log" >&2; fail "judging failed (log: $out/judge.log)"; }
say "before -> after, modelled cycles per echo (judge.md):"
cat "$out/judge.md"
