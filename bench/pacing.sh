#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Pacing of `tcmprof bench udp-echo`: the achieved send rate as a share of the
# offered one, 1 s steps at 1,000 to 50,000 datagrams per second to a
# loopback socket that never reads (no echo, no ICMP), three steps each.
# The peer is the offered rate itself; the target is >= 99 % up to 50,000/s.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run - -bench Pacing -benchtime 3x ./loadtest | grep -E '^Benchmark|achieved'
