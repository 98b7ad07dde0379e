#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The trace-driven model on the QEMU demo, timed against its peer in the
# same run:
#   1. QEMU with the tcmtrace plugin writing a trace of UNITS echoes to a
#      file: guest instructions per second of the traced run;
#   2. tcmprof sim reading that file: instructions modelled per second, end
#      to end (read, model, report), on one core;
#   3. both through a FIFO, as scripts/sim-demo.sh runs them;
#   4. the peer: QEMU's own execution log (-d exec,nochain -singlestep, one
#      line per instruction, the way to get a trace without a plugin) over
#      PEER_UNITS echoes: instructions per second;
#   5. the Go benchmarks of package sim (synthetic trace).
set -euo pipefail
cd "$(dirname "$0")/.."
UNITS=${UNITS:-2000}
PEER_UNITS=${PEER_UNITS:-10}
FROM=100
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

go build -o "$work/tcmprof" .
make -s -C firmware-sampler/qemu OUT="$work/fw" all plugin >/dev/null
elf=$work/fw/tcmprof-demo.elf
marker=$(arm-none-eabi-nm "$elf" | awk '$3 == "zsock_sendto" { print $1 }')
marker=$(printf '0x%x' $((0x$marker & ~1)))
qemu=(qemu-system-arm -M mps2-an500 -nographic -monitor none -serial null
	-icount shift=3,align=off,sleep=off -kernel "$elf")
plugin="$work/fw/tcmtrace.so,marker=$marker,from=$FROM,exit=on"

# timed LABEL CMD...: prints wall and CPU seconds, keeps them in $wall/$cpu.
timed() {
	local label=$1; shift
	/usr/bin/time -f '%e %U %S' -o "$work/time" "$@" >"$work/out" 2>"$work/err" || { cat "$work/err"; exit 1; }
	read -r wall user sys <"$work/time"
	cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')
	printf '%-44s %6.2f s wall %6.2f s CPU\n' "$label" "$wall" "$cpu"
}
rate() { awk -v n="$1" -v s="$2" 'BEGIN { printf "%.2f", n / s / 1e6 }'; } # instructions, seconds → M/s

timed "QEMU + plugin, $UNITS echoes to a file" "${qemu[@]}" -plugin "$plugin,to=$((FROM + UNITS)),out=$work/run.trace"
qemu_wall=$wall qemu_cpu=$cpu
timed "tcmprof sim on the file" "$work/tcmprof" sim --elf "$elf" --board qemu-demo --unit "" --json "$work/run.trace"
insns=$(sed -n 's/^  "instructions": \([0-9]*\),$/\1/p' "$work/out")
sim_wall=$wall sim_cpu=$cpu
mkfifo "$work/fifo"
"${qemu[@]}" -plugin "$plugin,to=$((FROM + UNITS)),out=$work/fifo" >/dev/null 2>&1 &
timed "both through a FIFO" "$work/tcmprof" sim --elf "$elf" --board qemu-demo --unit "" --json "$work/fifo"
wait
pipe_wall=$wall
timed "peer: -d exec,nochain -singlestep, $PEER_UNITS echoes" "${qemu[@]}" -singlestep -d exec,nochain -D "$work/exec.log" \
	-plugin "$work/fw/tcmtrace.so,marker=$marker,from=$FROM,to=$((FROM + PEER_UNITS)),exit=on,out=/dev/null"
peer_insns=$(grep -c '^Trace' "$work/exec.log")
peer_wall=$wall

echo
printf 'trace: %d instructions (%d echoes), %d bytes\n' "$insns" "$UNITS" "$(stat -c %s "$work/run.trace")"
printf 'QEMU + plugin:      %s M instructions/s wall, %s M/s CPU\n' "$(rate "$insns" "$qemu_wall")" "$(rate "$insns" "$qemu_cpu")"
printf 'tcmprof sim:        %s M instructions/s wall, %s M/s CPU\n' "$(rate "$insns" "$sim_wall")" "$(rate "$insns" "$sim_cpu")"
printf 'FIFO pipeline:      %s M instructions/s wall\n' "$(rate "$insns" "$pipe_wall")"
printf 'peer -d exec log:   %s M instructions/s wall (%d instructions)\n' "$(rate "$peer_insns" "$peer_wall")" "$peer_insns"
echo
go test -run '^$' -bench . -benchtime 10x ./sim
