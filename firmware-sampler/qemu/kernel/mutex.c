/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Recursive mutex under an interrupt lock, the kernel object the Teensy
 * report found at 17 % of busy time: every lock and unlock raises BASEPRI,
 * checks the owner and drops it again.
 */
#include "kernel.h"
#include "kernel_internal.h"

void k_mutex_init(struct k_mutex *m)
{
	m->owner = NULL;
	m->lock_count = 0;
}

static bool mutex_try_take(void *obj)
{
	struct k_mutex *m = obj;
	if (m->lock_count == 0 || m->owner == _current) {
		m->owner = _current;
		m->lock_count++;
		return true;
	}
	return false;
}

int k_mutex_lock(struct k_mutex *m, uint32_t timeout_ms)
{
	return z_take_or_pend(m, mutex_try_take, timeout_ms);
}

int k_mutex_unlock(struct k_mutex *m)
{
	uint32_t key = irq_lock();
	if (m->owner != _current || m->lock_count == 0) {
		irq_unlock(key);
		return -1;
	}
	bool released = --m->lock_count == 0;
	if (released) {
		m->owner = NULL;
	}
	irq_unlock(key);
	if (released) {
		z_ready_waiters(m);
	}
	return 0;
}
