#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Wire cost and drain time of a capture: bytes per sample and the time to
# drain a full buffer, from the scripted device over a pty (host side and
# protocol; synthetic PCs spread over five functions) and from the demo
# firmware in QEMU (real PCs; QEMU's UART is no real link, so its time is
# the emulated firmware's and the host's, not USB's). Also the capture
# file's size and read time for a million records.
set -euo pipefail
cd "$(dirname "$0")/.."
benchtime=${1:-5x}
go test -run '^$' -bench 'Drain16K|CaptureFile1M' -benchtime "$benchtime" ./sample
go test -run '^$' -bench 'CaptureQEMU' -benchtime "$benchtime" ./cmd
