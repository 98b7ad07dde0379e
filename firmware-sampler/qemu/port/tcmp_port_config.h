/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Build options of the sampler core for the QEMU port, passed to every
 * sampler source as -DTCMP_PORT_CONFIG_HEADER='"tcmp_port_config.h"'.
 *
 * The core's default sections put the sample path in ITCM
 * (.itcm_text.tcmp) and its buffer in DTCM (.dtcm_bss.tcmp), which
 * ld/teensy_qemu.ld places. Both sample-path hooks are inline, so the
 * interrupt runs tcmp_sample_isr -> tcmp_on_sample and nothing else: the
 * call and return of a hook function cost two of the ~40 instructions a
 * sample may take (docs/qemu.md).
 */
#ifndef QEMU_TCMP_PORT_CONFIG_H
#define QEMU_TCMP_PORT_CONFIG_H

#include <stdint.h>

#include "cmsdk.h"

/*
 * CMSDK APB timer 0: clear the interrupt, then write the next interval
 * (the counter counts RELOAD..0, so n ticks is RELOAD = n - 1). On the
 * CMSDK timer a RELOAD write also loads the counter (QEMU's
 * hw/timer/cmsdk-apb-timer.c does the same), so the interval runs from
 * this write, not from the expiry as on the RT1062 PIT: each interval is
 * longer than drawn by the time from the expiry to here, about 10 timer
 * ticks under -icount shift=3, 0.4 % at 10 kHz (docs/qemu.md). The
 * second store, to the same peripheral, completes after the clear, so the
 * IRQ line is low on return.
 */
#define TCMP_PORT_TIMER_ACK_NEXT(ticks)                   \
	do {                                              \
		TIMER_INTCLEAR(TIMER0_BASE) = 1u;         \
		TIMER_RELOAD(TIMER0_BASE) = (ticks) - 1u; \
	} while (0)

/* The demo kernel's running thread; the pointer itself lives in DTCM. */
struct k_thread;
extern struct k_thread *volatile _current;
#define TCMP_PORT_CURRENT_THREAD() ((uint32_t)(uintptr_t)_current)

#endif
