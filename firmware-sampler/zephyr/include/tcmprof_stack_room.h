/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sample path's bounds for the STACK field: how many bytes lie between
 * the interrupted context's stack pointer and the top of the stack it is
 * in (tcmp_port_stack_room in core/tcmprof_sampler.h). EXC_RETURN bit 2
 * says which stack:
 *   - PSP, a thread: the current thread's stack_info (CONFIG_THREAD_STACK_INFO,
 *     include/zephyr/kernel/thread.h), whose writable area is
 *     [start, start + size);
 *   - MSP, the interrupt stack: _kernel.cpus[0].irq_stack is its top
 *     (kernel/init.c, z_init_cpu); it holds at least CONFIG_ISR_STACK_SIZE
 *     bytes below that, the bound taken here (K_KERNEL_STACK_SIZEOF may
 *     round it up).
 * Read without a kernel call, like the current thread (the sample is a
 * zero-latency IRQ). A stack pointer outside those bounds, no current
 * thread yet, or an interrupt stack not yet set up give 0: nothing is
 * copied. The includer provides _kernel and struct k_thread: the Zephyr
 * build through <zephyr/kernel.h>, the host test through stand-ins of the
 * same shape.
 */
#ifndef TCMPROF_STACK_ROOM_H
#define TCMPROF_STACK_ROOM_H

#include <stdint.h>

static inline __attribute__((always_inline)) uint32_t tcmprof_stack_room(uint32_t exc_return,
									  const uint32_t *sp)
{
	uintptr_t at = (uintptr_t)sp, lo, hi;

	if (exc_return & 4u) {
		const struct k_thread *t = _kernel.cpus[0].current;

		if (t == NULL) {
			return 0;
		}
		lo = t->stack_info.start;
		hi = lo + t->stack_info.size;
	} else {
		hi = (uintptr_t)_kernel.cpus[0].irq_stack;
		lo = hi - CONFIG_ISR_STACK_SIZE;
		if (hi == 0) {
			return 0;
		}
	}
	return at >= lo && at <= hi ? (uint32_t)(hi - at) : 0u;
}

#define TCMP_PORT_STACK_ROOM(exc_return, sp) tcmprof_stack_room(exc_return, sp)

#endif
