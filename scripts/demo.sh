#!/usr/bin/env bash
# `make demo`: the tcmprof loop on the QEMU stand-in of a Teensy 4.1.
#
# Builds the demo firmware (firmware-sampler/qemu), boots it in
# qemu-system-arm -M mps2-an500 with its UART on a pty, takes a capture with
# `tcmprof capture`, and turns it into a report and a pprof profile; then
# scripts/demo-place.sh plans the ITCM from that capture, relinks, verifies,
# captures the relinked image and compares. Every artefact lands in
# build/demo/; the lines printed at the end say where.
#
# Bounded: QEMU runs under `timeout` (DEMO_TIMEOUT seconds, default 300)
# and is killed when the script exits for any reason.
#
# Environment: TCMPROF (the tcmprof binary, default build/tcmprof, built
# when missing), DEMO_OPT (-Os or -O2), DEMO_SAMPLES (default 8192),
# DEMO_TIMEOUT.
set -euo pipefail
cd "$(dirname "$0")/.."

out=build/demo
bin=${TCMPROF:-build/tcmprof}
opt=${DEMO_OPT:--Os}
samples=${DEMO_SAMPLES:-8192}
limit=${DEMO_TIMEOUT:-300}

say() { printf 'demo: %s\n' "$*"; }
fail() { printf 'demo: %s\n' "$*" >&2; exit 1; }

for tool in make arm-none-eabi-gcc qemu-system-arm timeout; do
	command -v "$tool" >/dev/null 2>&1 || fail "$tool not found (run \`make deps\`)"
done
if [ ! -x "$bin" ]; then
	say "building $bin"
	go build -o "$bin" .
fi

rm -rf "$out"
mkdir -p "$out"
fw="$PWD/$out/firmware"

say "building the firmware ($opt) into $fw"
if ! make -C firmware-sampler/qemu OUT="$fw" OPT="$opt" >"$out/firmware-build.log" 2>&1; then
	tail -n 30 "$out/firmware-build.log" >&2
	fail "firmware build failed (log: $out/firmware-build.log)"
fi
elf="$fw/tcmprof-demo.elf"
map="$fw/tcmprof-demo.map"

# -icount: the virtual clock counts instructions, so the sampling interval
# and the demo's self-calibration do not depend on how busy this host is
# (docs/qemu.md).
qemu_pid=
cleanup() {
	if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then
		kill "$qemu_pid" 2>/dev/null || true
		wait "$qemu_pid" 2>/dev/null || true
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "starting QEMU (mps2-an500, Cortex-M7)"
timeout "$limit" qemu-system-arm -M mps2-an500 -nographic -monitor none -serial pty \
	-icount shift=3,align=off -kernel "$elf" >"$out/qemu.log" 2>&1 &
qemu_pid=$!

pty=
for _ in $(seq 100); do
	pty=$(sed -n 's|.*char device redirected to \(/dev/pts/[0-9]*\).*|\1|p' "$out/qemu.log" | head -n 1)
	[ -n "$pty" ] && break
	kill -0 "$qemu_pid" 2>/dev/null || break
	sleep 0.1
done
[ -n "$pty" ] || { cat "$out/qemu.log" >&2; fail "QEMU did not report its pty"; }
say "firmware UART on $pty"

say "capturing $samples samples (pc,lr) at 10 kHz"
if ! timeout 180 "$bin" capture --port "$pty" --rate 10000 --jitter 25 --fields pc,lr \
	--samples "$samples" -o "$out/before.tcmcap" 2>"$out/capture.log"; then
	tail -n 20 "$out/capture.log" >&2
	fail "capture failed (log: $out/capture.log)"
fi
cleanup

"$bin" info "$out/before.tcmcap" >"$out/before-info.txt"
"$bin" report --elf "$elf" --map "$map" --board qemu-demo "$out/before.tcmcap" >"$out/before-report.txt"
"$bin" profile --elf "$elf" --map "$map" --board qemu-demo "$out/before.tcmcap" -o "$out/before.pb.gz"

say "first capture done; artefacts in $out/:"
say "  firmware/tcmprof-demo.elf, .map   the image and its link map"
say "  before.tcmcap                     the capture (tcmprof info: before-info.txt)"
say "  before-report.txt                 busy/idle, regions, libraries, functions"
say "  before.pb.gz                      pprof profile (go tool pprof -top $out/before.pb.gz)"
say "  capture.log, qemu.log             the firmware's log lines and QEMU's output"
head -n 25 "$out/before-report.txt"

DEMO_OPT="$opt" DEMO_SAMPLES="$samples" DEMO_TIMEOUT="$limit" ./scripts/demo-place.sh "$bin" "$out"
