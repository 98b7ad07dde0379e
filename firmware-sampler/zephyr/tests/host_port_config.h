/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TCMP_PORT_CONFIG_HEADER for the host test of the port's sample path: the
 * PIT hooks run against the register model, and the current-thread read is
 * the port's own expression (tcmprof_current_thread.h) on a stand-in for
 * the kernel structure with the same shape as Zephyr's _kernel.cpus[0].current.
 */
#ifndef HOST_PORT_CONFIG_H
#define HOST_PORT_CONFIG_H

#include <stdint.h>

#include "pit_model.h"

struct fake_cpu {
	void *current;
};
struct fake_kernel {
	struct fake_cpu cpus[1];
};
extern struct fake_kernel _kernel;

#define TCMP_BUFFER_WORDS 4096u
#define TCMP_ENABLE_THREAD 1
#include "tcmprof_current_thread.h"

#endif
