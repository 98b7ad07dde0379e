#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every Go fuzz target in the module for the given time each.
set -euo pipefail
fuzztime=${1:-30s}
cd "$(dirname "$0")/.."
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "== $pkg $target ($fuzztime)"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
  done
done
