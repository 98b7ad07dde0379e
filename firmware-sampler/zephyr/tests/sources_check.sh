#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The module's CMakeLists.txt names its sources one by one, not with
# file(GLOB): checks that it names every C file of the core
# (${TCMPROF_CORE_DIR}/NAME.c) and of this port (src/NAME.c), and nothing
# that does not exist. Prints "N passed, M failed"; exits 1 on any failure.
set -u

here=$(cd "$(dirname "$0")" && pwd)
zephyr=$(dirname "$here")
cmake="$zephyr/CMakeLists.txt"

passed=0
failed=0
check() { # name, condition result
	if [ "$2" = 0 ]; then
		echo "ok   sources/$1"
		passed=$((passed + 1))
	else
		echo "FAIL sources/$1"
		failed=$((failed + 1))
	fi
}

for f in "$zephyr"/../core/*.c; do
	name=$(basename "$f")
	grep -q "\${TCMPROF_CORE_DIR}/$name\$" "$cmake"
	check "core/$name listed" $?
done
for f in "$zephyr"/src/*.c; do
	name=$(basename "$f")
	grep -q "src/$name\([ )]\|\$\)" "$cmake"
	check "src/$name listed" $?
done
# Every listed file exists.
for listed in $(grep -o '\(\${TCMPROF_CORE_DIR}\|src\)/[A-Za-z0-9_]*\.c' "$cmake"); do
	path=$(echo "$listed" | sed "s|\${TCMPROF_CORE_DIR}|$zephyr/../core|; s|^src/|$zephyr/src/|")
	test -f "$path"
	check "$listed exists" $?
done
! grep -q '^[[:space:]]*file(GLOB' "$cmake"
check "no file(GLOB)" $?

echo "sources: $passed passed, $failed failed"
[ "$failed" = 0 ]
