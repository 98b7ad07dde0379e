#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make bench`: every benchmark script, each comparing tcmprof with its peer
# in the same run. Figures go to stdout and build/bench/*.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build/bench
for script in bench/symbolize.sh bench/capture.sh bench/profile.sh bench/pacing.sh bench/sim.sh bench/top.sh; do
  name=$(basename "$script" .sh)
  echo "== $name"
  "$script" | tee "build/bench/$name.txt"
done
echo "figures in build/bench/"
