/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The linker-script macros ../../ld/tcmprof_build_id.ld uses, as Zephyr
 * defines them for a GCC link of an XIP Cortex-M image without an MMU:
 *   SECTION_PROLOGUE(name, options, align)  name options : align
 *   GROUP_ROM_LINK_IN(vregion, lregion)     > lregion
 * (include/zephyr/linker/linker-tool-gcc.h, read at commit 3b55feb; the
 * Z_VM_KERNEL and ARCH_POSIX variants do not apply to the RT1062), and
 *   ROMABLE_REGION FLASH, RAMABLE_REGION RAM
 * (include/zephyr/arch/arm/cortex_m/scripts/linker.ld with CONFIG_XIP, read
 * at commit 0202bd8).
 */
#define SECTION_PROLOGUE(name, options, align) name options : align
#define GROUP_ROM_LINK_IN(vregion, lregion) > lregion
#define ROMABLE_REGION FLASH
#define RAMABLE_REGION RAM
