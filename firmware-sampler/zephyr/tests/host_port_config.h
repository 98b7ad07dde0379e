/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TCMP_PORT_CONFIG_HEADER for the host test of the port's sample path: the
 * PIT hooks run against the register model, and the current-thread read and
 * the STACK field's bounds are the port's own expressions
 * (tcmprof_current_thread.h, tcmprof_stack_room.h) on stand-ins for the
 * kernel structures with the shape of Zephyr's.
 */
#ifndef HOST_PORT_CONFIG_H
#define HOST_PORT_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "pit_model.h"

/* The members the sample path reads, as include/zephyr/kernel_structs.h
 * and include/zephyr/kernel/thread.h name them. */
struct k_thread {
	struct {
		uintptr_t start;
		size_t size;
		size_t delta;
	} stack_info;
};
struct fake_cpu {
	char *irq_stack;
	void *current;
};
struct fake_kernel {
	struct fake_cpu cpus[1];
};
extern struct fake_kernel _kernel;

#define TCMP_BUFFER_WORDS 4096u
#define TCMP_ENABLE_THREAD 1
#include "tcmprof_current_thread.h"
#define CONFIG_ISR_STACK_SIZE 2048
#define TCMP_ENABLE_STACK 1
#include "tcmprof_stack_room.h"

#endif
