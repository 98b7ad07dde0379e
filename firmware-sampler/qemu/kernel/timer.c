/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kernel timers on a hashed timing wheel: a timer sits in the slot of its
 * expiry tick modulo the wheel size, so starting and stopping one is a
 * list insert and unlink, and each tick looks at one slot only. Timers
 * further away than one turn stay in their slot until their turn comes.
 * The network stack restarts a flow's idle timer on every packet, as
 * Zephyr's connection tracking and socket timeouts do.
 */
#include "kernel.h"
#include "kernel_internal.h"

#define WHEEL_SLOTS 64u /* power of two */

static struct k_timer *wheel[WHEEL_SLOTS];
static struct k_timer_stats stats;

void k_timer_init(struct k_timer *t, k_timer_expiry_t expiry, uint32_t period_ms)
{
	t->next = NULL;
	t->pprev = NULL;
	t->expiry_tick = 0;
	t->period = period_ms;
	t->expiry = expiry;
}

static void wheel_unlink(struct k_timer *t)
{
	if (t->pprev == NULL) {
		return;
	}
	*t->pprev = t->next;
	if (t->next != NULL) {
		t->next->pprev = t->pprev;
	}
	t->next = NULL;
	t->pprev = NULL;
}

static void wheel_insert(struct k_timer *t, uint32_t expiry_tick)
{
	struct k_timer **slot = &wheel[expiry_tick & (WHEEL_SLOTS - 1u)];
	t->expiry_tick = expiry_tick;
	t->next = *slot;
	if (t->next != NULL) {
		t->next->pprev = &t->next;
	}
	t->pprev = slot;
	*slot = t;
}

void k_timer_start(struct k_timer *t, uint32_t delay_ms)
{
	uint32_t key = irq_lock();
	if (t->pprev != NULL) {
		wheel_unlink(t);
		stats.restarts++;
	} else {
		stats.starts++;
	}
	wheel_insert(t, k_uptime_ticks() + (delay_ms == 0 ? 1u : delay_ms));
	irq_unlock(key);
}

void k_timer_stop(struct k_timer *t)
{
	uint32_t key = irq_lock();
	if (t->pprev != NULL) {
		wheel_unlink(t);
		stats.stops++;
	}
	irq_unlock(key);
}

bool k_timer_is_running(const struct k_timer *t)
{
	return t->pprev != NULL;
}

uint32_t k_timer_remaining_ticks(const struct k_timer *t)
{
	uint32_t key = irq_lock();
	uint32_t left = 0;
	if (t->pprev != NULL) {
		int32_t d = (int32_t)(t->expiry_tick - k_uptime_ticks());
		left = d > 0 ? (uint32_t)d : 0u;
	}
	irq_unlock(key);
	return left;
}

/* From the tick: runs the timers of this tick's slot that are due. */
void z_timer_announce(uint32_t now)
{
	struct k_timer **slot = &wheel[now & (WHEEL_SLOTS - 1u)];
	struct k_timer *t = *slot;
	while (t != NULL) {
		struct k_timer *next = t->next;
		stats.slot_scans++;
		if ((int32_t)(now - t->expiry_tick) >= 0) {
			wheel_unlink(t);
			stats.expired++;
			if (t->period != 0) {
				wheel_insert(t, now + t->period);
			}
			t->expiry(t);
		}
		t = next;
	}
}

void k_timer_get_stats(struct k_timer_stats *out)
{
	uint32_t key = irq_lock();
	*out = stats;
	irq_unlock(key);
}
