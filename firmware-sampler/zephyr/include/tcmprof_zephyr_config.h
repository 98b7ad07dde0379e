/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Build options of the sampler core for the Zephyr port, passed to every
 * sampler source as -DTCMP_PORT_CONFIG_HEADER="tcmprof_zephyr_config.h" (see
 * CMakeLists.txt). Read by tcmprof_sampler.h before its defaults apply.
 */
#ifndef TCMPROF_ZEPHYR_CONFIG_H
#define TCMPROF_ZEPHYR_CONFIG_H

#include <zephyr/devicetree.h>
#include <zephyr/kernel.h> /* _kernel, from kernel_structs.h */
#include <zephyr/linker/section_tags.h>

/*
 * The sample path lives in ITCM and its state in DTCM
 * (include/zephyr/linker/section_tags.h; the Cortex-M linker script copies
 * .itcm from flash and zeroes .dtcm_bss at boot). Every function of the
 * sample path shares the one .itcm input section, so calls between them
 * stay within BL range; noinline keeps each where it was placed.
 */
#define TCMP_ITCM_FUNC __itcm_section __attribute__((noinline))
#define TCMP_DTCM_BSS __dtcm_bss_section

#define TCMP_BUFFER_WORDS CONFIG_TCMPROF_SAMPLER_BUFFER_WORDS

#ifdef CONFIG_TCMPROF_SAMPLER_THREAD
#define TCMP_ENABLE_THREAD 1
#include "tcmprof_current_thread.h"
#else
#define TCMP_ENABLE_THREAD 0
#endif

#ifdef CONFIG_TCMPROF_SAMPLER_STACK
#define TCMP_ENABLE_STACK 1
#include "tcmprof_stack_room.h"
#else
#define TCMP_ENABLE_STACK 0
#endif

/* The PIT register block, from the pit0 node (its status stays "disabled"). */
#define TCMP_PIT_BASE ((struct tcmp_pit_regs *)DT_REG_ADDR(DT_NODELABEL(pit0)))

#endif /* TCMPROF_ZEPHYR_CONFIG_H */
