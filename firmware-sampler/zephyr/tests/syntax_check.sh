#!/bin/sh
# Type-checks the Zephyr glue (src/tcmprof_zephyr.c, tcmprof_shell.c,
# tcmprof_usbd.c) with arm-none-eabi-gcc -fsyntax-only -Werror against
# tests/zephyr_api_stub/: declarations of the Zephyr/HAL APIs with the
# signatures read in their sources. It catches mistakes in this port's own C
# under several Kconfig combinations; only a Zephyr build confirms the APIs.
# Prints "N passed, M failed"; exits 1 on any failure.
set -u

here=$(cd "$(dirname "$0")" && pwd)
zephyr=$(dirname "$here")
CC=${ARM_CC:-arm-none-eabi-gcc}

common="-DCONFIG_TCMPROF_SAMPLER_BUFFER_WORDS=16384 -DCONFIG_TCMPROF_SAMPLER_MAX_THREADS=32
 -DCONFIG_TCMPROF_SAMPLER_RX_BUFFER_SIZE=1024 -DCONFIG_TCMPROF_SAMPLER_TX_BUFFER_SIZE=2048
 -DCONFIG_TCMPROF_SAMPLER_TX_TIMEOUT_MS=1000 -DCONFIG_TCMPROF_SAMPLER_POLL_MS=5
 -DCONFIG_TCMPROF_SAMPLER_MAX_RATE_HZ=100000 -DCONFIG_TCMPROF_SAMPLER_DEFAULT_RATE_HZ=10000
 -DCONFIG_TCMPROF_SAMPLER_THREAD_STACK_SIZE=2048 -DCONFIG_TCMPROF_SAMPLER_THREAD_PRIORITY=10
 -DCONFIG_TCMPROF_SAMPLER_LOG_LEVEL=3 -DCONFIG_TCMPROF_SAMPLER_JITTER_PCT=20
 -DCONFIG_TCMPROF_USBD_VID=0x2fe3 -DCONFIG_TCMPROF_USBD_PID=0x0100
 -DCONFIG_TCMPROF_USBD_MANUFACTURER=\"tcmprof\" -DCONFIG_TCMPROF_USBD_PRODUCT=\"sampler\"
 -DCONFIG_APPLICATION_INIT_PRIORITY=90"

# name | extra Kconfig defines
variants="snippet_defaults|-DCONFIG_TCMPROF_SAMPLER_THREAD=1 -DCONFIG_TCMPROF_SAMPLER_FIELD_LR=1 -DCONFIG_TCMPROF_SAMPLER_FIELD_EXC=1 -DCONFIG_TCMPROF_SAMPLER_FIELD_THREAD=1 -DCONFIG_TCMPROF_SAMPLER_MODE_SNAPSHOT=1 -DCONFIG_LINKER_GNU_BUILD_ID=1 -DCONFIG_HWINFO=1
minimal|-DCONFIG_TCMPROF_SAMPLER_MODE_STREAM=1"

passed=0
failed=0
echo "$variants" | while IFS='|' read -r name defines; do
	ok=1
	for src in tcmprof_zephyr.c tcmprof_shell.c tcmprof_usbd.c; do
		# shellcheck disable=SC2086 # word lists
		if ! out=$($CC -std=gnu11 -mcpu=cortex-m7 -mthumb -fsyntax-only -Wall -Wextra \
			-Wno-unused-parameter -Werror -imacros "$here/zephyr_api_stub/zephyr_stdint.h" \
			-I"$here/zephyr_api_stub" -I"$zephyr/include" -I"$zephyr/../core" \
			-DTCMP_PORT_CONFIG_HEADER=\"tcmprof_zephyr_config.h\" $common $defines \
			"$zephyr/src/$src" 2>&1); then
			ok=0
			echo "  $name: $src:"
			echo "$out" | head -20
		fi
	done
	if [ $ok = 1 ]; then echo "ok   syntax/$name"; else echo "FAIL syntax/$name"; fi
done > "${TMPDIR:-/tmp}/tcmprof_syntax.$$"
cat "${TMPDIR:-/tmp}/tcmprof_syntax.$$"
passed=$(grep -c '^ok' "${TMPDIR:-/tmp}/tcmprof_syntax.$$")
failed=$(grep -c '^FAIL' "${TMPDIR:-/tmp}/tcmprof_syntax.$$")
rm -f "${TMPDIR:-/tmp}/tcmprof_syntax.$$"
echo "syntax: $passed passed, $failed failed"
[ "$failed" = 0 ]
