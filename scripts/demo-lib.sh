# SPDX-License-Identifier: Apache-2.0
# Shared steps of scripts/demo.sh and scripts/demo-place.sh (sourced):
# boot an image in QEMU with its UART on a pty, capture from it, stop QEMU.
# Expects $bin (tcmprof), $limit (seconds QEMU may run) and $samples.

say() { printf 'demo: %s\n' "$*"; }
fail() { printf 'demo: %s\n' "$*" >&2; exit 1; }

qemu_pid=
stop_qemu() {
	if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then
		kill "$qemu_pid" 2>/dev/null || true
		wait "$qemu_pid" 2>/dev/null || true
	fi
	qemu_pid=
}
trap stop_qemu EXIT
trap 'exit 130' INT TERM

# boot_qemu ELF LOG: starts QEMU and sets $pty to the firmware's UART.
# -icount: the virtual clock counts instructions, so the sampling interval
# and the demo's self-calibration do not depend on how busy this host is
# (docs/qemu.md).
boot_qemu() {
	local elf=$1 log=$2
	timeout "$limit" qemu-system-arm -M mps2-an500 -nographic -monitor none -serial pty \
		-icount shift=3,align=off -kernel "$elf" >"$log" 2>&1 &
	qemu_pid=$!
	pty=
	for _ in $(seq 100); do
		pty=$(sed -n 's|.*char device redirected to \(/dev/pts/[0-9]*\).*|\1|p' "$log" | head -n 1)
		[ -n "$pty" ] && return 0
		kill -0 "$qemu_pid" 2>/dev/null || break
		sleep 0.1
	done
	cat "$log" >&2
	fail "QEMU did not report its pty"
}

# capture_from_qemu CAPTURE LOG: takes $samples PC+LR samples at 10 kHz
# from the booted image, then stops QEMU.
capture_from_qemu() {
	local capture=$1 log=$2
	say "capturing $samples samples (pc,lr) at 10 kHz from $pty"
	if ! timeout 180 "$bin" capture --port "$pty" --rate 10000 --jitter 25 --fields pc,lr \
		--samples "$samples" -o "$capture" 2>"$log"; then
		tail -n 20 "$log" >&2
		fail "capture failed (log: $log)"
	fi
	stop_qemu
}
