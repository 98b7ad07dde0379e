/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sampler's timer hooks on the i.MX RT10xx PIT, channel 0.
 *
 * TCMP_PIT_BASE is the PIT's register block: the pit0 devicetree node's
 * address in the Zephyr build (tcmprof_zephyr_config.h), a register model in
 * the host tests.
 */
#include "tcmprof_pit.h"

#ifndef TCMP_PIT_BASE
#error "TCMP_PIT_BASE must name the PIT register block (struct tcmp_pit_regs *)"
#endif

void tcmp_port_timer_start(uint32_t first_ticks)
{
	struct tcmp_pit_regs *pit = TCMP_PIT_BASE;
	struct tcmp_pit_channel *ch = &pit->channel[TCMP_PIT_CHANNEL];

	/* Module on (MDIS = 0); freeze while a debugger halts the core. */
	TCMP_PIT_WRITE(pit->mcr, TCMP_PIT_MCR_FRZ);
	/*
	 * Stop the channel first: LDVAL is copied into the counter only when
	 * TEN goes 0 -> 1 or at an expiry, so only a stopped channel starts a
	 * fresh first_ticks period here.
	 */
	TCMP_PIT_WRITE(ch->tctrl, 0u);
	TCMP_PIT_WRITE(ch->tflg, TCMP_PIT_TFLG_TIF);
	TCMP_PIT_WRITE(ch->ldval, first_ticks - 1u);
	TCMP_PIT_WRITE(ch->tctrl, TCMP_PIT_TCTRL_TIE | TCMP_PIT_TCTRL_TEN);
}

TCMP_ITCM_FUNC void tcmp_port_timer_ack_next(uint32_t next_ticks)
{
	struct tcmp_pit_regs *pit = TCMP_PIT_BASE;
	struct tcmp_pit_channel *ch = &pit->channel[TCMP_PIT_CHANNEL];

	TCMP_PIT_WRITE(ch->tflg, TCMP_PIT_TFLG_TIF);
	/*
	 * The counter has just reloaded from the old LDVAL, so this value
	 * times the interval after the one now running (the core accounts for
	 * that lag).
	 */
	TCMP_PIT_WRITE(ch->ldval, next_ticks - 1u);
	/*
	 * Read the flag back: the read completes only after the clearing write
	 * has reached the PIT, so the old flag cannot re-pend the interrupt
	 * after the exception returns.
	 */
	(void)TCMP_PIT_READ(ch->tflg);
}

void tcmp_port_timer_stop(void)
{
	struct tcmp_pit_regs *pit = TCMP_PIT_BASE;
	struct tcmp_pit_channel *ch = &pit->channel[TCMP_PIT_CHANNEL];

	TCMP_PIT_WRITE(ch->tctrl, 0u);
	/* A flag set between the last interrupt and the write above. */
	TCMP_PIT_WRITE(ch->tflg, TCMP_PIT_TFLG_TIF);
}
