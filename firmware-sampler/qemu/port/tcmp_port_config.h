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

/*
 * The stack the STACK field copies from, by EXC_RETURN bit 2: the current
 * thread's (PSP; its k_thread in OCRAM) or the interrupt stack (MSP;
 * ld/teensy_qemu.ld). Inline, like the hooks above: it is on every sample
 * of a STACK run.
 */
#include "kernel.h"
extern uint32_t __stack_start[], __stack_top[];
static inline __attribute__((always_inline)) uint32_t qemu_stack_room(uint32_t exc_return,
								       const uint32_t *sp)
{
	uintptr_t lo = (uintptr_t)__stack_start, size = (uintptr_t)__stack_top - lo;
	if (exc_return & 4u) {
		const struct k_thread *t = _current;
		lo = t->stack_info.start;
		size = t->stack_info.size;
	}
	/* Bytes from sp to the top; above the top or below the bottom it
	 * wraps past size. */
	uintptr_t room = lo + size - (uintptr_t)sp;
	return room <= size ? (uint32_t)room : 0u;
}
#define TCMP_PORT_STACK_ROOM(exc_return, sp) qemu_stack_room(exc_return, sp)

#endif
