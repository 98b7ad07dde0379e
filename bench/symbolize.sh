#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Symbolization at Zephyr scale: tcmprof against arm-none-eabi-addr2line
# -afiC and llvm-symbolizer, on the same ELF and input in the same run.
#
# bench/genfw generates and builds a Zephyr-sized image (14 MB of DWARF,
# 300 KB of code in 321 compile units and 8 archives; see its doc comment),
# 200,000 addresses drawn from its instructions and a 16,384-sample capture.
# Then, RUNS times, each tool takes its turn (so that the load of a shared
# machine hits all alike) at:
#   1. one address given as an argument: process start to exit;
#   2. the 200,000 addresses on stdin to one process;
#   3. tcmprof report on the capture (no peer: the target is 0.5 s).
# Wall times are medians over the runs, ratios are between medians; CPU
# times (user+system, 10 ms resolution) are medians too. Outputs are
# checked to hold one answer per address. Then go test -bench ZephyrScale
# reports the heap each case leaves (memory follows what is asked).
#
# GENFW_DIR=dir keeps the generated image there and reuses it next time.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-7}
ADDRS=${ADDRS:-200000}
SAMPLES=${SAMPLES:-16384}

for tool in go arm-none-eabi-gcc arm-none-eabi-objdump arm-none-eabi-addr2line llvm-symbolizer; do
  command -v "$tool" >/dev/null || { echo "symbolize.sh: $tool is missing (make deps installs it)" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gen=${GENFW_DIR:-$work/genfw}
if [ ! -f "$gen/genfw.tcmcap" ]; then
  start=$EPOCHREALTIME
  go run ./bench/genfw -out "$gen" -addrs "$ADDRS" -capture "$SAMPLES"
  awk -v s="$start" -v e="$EPOCHREALTIME" 'BEGIN { printf "generated and built in %.0f s\n", e - s }'
fi
go build -o "$work/tcmprof" .
elf=$gen/genfw.elf
addrs=$gen/addrs.txt
first=$(head -1 "$addrs")
n=$(wc -l < "$addrs")
echo "$(basename "$elf"): $(du -m "$elf" | cut -f1) MB file; $n addresses ($(sort -u "$addrs" | wc -l) distinct); first address $first"

# run NAME CMD...: runs CMD once with stdin from $in, output to
# $work/NAME.out, and appends its wall and CPU seconds to $work/NAME.times.
run() {
  local name=$1 start end
  shift
  start=$EPOCHREALTIME
  /usr/bin/time -f '%U %S' -o "$work/cpu" "$@" < "$in" > "$work/$name.out"
  end=$EPOCHREALTIME
  awk -v s="$start" -v e="$end" '{ printf "%.4f %.2f\n", e - s, $1 + $2 }' "$work/cpu" >> "$work/$name.times"
}

# answers NAME KIND: the number of answers in NAME's output (llvm and
# tcmprof end each with a blank line; addr2line -a starts each with 0x).
answers() {
  case $2 in
    blank) grep -c '^$' "$work/$1.out" || true ;;
    addr) grep -c '^0x' "$work/$1.out" || true ;;
  esac
}

# median NAME COLUMN: the median of a column of NAME's times.
median() {
  sort -g -k"$2" "$work/$1.times" | awk -v c="$2" '{ v[NR] = $c } END { m = int((NR + 1) / 2); print (NR % 2) ? v[m] : (v[m] + v[m + 1]) / 2 }'
}

for _ in $(seq "$RUNS"); do
  in=/dev/null
  run one-tcmprof "$work/tcmprof" symbolize --elf "$elf" "$first"
  run one-addr2line arm-none-eabi-addr2line -afiC -e "$elf" "$first"
  run one-llvm llvm-symbolizer --obj="$elf" "$first"
  in=$addrs
  run bulk-tcmprof "$work/tcmprof" symbolize --elf "$elf"
  run bulk-addr2line arm-none-eabi-addr2line -afiC -e "$elf"
  run bulk-llvm llvm-symbolizer --obj="$elf"
  in=/dev/null
  run report "$work/tcmprof" report --elf "$elf" "$gen/genfw.tcmcap"
done
for check in "one-tcmprof blank 1" "one-addr2line addr 1" "one-llvm blank 1" \
  "bulk-tcmprof blank $n" "bulk-addr2line addr $n" "bulk-llvm blank $n"; do
  set -- $check
  got=$(answers "$1" "$2")
  [ "$got" -eq "$3" ] || { echo "symbolize.sh: $1 gave $got answers for $3 addresses" >&2; exit 1; }
done

ms() { awk -v s="$1" 'BEGIN { printf "%.0f ms", s * 1000 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo "medians of $RUNS runs, wall (CPU):"
o=$(median one-tcmprof 1) a=$(median one-addr2line 1) l=$(median one-llvm 1)
echo "  first address: tcmprof $(ms "$o") ($(median one-tcmprof 2) s), addr2line $(ms "$a") ($(median one-addr2line 2) s), llvm-symbolizer $(ms "$l") ($(median one-llvm 2) s)"
echo "    tcmprof / llvm-symbolizer = $(ratio "$o" "$l") (target <= 0.5), tcmprof / addr2line = $(ratio "$o" "$a")"
o=$(median bulk-tcmprof 1) a=$(median bulk-addr2line 1) l=$(median bulk-llvm 1)
echo "  $n addresses: tcmprof $o s ($(median bulk-tcmprof 2) s), addr2line $a s ($(median bulk-addr2line 2) s), llvm-symbolizer $l s ($(median bulk-llvm 2) s)"
echo "    tcmprof is $(ratio "$a" "$o")x faster than addr2line (target >= 2), $(ratio "$l" "$o")x faster than llvm-symbolizer (target >= 10)"
echo "  report, $SAMPLES samples: $(median report 1) s ($(median report 2) s) (target < 0.5 s)"

TCMPROF_GENFW_ELF=$elf TCMPROF_GENFW_ADDRS=$addrs go test -run '^$' -bench 'ZephyrScale' -benchtime 3x ./elf/image | grep -E '^Benchmark|^ok'
