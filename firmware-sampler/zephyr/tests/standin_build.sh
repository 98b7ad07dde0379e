#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The stand-in build: every source of the module (the core's *.c and
# src/*.c, as CMakeLists.txt selects them for the configuration) compiled
# for the Teensy's Cortex-M7 with -Werror against tests/zephyr_api_stub/,
# declarations of the Zephyr and HAL APIs with the arities read in the
# Zephyr sources of the version simulated. Once per configuration of
# kconfig_test.py's AUTOCONF_VARIANTS: its autoconf.h comes from kconfiglib
# over the module's Kconfig and the stub tree of that version (3.7 LTS or
# 4.x), so a call that does not match a version's API, or a CONFIG_ symbol
# the module's Kconfig does not give, fails here. Only a Zephyr build
# confirms the declarations themselves.
# Prints "N passed, M failed"; exits 1 on any failure.
set -u

here=$(cd "$(dirname "$0")" && pwd)
zephyr=$(dirname "$here")
core=$(dirname "$zephyr")/core
CC=${ARM_CC:-arm-none-eabi-gcc}
PYTHON=${KCONFIG_PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

variants=$("$PYTHON" "$here/kconfig_test.py" --autoconf "$work") || {
	echo "standin: could not write the configurations"
	exit 1
}

# ZEPHYR_VERSION_CODE of the tree each variant simulates: the first 3.7 LTS
# release, and a 4.x release (the API differences are all before 4.0).
version_code() {
	case $1 in
	v3.7-*) echo 0x030700 ;;
	v4-*) echo 0x040400 ;;
	esac
}

passed=0
failed=0
for variant in $variants; do
	autoconf=$work/$variant/autoconf.h
	sources="$core/*.c $zephyr/src/tcmprof_pit.c $zephyr/src/tcmprof_zephyr.c"
	grep -q '^#define CONFIG_TCMPROF_SAMPLER_SHELL 1' "$autoconf" &&
		sources="$sources $zephyr/src/tcmprof_shell.c"
	grep -q '^#define CONFIG_TCMPROF_USBD_INIT 1' "$autoconf" &&
		sources="$sources $zephyr/src/tcmprof_usbd.c"
	ok=1
	msg=""
	for src in $sources; do
		# shellcheck disable=SC2086 # word lists
		if ! out=$($CC -std=gnu11 -mcpu=cortex-m7 -mthumb -mfloat-abi=hard -mfpu=fpv5-d16 -O2 -c \
			-o "$work/out.o" -Wall -Wextra -Wno-unused-parameter -Werror \
			-imacros "$here/zephyr_api_stub/zephyr_stdint.h" -imacros "$autoconf" \
			-DSTANDIN_ZEPHYR_VERSION_CODE="$(version_code "$variant")" \
			-I"$here/zephyr_api_stub" -I"$zephyr/include" -I"$core" \
			-DTCMP_PORT_CONFIG_HEADER=\"tcmprof_zephyr_config.h\" "$src" 2>&1); then
			ok=0
			msg="$msg
  $(basename "$src"):
$(echo "$out" | head -20)"
		fi
	done
	if [ $ok = 1 ]; then
		echo "ok   standin/$variant ($(echo $sources | wc -w) sources)"
		passed=$((passed + 1))
	else
		echo "FAIL standin/$variant$msg"
		failed=$((failed + 1))
	fi
done
echo "standin: $passed passed, $failed failed"
[ "$failed" = 0 ]
