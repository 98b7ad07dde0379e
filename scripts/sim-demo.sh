#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the QEMU demo image, traces a window of echoes with the tcmtrace
# plugin through a FIFO, and models it with `tcmprof sim` (docs/sim.md).
#
#   scripts/sim-demo.sh                       # -Os, 300 echoes of warm-up, 2000 measured
#   OPT=-O2 UNITS=20000 scripts/sim-demo.sh --json > sim.json
#   ITCM_LD=plan.ld scripts/sim-demo.sh --capture modelled.tcmcap
#
# Environment: OPT (-Os), WORKLOAD (a planner workload of the demo's
# Makefile: alias, loops, mixed, bulk; none), BENCH_SWITCH (the value the
# testbench finds at the image's bench_switch symbol at reset: WORKLOAD=bulk's
# 1 runs bulk transfer instead of the echo; none), ITCM_LD (a GNU ld fragment for .itcm; none),
# TEXT_LD (one for the top of .text: plan --format ld-text; none),
# FROM (echoes skipped before the trace starts: past the demo's calibration,
# 100), WARMUP (300), UNITS (2000), OUT (build directory, build/sim-demo/OPT).
# Arguments go to `tcmprof sim` (--json, --capture FILE, --top N, ...).
set -euo pipefail
cd "$(dirname "$0")/.."

OPT=${OPT:--Os}
FROM=${FROM:-100}
WARMUP=${WARMUP:-300}
UNITS=${UNITS:-2000}
WORKLOAD=${WORKLOAD:-}
OUT=${OUT:-build/sim-demo/${WORKLOAD:+$WORKLOAD-}${OPT#-}}
bin=build/tcmprof

say() { printf 'sim-demo: %s\n' "$*" >&2; }
fail() { say "$*"; exit 1; }

make -s build >&2
make_args=(-s -C firmware-sampler/qemu OUT="$(realpath -m "$OUT")" OPT="$OPT" WORKLOAD="$WORKLOAD")
if [ -n "${ITCM_LD:-}" ]; then
	make_args+=(ITCM_LD="$(realpath "$ITCM_LD")")
fi
if [ -n "${TEXT_LD:-}" ]; then
	make_args+=(TEXT_LD="$(realpath "$TEXT_LD")")
fi
make "${make_args[@]}" all plugin >&2
elf=$OUT/tcmprof-demo.elf
map=$OUT/tcmprof-demo.map
marker=$(arm-none-eabi-nm "$elf" | awk '$3 == "zsock_sendto" { print $1 }')
[ -n "$marker" ] || fail "no zsock_sendto in $elf"
marker=$(printf '0x%x' $((0x$marker & ~1)))
build_id=$(arm-none-eabi-readelf -n "$elf" | awk '/Build ID:/ { print $3 }')
bench=()
if [ -n "${BENCH_SWITCH:-}" ]; then
	switch=$(arm-none-eabi-nm "$elf" | awk '$3 == "bench_switch" { print $1 }')
	[ -n "$switch" ] || fail "BENCH_SWITCH: no bench_switch in $elf (WORKLOAD=bulk has one)"
	bench=(-device "loader,addr=0x$switch,data=$BENCH_SWITCH,data-len=4")
fi

tmp=$(mktemp -d)
qemu_pid=
cleanup() {
	if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then
		kill "$qemu_pid" 2>/dev/null || true
		wait "$qemu_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkfifo "$tmp/trace"

# sleep=off: idle time jumps to the next timer, so the trace is the same on
# every run (docs/qemu.md). QEMU waits for the FIFO's reader, tcmprof sim.
say "tracing echoes $FROM to $((FROM + WARMUP + UNITS)) of $elf (marker zsock_sendto at $marker)"
qemu-system-arm -M mps2-an500 -nographic -monitor none -serial null \
	-icount shift=3,align=off,sleep=off -kernel "$elf" "${bench[@]}" \
	-plugin "$OUT/tcmtrace.so,out=$tmp/trace,marker=$marker,from=$FROM,to=$((FROM + WARMUP + UNITS)),exit=on,buildid=$build_id" \
	>"$tmp/qemu.log" 2>&1 &
qemu_pid=$!
if ! "$bin" sim --elf "$elf" --map "$map" --board qemu-demo --warmup "$WARMUP" --units "$UNITS" "$@" "$tmp/trace"; then
	grep -v 'terminating on signal' "$tmp/qemu.log" >&2 || true
	fail "tcmprof sim failed"
fi
wait "$qemu_pid" || true
qemu_pid=
