#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A million-record capture (PC+LR+EXC+THREAD, the QEMU demo image's code,
# Zipf-distributed over functions) turned into a pprof profile, timed
# against `go tool pprof -top` reading the result, in the same run:
#   1. the Go benchmark (in-process time and allocations per profile);
#   2. the tcmprof binary under /usr/bin/time -v (wall time, peak RSS),
#      next to go tool pprof -top on its output.
set -euo pipefail
cd "$(dirname "$0")/.."
benchtime=${1:-3x}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

TCMPROF_BENCH_DIR=$work go test -run '^$' -bench 'ProfileMillion' -benchtime "$benchtime" ./profile
go build -o "$work/tcmprof" .

measure() { # label, command...
	local label=$1; shift
	/usr/bin/time -v "$@" >"$work/out.txt" 2>"$work/time.txt" || { cat "$work/time.txt"; exit 1; }
	awk -v l="$label" -F': ' '
		/Elapsed \(wall clock\)/ { wall = $2 }
		/Maximum resident set size/ { rss = $2 }
		END { printf "%-28s wall %s  peak RSS %.0f MB\n", l, wall, rss / 1024 }' "$work/time.txt"
}
measure "tcmprof profile (1M)" "$work/tcmprof" profile --elf "$work/build/tcmprof-demo.elf" --board qemu-demo \
	"$work/million.tcmcap" -o "$work/million.pb.gz"
measure "go tool pprof -top" go tool pprof -top "$work/million.pb.gz"
measure "tcmprof report (1M)" "$work/tcmprof" report --elf "$work/build/tcmprof-demo.elf" --board qemu-demo "$work/million.tcmcap"
ls -l "$work/million.tcmcap" "$work/million.pb.gz" | awk '{ printf "%-14s %d bytes\n", $NF, $5 }' | sed "s|$work/||"
