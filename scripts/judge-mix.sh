#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Judges plans made for a mix of workloads against plans made for each
# workload alone (issue 24 §5), with the trace-driven model as
# scripts/judge.sh does: builds the demo with WORKLOAD=bulk (one image, two
# workloads the testbench chooses at reset: the small-packet echo, and bulk
# transfer of 512-byte datagrams), models each workload on the stock image
# and writes the capture a board would take of it (same image, same
# build-id), plans at each budget from the echo's capture alone, the bulk
# transfer's alone and both mixed by WEIGHTS (`tcmprof plan
# echo.tcmcap:W bulk.tcmcap:W`), relinks every plan and models it on each
# workload.
#
#   scripts/judge-mix.sh                          # 4K 8K 16K, weights 1:1, one layout
#   WEIGHTS="3 1" LAYOUTS=2 scripts/judge-mix.sh  # echo 3, bulk 1; two layouts per plan
#
# The mix's figure is the time the plan takes for the work the stock image
# does in a unit of time, as a share of that time: the sum over the
# workloads of weight share × cycles per unit / the stock's cycles per
# unit (the weights are shares of the stock image's time, as for
# `tcmprof plan`). Expected: each plan is best (or within noise: the
# larger half-spread over the layouts, at least 1 %) where it was made
# for: the echo's plan on the echo, the bulk transfer's on bulk transfer,
# the mix's on the mix.
#
# Environment: WEIGHTS ("ECHO BULK", "1 1"), LAYOUTS (1), BUDGETS
# ("4K 8K 16K"), OPT (-Os), FROM (100), WARMUP (300), UNITS (echoes
# modelled per image, 2000), BULK_UNITS (datagrams modelled per image,
# 600: a datagram takes about 3.5 echoes' time), CAPTURE_UNITS (4000) and
# BULK_CAPTURE_UNITS (1200): the captures' spans, about 6,500 samples each
# at 10 kHz; OUT (build/judge/mix-OPT). Writes OUT/judge-mix.tsv (plan,
# budget, workload, layout, cycles per unit, ITCM bytes added) and prints
# the table as Markdown on stdout; the checks follow it.
set -euo pipefail
cd "$(dirname "$0")/.."

OPT=${OPT:--Os}
WEIGHTS=${WEIGHTS:-1 1}
LAYOUTS=${LAYOUTS:-1}
BUDGETS=${BUDGETS:-4K 8K 16K}
UNITS=${UNITS:-2000}
BULK_UNITS=${BULK_UNITS:-600}
CAPTURE_UNITS=${CAPTURE_UNITS:-4000}
BULK_CAPTURE_UNITS=${BULK_CAPTURE_UNITS:-1200}
OUT=${OUT:-build/judge/mix-${OPT#-}}
export WORKLOAD=bulk
bin=build/tcmprof
board=qemu-demo

say() { printf 'judge-mix: %s\n' "$*" >&2; }
fail() { say "$*"; exit 1; }

. scripts/judge-lib.sh

read -r echo_weight bulk_weight extra <<<"$WEIGHTS" || true
for w in "$echo_weight" "$bulk_weight"; do
	python3 -c 'import sys; sys.exit(not float(sys.argv[1]) > 0)' "$w" 2>/dev/null ||
		fail "WEIGHTS: \"$WEIGHTS\" is not two positive weights (echo, bulk)"
done
[ -z "${extra:-}" ] || fail "WEIGHTS: \"$WEIGHTS\" is not two positive weights (echo, bulk)"

# The workloads: name, bench switch, units modelled per image, units captured.
workloads=(echo bulk)
declare -A switch=([echo]=0 [bulk]=1) units=([echo]=$UNITS [bulk]=$BULK_UNITS) capture_units=([echo]=$CAPTURE_UNITS [bulk]=$BULK_CAPTURE_UNITS)

rm -rf "$OUT"
mkdir -p "$OUT"
stock=$OUT/stock
for w in "${workloads[@]}"; do
	say "stock image, $w: modelling ${capture_units[$w]} units, with the capture a board would take"
	OUT=$stock UNITS=${capture_units[$w]} BENCH_SWITCH=${switch[$w]} scripts/sim-demo.sh --json \
		--capture "$OUT/$w.tcmcap" --rate 10000 >"$OUT/$w-capture.json"
done
mix=("$OUT/echo.tcmcap:$echo_weight" "$OUT/bulk.tcmcap:$bulk_weight")

# judge NAME: relinks a copy of the stock build with NAME's plan (none for
# stock) and models it on each workload, in each layout.
judge() {
	local name=$1 dir=$OUT/image-$1 w
	if [ -f "$OUT/$name.ld" ]; then stock_copy "$dir" "$name"; else stock_copy "$dir"; fi
	for w in "${workloads[@]}"; do
		BENCH_SWITCH=${switch[$w]} UNITS=${units[$w]} model "$dir" "$name-$w"
	done
}

say "the layouts: cold functions outside every workload's hot code"
plan_into allhot "${mix[@]}" --objective samples --min-samples 1
cold_patterns >"$OUT/cold.txt"
say "stock image: modelling each workload"
judge stock

printf 'plan\tbudget\tworkload\tlayout\tcycles_per_unit\titcm_bytes\n' >"$OUT/judge-mix.tsv"
row() { # NAME PLAN BUDGET
	local w k
	for w in "${workloads[@]}"; do
		for k in $(seq 0 $((LAYOUTS - 1))); do
			python3 - "$OUT/$1-$w-l$k.json" "$OUT/$1.plan.json" "$2" "$3" "$w" "$k" >>"$OUT/judge-mix.tsv" <<'EOF'
import json, os, sys
res = json.load(open(sys.argv[1]))
added = json.load(open(sys.argv[2]))["prediction"]["bytes"] if os.path.exists(sys.argv[2]) else 0
print(f"{sys.argv[3]}\t{sys.argv[4]}\t{sys.argv[5]}\t{sys.argv[6]}\t{res['cycles_per_unit']:.0f}\t{added}")
EOF
		done
	done
}
row stock stock 0

for b in $BUDGETS; do
	for p in echo bulk mix; do
		say "the $p plan at $b"
		case $p in
		mix) plan_into "$p-$b" "${mix[@]}" --budget "$b" ;;
		*) plan_into "$p-$b" "$OUT/$p.tcmcap" --budget "$b" ;;
		esac
		judge "$p-$b"
		row "$p-$b" "$p" "$b"
	done
done

python3 - "$OUT/judge-mix.tsv" "$echo_weight" "$bulk_weight" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
weights = {"echo": float(sys.argv[2]), "bulk": float(sys.argv[3])}
share = {w: v / sum(weights.values()) for w, v in weights.items()}
cyc = {}
for r in rows:
    cyc.setdefault((r["plan"], r["budget"], r["workload"]), []).append(float(r["cycles_per_unit"]))
layouts = len(cyc[("stock", "0", "echo")])
stock = {w: statistics.fmean(cyc[("stock", "0", w)]) for w in weights}

def per_layout(p, b, w):
    """The workload's cycles per unit, or the mix's share of the stock's time, per layout."""
    if w != "mix":
        return cyc[(p, b, w)]
    return [sum(share[v] * cyc[(p, b, v)][k] / stock[v] for v in weights) for k in range(layouts)]

def mean(p, b, w):
    return statistics.fmean(per_layout(p, b, w))

def half_spread(p, b, w):
    xs = per_layout(p, b, w)
    return (max(xs) - min(xs)) / 2 / statistics.fmean(xs)

budgets = list(dict.fromkeys(r["budget"] for r in rows if r["plan"] != "stock"))
plans = {"echo": "echo alone", "bulk": "bulk alone", "mix": f"mix {sys.argv[2]}:{sys.argv[3]}"}
over = f"; means of {layouts} layouts" if layouts > 1 else ""
print(f"workload bulk: echo {share['echo']:.0%} and bulk transfer {share['bulk']:.0%} of the stock image's time{over}. "
      f"stock: {stock['echo']:,.0f} cycles per echo, {stock['bulk']:,.0f} per bulk datagram\n")
print("| ITCM budget | plan | ITCM bytes | echo (cycles per echo) | bulk (cycles per datagram) | the mix (time, % of stock) |")
print("|---|---|---|---|---|---|")
for b in budgets:
    best = {w: min(plans, key=lambda p: mean(p, b, w)) for w in ("echo", "bulk", "mix")}
    for p in plans:
        cells = []
        for w in ("echo", "bulk", "mix"):
            m = mean(p, b, w)
            text = f"{100 * m:.1f} % ({1 / m:.2f}x)" if w == "mix" else f"{m:,.0f} ({stock[w] / m:.2f}x)"
            if layouts > 1:
                text += f", ±{100 * half_spread(p, b, w):.1f} %"
            cells.append(f"**{text}**" if best[w] == p else text)
        added = [r for r in rows if r["plan"] == p and r["budget"] == b][0]["itcm_bytes"]
        print(f"| {b} | {plans[p]} | {int(added):,} | " + " | ".join(cells) + " |")

print()
for b in budgets:
    for p, w in (("echo", "echo"), ("bulk", "bulk"), ("mix", "mix")):
        own = mean(p, b, w)
        for q in plans:
            if q == p:
                continue
            other = mean(q, b, w)
            noise = max(0.01, half_spread(p, b, w), half_spread(q, b, w))
            ok = own <= other * (1 + noise)
            print(f"check at {b}: {'met' if ok else 'MISSED'}: the {plans[p]} plan on {w} against the {plans[q]} plan "
                  f"({100 * (own / other - 1):+.1f} %, noise {100 * noise:.1f} %)")
EOF
