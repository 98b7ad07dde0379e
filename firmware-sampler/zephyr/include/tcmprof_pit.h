/* SPDX-License-Identifier: Apache-2.0 */
/*
 * i.MX RT10xx Periodic Interrupt Timer (PIT) as the sampler's timer.
 *
 * The register layout was written from NXP's PERI_PIT.h (hal_nxp,
 * mcux/mcux-sdk-ng/devices/RT/RT1060/periph/PERI_PIT.h): MCR at 0x000,
 * LTMR64H/L at 0x0E0/0x0E4, four channels from 0x100 with a 0x10 stride, each
 * LDVAL, CVAL, TCTRL, TFLG. A channel counts LDVAL..0 and then reloads from
 * LDVAL and sets TFLG.TIF, so one period is LDVAL + 1 ticks, and a value
 * written to LDVAL while the channel runs only applies from the next expiry.
 *
 * This file has no Zephyr dependency so that host tests can run the exact
 * register sequences against a model (tests/pit_model.h).
 */
#ifndef TCMPROF_PIT_H
#define TCMPROF_PIT_H

#include <stddef.h>
#include <stdint.h>

#include "tcmprof_sampler.h"

struct tcmp_pit_channel {
	volatile uint32_t ldval; /* load value: period - 1 */
	volatile uint32_t cval;  /* current value, read-only */
	volatile uint32_t tctrl; /* TEN | TIE | CHN */
	volatile uint32_t tflg;  /* TIF, write 1 to clear */
};

struct tcmp_pit_regs {
	volatile uint32_t mcr;
	uint32_t reserved0[(0x0E0 - 0x004) / 4];
	volatile uint32_t ltmr64h;
	volatile uint32_t ltmr64l;
	uint32_t reserved1[(0x100 - 0x0E8) / 4];
	struct tcmp_pit_channel channel[4];
};

_Static_assert(offsetof(struct tcmp_pit_regs, ltmr64h) == 0x0E0, "PIT LTMR64H offset");
_Static_assert(offsetof(struct tcmp_pit_regs, channel) == 0x100, "PIT CHANNEL offset");
_Static_assert(sizeof(struct tcmp_pit_channel) == 0x10, "PIT channel stride");

#define TCMP_PIT_MCR_FRZ 0x1u  /* timers stop while the core is halted by a debugger */
#define TCMP_PIT_MCR_MDIS 0x2u /* module disable */
#define TCMP_PIT_TCTRL_TEN 0x1u
#define TCMP_PIT_TCTRL_TIE 0x2u
#define TCMP_PIT_TCTRL_CHN 0x4u
#define TCMP_PIT_TFLG_TIF 0x1u

/* The sampler always uses channel 0: it cannot be chained, so CHN stays 0. */
#define TCMP_PIT_CHANNEL 0u

/* LDVAL is 32 bits: the longest interval a hook can program is 2^32 - 1 ticks. */
#define TCMP_PIT_MAX_INTERVAL_TICKS 0xFFFFFFFFu

/*
 * Register access. A port build uses plain volatile accesses; the host test
 * defines these first to route every access through its register model, so
 * it sees each write and its order.
 */
#ifndef TCMP_PIT_WRITE
#define TCMP_PIT_WRITE(reg, value) ((reg) = (value))
#endif
#ifndef TCMP_PIT_READ
#define TCMP_PIT_READ(reg) (reg)
#endif

/*
 * The port's timer hooks (tcmprof_sampler.h) are defined in tcmprof_pit.c on
 * the PIT at TCMP_PIT_BASE, channel 0: tcmp_port_timer_start,
 * tcmp_port_timer_ack_next (ITCM) and tcmp_port_timer_stop. They assume the
 * PIT clock is ungated and leave the NVIC alone: the port enables the PIT
 * interrupt once at init and TCTRL.TIE gates it.
 */

#endif /* TCMPROF_PIT_H */
