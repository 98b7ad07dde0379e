#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Compiles the sample path as the Zephyr build would for the Teensy's
# Cortex-M7: the core and the PIT hooks with this port's real
# tcmprof_zephyr_config.h (over stand-ins for the three Zephyr headers it
# includes, tests/zephyr_stub/), then links it with ITCM at 0x0, flash at
# 0x60000000 and DTCM at 0x20000000 and checks, at every optimisation level
# a Zephyr build may use (cmake/compiler/gcc/compiler_flags.cmake:
# no_optimization -O0, optimization_debug -Og, _size -Os, _speed -O2,
# _size_aggressive -Oz, _fast -Ofast):
#   - the entry, the sample body, its STACK copy and the timer hook are in
#     .itcm;
#   - code in .itcm branches only within .itcm (no libc helper, no veneer)
#     and refers only to .itcm, .dtcm_bss and _kernel;
#   - the record buffer is in .dtcm_bss.
# The link also takes ../ld/tcmprof_build_id.ld (through the linker-script
# macros Zephyr defines, tests/zephyr_stub/linker_tool.h) after Zephyr's
# --build-id=none and the module's later --build-id=sha1, and checks with
# readelf that the note exists and lies exactly between the symbols the port
# reads it by, in flash.
# Prints "N passed, M failed"; exits 1 on any failure.
set -u

here=$(cd "$(dirname "$0")" && pwd)
zephyr=$(dirname "$here")
core=$(dirname "$zephyr")/core
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
CC=${ARM_CC:-arm-none-eabi-gcc}
OPT_LEVELS=${OPT_LEVELS:--O0 -Og -Os -O2 -Oz -Ofast}

passed=0
failed=0
result() { # result NAME OK [message]
	if [ "$2" = 1 ]; then echo "ok   itcm/$1"; passed=$((passed + 1))
	else echo "FAIL itcm/$1"; [ -n "${3:-}" ] && echo "  $3"; failed=$((failed + 1)); fi
}

in_range() { # in_range HEX LO HI
	[ -n "$1" ] && [ $((0x$1)) -ge $(($2)) ] && [ $((0x$1)) -lt $(($3)) ]
}

# The linker script: the memory map of the RT1062 and the output sections
# Zephyr's Cortex-M script gives .itcm and .dtcm_bss, plus the module's
# build-id fragment as Zephyr includes it (zephyr_linker_sources SECTIONS).
{
	cat <<'LD'
MEMORY {
	ITCM (rx) : ORIGIN = 0x00000000, LENGTH = 128K
	DTCM (rw) : ORIGIN = 0x20000000, LENGTH = 128K
	FLASH (rx) : ORIGIN = 0x60000000, LENGTH = 8M
	RAM (rw) : ORIGIN = 0x20280000, LENGTH = 256K
}
SECTIONS {
	.itcm : { *(.itcm) *(.itcm.*) } > ITCM
	.text : { *(.text .text.*) *(.rodata .rodata.*) } > FLASH
	.dtcm_bss (NOLOAD) : { *(.dtcm_bss) *(.dtcm_bss.*) } > DTCM
	.bss (NOLOAD) : { *(.data .data.*) *(.bss .bss.*) *(COMMON) } > RAM
LD
	cpp -P -include "$here/zephyr_stub/linker_tool.h" "$zephyr/ld/tcmprof_build_id.ld"
	echo "}"
} > "$work/link.ld"

# The port's thread-context hooks and _kernel come from Zephyr; stand-ins keep
# the link whole without touching the sample path.
cat > "$work/rest.c" <<'C'
#include <stddef.h>
#include <stdint.h>
struct k_thread;
struct _cpu { struct k_thread *current; };
struct z_kernel { struct _cpu cpus[1]; } _kernel;
void tcmp_port_write(const uint8_t *d, size_t n) { (void)d; (void)n; }
typedef void (*emit_fn)(void *, uint32_t, const char *);
void tcmp_port_list_threads(emit_fn e, void *c) { (void)e; (void)c; }
const uint32_t *tcmp_port_thread_stack_top(uint32_t id, uint32_t *size) { (void)id; (void)size; return NULL; }
C

check_level() { # check_level -Ox
	opt=$1
	dir=$work/$opt
	mkdir -p "$dir"
	cflags="$opt -mcpu=cortex-m7 -mthumb -mfloat-abi=hard -mfpu=fpv5-d16 -ffunction-sections
 -fdata-sections -Wall -Wextra -Werror -I$here/zephyr_stub -I$zephyr/include -I$core
 -DTCMP_PORT_CONFIG_HEADER=\"tcmprof_zephyr_config.h\"
 -DCONFIG_TCMPROF_SAMPLER_BUFFER_WORDS=16384 -DCONFIG_TCMPROF_SAMPLER_THREAD=1
 -DCONFIG_TCMPROF_SAMPLER_STACK=1 -DCONFIG_ISR_STACK_SIZE=2048"

	ok=1
	msg=""
	for src in "$core"/*.c "$zephyr/src/tcmprof_pit.c" "$work/rest.c"; do
		# shellcheck disable=SC2086 # cflags is a word list
		$CC $cflags -c -o "$dir/$(basename "$src" .c).o" "$src" 2> "$dir/cc.err" ||
			{ ok=0; msg="$(cat "$dir/cc.err")"; }
	done
	result "compiles_for_cortex_m7$opt" "$ok" "$msg"

	# Zephyr's toolchain_ld_base adds --build-id=none; the module's
	# zephyr_ld_options come later on the command line and win.
	# shellcheck disable=SC2086
	if ! $CC $cflags -nostartfiles -Wl,--gc-sections -Wl,-e,tcmp_sample_isr -Wl,-u,tcmp_init \
		-Wl,-u,tcmp_rx -Wl,-u,tcmp_poll -Wl,-u,tcmp_start -Wl,-u,tcmp_stop \
		-Wl,--build-id=none -Wl,--build-id=sha1 \
		-T "$work/link.ld" -o "$dir/path.elf" "$dir"/*.o 2> "$dir/ld.err"; then
		result "links$opt" 0 "$(head -n 5 "$dir/ld.err")"
		return
	fi
	result "links$opt" 1

	elf=$dir/path.elf
	arm-none-eabi-nm "$elf" > "$dir/syms"
	addr() { awk -v s="$1" '$3 == s { print $1 }' "$dir/syms"; }

	ok=1
	msg=""
	for sym in tcmp_sample_isr tcmp_on_sample store_stack tcmp_port_timer_ack_next; do
		a=$(addr "$sym")
		in_range "$a" 0 0x20000 || { ok=0; msg="$msg $sym at 0x${a:-none};"; }
	done
	result "sample_path_in_itcm$opt" "$ok" "outside ITCM:$msg"

	# Every branch in .itcm, from the disassembly.
	arm-none-eabi-objdump -d -j .itcm "$elf" > "$dir/itcm.dis"
	calls_out=$(grep -E '\s(bl|blx|b\.w|b)\s+[0-9a-f]+ <' "$dir/itcm.dis" |
		sed -E 's/.*\s([0-9a-f]+) <([^>]+)>.*/\1 \2/' |
		while read -r target name; do
			in_range "$target" 0 0x20000 || echo "$name@0x$target"
		done)
	[ -z "$calls_out" ] && ok=1 || ok=0
	result "no_branch_out_of_itcm$opt" "$ok" "branches from .itcm to: $calls_out"

	# A long-branch veneer may sit in ITCM itself and jump to flash from there.
	veneers=$(grep -c '_veneer$' "$dir/syms")
	[ "$veneers" = 0 ] && ok=1 || ok=0
	result "no_long_branch_veneers$opt" "$ok" "$(grep '_veneer$' "$dir/syms" | tr '\n' ' ')"

	# Everything code in .itcm refers to by address (calls, literal pools,
	# movw/movt pairs) is a relocation in the objects: each must resolve to
	# .itcm, .dtcm_bss or _kernel.
	kernel=$(addr _kernel)
	bad_refs=$(for obj in "$dir"/*.o; do
		arm-none-eabi-objdump -r -j .itcm "$obj" 2>/dev/null | awk 'NF == 3 && $1 ~ /^[0-9a-f]+$/ { print $3 }'
	done | sed -E 's/[+-]0x[0-9a-f]+$//' | sort -u | while read -r target; do
		case $target in
		.itcm* | .dtcm_bss*) continue ;;
		.*) echo "$target"; continue ;;
		esac
		a=$(addr "$target")
		if in_range "$a" 0 0x20000 || in_range "$a" 0x20000000 0x20020000 || [ "$a" = "$kernel" ]; then
			continue
		fi
		echo "$target@0x${a:-undefined}"
	done)
	[ -z "$bad_refs" ] && ok=1 || ok=0
	result "only_itcm_dtcm_kernel_referenced$opt" "$ok" "the sample path refers to: $bad_refs"

	a=$(addr buffer)
	in_range "$a" 0x20000000 0x20020000 && ok=1 || ok=0
	result "buffer_in_dtcm$opt" "$ok" "buffer at 0x${a:-none}"

	# The build-id note: readelf finds it (an oracle for the format), it is
	# the whole .tcmprof_build_id section, in flash, between the symbols.
	note_id=$(arm-none-eabi-readelf -n "$elf" | awk '/Build ID:/ { print $3 }')
	sec=$(arm-none-eabi-readelf -S -W "$elf" |
		awk '{ for (i = 1; i < NF; i++) if ($i == ".tcmprof_build_id") print $(i + 2), $(i + 4) }')
	sec_addr=${sec% *}
	sec_size=${sec#* }
	start=$(addr __tcmprof_build_id_start)
	end=$(addr __tcmprof_build_id_end)
	ok=0
	if [ ${#note_id} = 40 ] && [ -n "$sec_addr" ] && in_range "$sec_addr" 0x60000000 0x60800000 &&
		[ "$((0x$start))" = "$((0x$sec_addr))" ] && [ "$((0x$end - 0x$start))" = "$((0x$sec_size))" ] &&
		[ "$((0x$sec_size))" = 36 ]; then
		# The last 20 bytes of the section are the id readelf printed.
		got=$(arm-none-eabi-objcopy -O binary -j .tcmprof_build_id "$elf" /dev/stdout | od -An -tx1 -v |
			tr -d ' \n' | tail -c 40)
		[ "$got" = "$note_id" ] && ok=1
	fi
	result "build_id_note_between_symbols$opt" "$ok" \
		"note ${note_id:-none}; section ${sec:-none}; symbols ${start:-none}..${end:-none}"
}

for opt in $OPT_LEVELS; do
	check_level "$opt"
done

echo "itcm: $passed passed, $failed failed"
[ "$failed" = 0 ]
