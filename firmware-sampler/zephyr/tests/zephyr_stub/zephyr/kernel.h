/* SPDX-License-Identifier: Apache-2.0 */
/*
 * _kernel and struct k_thread with the members the sample path reads, in the
 * shape include/zephyr/kernel_structs.h (struct _cpu: irq_stack, current)
 * and include/zephyr/kernel/thread.h (stack_info, with
 * CONFIG_THREAD_STACK_INFO) give them.
 */
#include <stddef.h>
#include <stdint.h>
struct _thread_stack_info {
	uintptr_t start;
	size_t size;
	size_t delta;
};
struct k_thread {
	struct _thread_stack_info stack_info;
};
struct _cpu {
	uint32_t nested;
	char *irq_stack;
	struct k_thread *current;
};
struct z_kernel {
	struct _cpu cpus[1];
};
extern struct z_kernel _kernel;
