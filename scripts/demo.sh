#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
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

. scripts/demo-lib.sh

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

say "starting QEMU (mps2-an500, Cortex-M7)"
boot_qemu "$elf" "$out/qemu.log"
capture_from_qemu "$out/before.tcmcap" "$out/capture.log"

"$bin" info "$out/before.tcmcap" >"$out/before-info.txt"
"$bin" report --elf "$elf" --map "$map" --board qemu-demo "$out/before.tcmcap" >"$out/report.txt"
"$bin" profile --elf "$elf" --map "$map" --board qemu-demo "$out/before.tcmcap" -o "$out/profile.pb.gz"

say "first capture done; artefacts in $out/:"
say "  firmware/tcmprof-demo.elf, .map   the image and its link map"
say "  before.tcmcap                     the capture (tcmprof info: before-info.txt)"
say "  report.txt                        busy/idle, regions, libraries, functions (below)"
say "  profile.pb.gz                     pprof profile (go tool pprof -top $out/profile.pb.gz)"
say "  capture.log, qemu.log             the firmware's log lines and QEMU's output"
cat "$out/report.txt"

DEMO_OPT="$opt" DEMO_SAMPLES="$samples" DEMO_TIMEOUT="$limit" ./scripts/demo-place.sh "$bin" "$out"
