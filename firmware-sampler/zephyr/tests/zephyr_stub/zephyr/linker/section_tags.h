/* SPDX-License-Identifier: Apache-2.0 */
/* The two section tags the port uses, as include/zephyr/linker/section_tags.h
 * defines them on ARM (Z_GENERIC_SECTION of .itcm / .dtcm_bss). */
#define __itcm_section __attribute__((section(".itcm")))
#define __dtcm_bss_section __attribute__((section(".dtcm_bss")))
