# SPDX-License-Identifier: Apache-2.0
# Shared steps of scripts/judge.sh and scripts/judge-mix.sh (sourced):
# planning from the stock build, the layouts a plan is judged in and the
# modelling of an image in each. Expects $OUT (the judge's directory),
# $stock (the stock build in it), $bin, $board, $LAYOUTS, $UNITS, and
# $OUT/allhot.plan.json (a plan of every sampled function) before
# cold_patterns runs. BENCH_SWITCH in the environment reaches
# scripts/sim-demo.sh. Needs say and fail.

case $LAYOUTS in '' | *[!0-9]* | 0) fail "LAYOUTS: $LAYOUTS is not a count of layouts (1 or more)" ;; esac

# plan_into NAME CAPTURE... PLAN-ARGS...: plans from the stock build into
# OUT/NAME.ld, NAME.text.ld (its flash group), NAME.plan.json and
# NAME.plan.txt.
plan_into() {
	local name=$1
	shift
	"$bin" plan --elf "$stock/tcmprof-demo.elf" --map "$stock/tcmprof-demo.map" --board "$board" "$@" \
		--format ld -o "$OUT/$name.ld" --format ld-text -o "$OUT/$name.text.ld" \
		--format json -o "$OUT/$name.plan.json" >"$OUT/$name.plan.txt"
}

# stock_copy DIR [NAME]: a copy of the stock build in DIR, for model to
# relink, with NAME's plan (plan_into) as its itcm.ld and text.ld.
stock_copy() {
	cp -a "$stock" "$1"
	if [ -n "${2:-}" ]; then
		cp "$OUT/$2.ld" "$1/itcm.ld"
		cp "$OUT/$2.text.ld" "$1/text.ld"
	fi
}

# cold_patterns: the ld patterns of LAYOUTS-1 functions of the stock image
# that have a section of their own, 64 to 1024 bytes, and no sample (not in
# the plan of all hot code), spread evenly over .text.
cold_patterns() {
	python3 - "$stock/tcmprof-demo.map" "$OUT/allhot.plan.json" "$((LAYOUTS - 1))" <<'EOF'
import json, re, sys
mapfile, hot_plan, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
hot = {e["symbol"] for e in json.load(open(hot_plan))["entries"]}
text = open(mapfile).read()
# " .text.NAME\n   0xADDR   0xSIZE /path/libX.a(obj.o)" as GNU ld prints an input section.
found = []
for m in re.finditer(r"^ (\.text\.(\S+))\n\s+0x([0-9a-f]+)\s+0x([0-9a-f]+) \S*?(lib\w+\.a)\((\S+\.o)\)$", text, re.M):
    section, name, addr, size, lib, obj = m.group(1), m.group(2), int(m.group(3), 16), int(m.group(4), 16), m.group(5), m.group(6)
    if 0x60000000 <= addr < 0x60800000 and 64 <= size <= 1024 and name not in hot:
        found.append((addr, f"*{lib}:{obj}({section})"))
found.sort()
if n > 0 and len(found) < n:
    sys.exit(f"only {len(found)} cold functions to perturb the layout with")
for k in range(n):
    print(found[(k + 1) * len(found) // (n + 1)][1])
EOF
}

# model IMAGE-DIR NAME: traces and models UNITS echoes of the image in
# IMAGE-DIR, relinked with its itcm.ld and text.ld (if any) and in each
# layout (layout k > 0: with the k-th cold pattern too), into NAME-l<k>.json.
model() {
	local dir=$1 name=$2 k
	for k in $(seq 0 $((LAYOUTS - 1))); do
		local ld=$dir/itcm-l$k.ld
		{
			if [ -f "$dir/itcm.ld" ]; then cat "$dir/itcm.ld"; fi
			if [ "$k" != 0 ]; then sed -n "${k}p" "$OUT/cold.txt"; fi
		} >"$ld"
		local text=()
		if [ -f "$dir/text.ld" ]; then text=(TEXT_LD="$dir/text.ld"); fi
		env OUT="$dir" UNITS="$UNITS" ITCM_LD="$ld" "${text[@]}" scripts/sim-demo.sh --json >"$OUT/$name-l$k.json"
	done
}
