/* SPDX-License-Identifier: Apache-2.0 */
/* The system tick: uptime and timeouts (Zephyr's sys_clock_announce). */
#include "kernel.h"
#include "kernel_internal.h"

static volatile uint32_t uptime_ticks;

uint32_t k_uptime_ticks(void)
{
	return uptime_ticks;
}

void kernel_tick(void)
{
	uint32_t now = ++uptime_ticks;
	z_ready_expired(now);
	z_timer_announce(now);
}
