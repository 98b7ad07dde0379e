#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Judges ITCM plans with the trace-driven model (docs/sim.md, issue 11 §3):
# builds the QEMU demo, models it and writes the capture a board would take
# (samples every N modelled cycles), plans from that capture with each
# objective at each budget, relinks every plan, traces the relinked image
# in QEMU and models it: cycles per echo, speed-up and ITCM bytes per plan.
#
#   scripts/judge.sh                                   # every objective at 4K 8K 16K 32K and the full ITCM
#   BUDGETS="8K 16K 32K" OBJECTIVES="density stalls" scripts/judge.sh   # the demo's table
#
# Objectives: density (greedy by samples per byte, the Teensy report's
# method), samples (the exact knapsack on samples), stalls (the exact
# knapsack on estimated stall samples) and misses (the reference: greedy by
# the line fills per byte the model measured on the stock image, which a
# board can not measure). "all hot" is the image with every function that
# has a sample in ITCM.
#
# Environment: OPT (-Os), BUDGETS, OBJECTIVES, FROM (100), WARMUP (300),
# UNITS (echoes modelled per image, 2000), CAPTURE_UNITS (echoes the
# modelled capture spans, 4000: about 8,000 samples at 10 kHz), OUT
# (build/judge/OPT). Writes OUT/judge.tsv (objective, budget, cycles per
# echo, fills per echo, ITCM bytes added) and prints the table as
# Markdown on stdout; the bar's checks follow it.
set -euo pipefail
cd "$(dirname "$0")/.."

OPT=${OPT:--Os}
BUDGETS=${BUDGETS:-4K 8K 16K 32K full}
OBJECTIVES=${OBJECTIVES:-density samples stalls misses}
UNITS=${UNITS:-2000}
CAPTURE_UNITS=${CAPTURE_UNITS:-4000}
OUT=${OUT:-build/judge/${OPT#-}}
bin=build/tcmprof
board=qemu-demo

say() { printf 'judge: %s\n' "$*" >&2; }
fail() { say "$*"; exit 1; }

rm -rf "$OUT"
mkdir -p "$OUT"
stock=$OUT/stock
say "stock image: modelling $CAPTURE_UNITS echoes, with the capture a board would take"
OUT=$stock UNITS=$CAPTURE_UNITS scripts/sim-demo.sh --json --capture "$OUT/stock.tcmcap" --rate 10000 >"$OUT/stock-capture.json"
capture=$OUT/stock.tcmcap

# model IMAGE-DIR NAME: traces and models UNITS echoes of the image in
# IMAGE-DIR (relinked with its itcm.ld when it has one) into NAME.json.
model() {
	local dir=$1 name=$2
	local ld=()
	[ -f "$dir/itcm.ld" ] && ld=(ITCM_LD="$dir/itcm.ld")
	env OUT="$dir" UNITS="$UNITS" "${ld[@]}" scripts/sim-demo.sh --json >"$OUT/$name.json"
}

# plan_and_model NAME PLAN-ARGS...: plans from the stock capture, relinks a
# copy of the stock build (only the link runs again) and models it.
plan_and_model() {
	local name=$1
	shift
	local dir=$OUT/$name
	cp -a "$stock" "$dir"
	"$bin" plan --elf "$stock/tcmprof-demo.elf" --map "$stock/tcmprof-demo.map" --board "$board" "$capture" \
		"$@" --format ld -o "$dir/itcm.ld" --format json -o "$OUT/$name.plan.json" >"$OUT/$name.plan.txt"
	model "$dir" "$name"
}

say "stock image: modelling $UNITS echoes"
model "$stock" stock
say "all hot code in ITCM"
plan_and_model allhot --objective samples --min-samples 1

printf 'objective\tbudget\tcycles_per_echo\tfills_per_echo\titcm_bytes\n' >"$OUT/judge.tsv"
row() { # NAME OBJECTIVE BUDGET
	python3 - "$OUT/$1.json" "$OUT/$1.plan.json" "$2" "$3" >>"$OUT/judge.tsv" <<'EOF'
import json, os, sys
res = json.load(open(sys.argv[1]))
added = 0
if os.path.exists(sys.argv[2]):
    added = json.load(open(sys.argv[2]))["prediction"]["bytes"]
print(f"{sys.argv[3]}\t{sys.argv[4]}\t{res['cycles_per_unit']:.0f}\t{res['misses_per_unit']:.1f}\t{added}")
EOF
}
row stock stock 0
row allhot allhot full

for b in $BUDGETS; do
	budget=(--budget "$b")
	[ "$b" = full ] && budget=()
	for obj in $OBJECTIVES; do
		say "$obj at $b"
		extra=()
		[ "$obj" = misses ] && extra=(--sim-json "$OUT/stock-capture.json")
		plan_and_model "$obj-$b" --objective "$obj" "${extra[@]}" "${budget[@]}"
		row "$obj-$b" "$obj" "$b"
	done
done

python3 - "$OUT/judge.tsv" "$OBJECTIVES" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
objs = sys.argv[2].split()
stock = next(float(r["cycles_per_echo"]) for r in rows if r["objective"] == "stock")
allhot = next(r for r in rows if r["objective"] == "allhot")
hot = float(allhot["cycles_per_echo"])
cell = {(r["objective"], r["budget"]): r for r in rows}
budgets = []
for r in rows:
    if r["objective"] in objs and r["budget"] not in budgets:
        budgets.append(r["budget"])
names = {"density": "density-greedy", "samples": "exact samples (default)", "stalls": "--objective stalls", "misses": "reference (model misses)"}
print(f"stock: {stock:,.0f} cycles per echo; all hot code in ITCM ({int(allhot['itcm_bytes']):,} B): {hot:,.0f} ({stock/hot:.2f}x)\n")
print("| ITCM budget | " + " | ".join(names.get(o, o) for o in objs) + " |")
print("|---" * (len(objs) + 1) + "|")
for b in budgets:
    cells = []
    for o in objs:
        r = cell[(o, b)]
        c = float(r["cycles_per_echo"])
        cells.append(f"{c:,.0f} ({stock/c:.2f}x, {int(r['itcm_bytes']):,} B)")
    print(f"| {b} | " + " | ".join(cells) + " |")
if "stalls" not in objs:
    sys.exit(0)
print()
def cyc(o, b):
    return float(cell[(o, b)]["cycles_per_echo"])
for b in budgets:
    s = cyc("stalls", b)
    checks = []
    if "density" in objs:
        d = cyc("density", b)
        checks.append(("no worse than density-greedy", s <= d, f"{100*(s/d-1):+.1f} %"))
    if "misses" in objs and b in ("4K", "8K"):
        m = cyc("misses", b)
        checks.append(("within 5 % of the reference", s <= 1.05 * m, f"{100*(s/m-1):+.1f} %"))
    if b == "32K":
        checks.append(("within 5 % of all hot code in ITCM", s <= 1.05 * hot, f"{100*(s/hot-1):+.1f} %"))
    for what, ok, by in checks:
        print(f"bar at {b}: {'met' if ok else 'MISSED'}: {what} ({by})")
EOF
