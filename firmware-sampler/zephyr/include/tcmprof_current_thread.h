/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sample path's read of the interrupted thread: what
 * include/zephyr/kernel_structs.h defines _current as on a uniprocessor
 * (Kconfig rules out SMP), read without a kernel call, because the sample
 * interrupt is a zero-latency IRQ that must not call into the kernel or
 * into flash. The includer provides _kernel: the Zephyr build through
 * <zephyr/kernel.h>, the host test through a stand-in with the same shape.
 */
#ifndef TCMPROF_CURRENT_THREAD_H
#define TCMPROF_CURRENT_THREAD_H

#define TCMP_PORT_CURRENT_THREAD() ((uint32_t)(uintptr_t)_kernel.cpus[0].current)

#endif
