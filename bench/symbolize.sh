#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Times `tcmprof symbolize --json` against `llvm-symbolizer --output-style=JSON`
# on the same input in the same run: big.elf (78 KB of newlib-heavy code, see
# elf/testdata/symbolize/big.c) and every instruction address in it, five
# times over in a fixed shuffled order (over 100,000 addresses), fed on stdin
# to one process of each tool. Each tool runs $RUNS times; the best wall time
# counts. Both outputs are checked to hold one answer per address.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
PASSES=${PASSES:-5}

for tool in go make arm-none-eabi-gcc arm-none-eabi-objdump llvm-symbolizer; do
  command -v "$tool" >/dev/null || { echo "symbolize.sh: $tool is missing (make deps installs it)" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/tcmprof" .
make -s -C elf/testdata/symbolize OUT="$work" big
elf="$work/big.elf"

arm-none-eabi-objdump -d "$elf" |
  awk -F'\t' '/^ *[0-9a-f]+:\t/ && $3 !~ /^\./ { a = $1; sub(/^ */, "", a); sub(/:$/, "", a); print "0x" a }' > "$work/insns"
for _ in $(seq "$PASSES"); do cat "$work/insns"; done |
  shuf --random-source=<(yes) > "$work/addrs"
n=$(wc -l < "$work/addrs")
echo "big.elf: $(wc -l < "$work/insns") instructions, $n addresses"

# best_time CMD...: runs CMD RUNS times with the addresses on stdin, output
# to $work/out, and prints the best wall time and the CPU time (user+system)
# of that run, in seconds. CPU time is steadier on a busy machine.
best_time() {
  local best="" cpu="" w c
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -f '%e %U %S' -o "$work/time" "$@" < "$work/addrs" > "$work/out"
    read -r w u s < "$work/time"
    c=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
    if [ -z "$best" ] || awk -v a="$w" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$w cpu=$c; fi
  done
  lines=$(wc -l < "$work/out")
  [ "$lines" -eq "$n" ] || { echo "symbolize.sh: $1 answered $lines of $n addresses" >&2; exit 1; }
  echo "$best $cpu"
}

r=$(best_time "$work/tcmprof" symbolize --elf "$elf" --json)
read -r ours ours_cpu <<< "$r"
r=$(best_time llvm-symbolizer --output-style=JSON --obj="$elf")
read -r llvm llvm_cpu <<< "$r"
echo "tcmprof symbolize --json:            ${ours} s wall, ${ours_cpu} s CPU"
echo "llvm-symbolizer --output-style=JSON: ${llvm} s wall, ${llvm_cpu} s CPU"
awk -v o="$ours" -v l="$llvm" -v oc="$ours_cpu" -v lc="$llvm_cpu" 'BEGIN {
  if (o > 0 && oc > 0) printf "tcmprof is %.1fx faster (wall), %.1fx (CPU)\n", l / o, lc / oc
  else print "tcmprof took under the timer resolution"
}'
