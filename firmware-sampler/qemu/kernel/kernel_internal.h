/* SPDX-License-Identifier: Apache-2.0 */
/* Scheduler internals shared by the kernel's files only. */
#ifndef QEMU_KERNEL_INTERNAL_H
#define QEMU_KERNEL_INTERNAL_H

#include "kernel.h"

enum { THREAD_READY = 1, THREAD_PENDING = 2, THREAD_DEAD = 3 };

/* Pends the current thread on obj (NULL: plain sleep) and switches away. */
void z_pend_current(const void *obj, uint32_t timeout_ms);
/*
 * Calls try_take(obj) under the interrupt lock until it returns true (0),
 * pending the current thread on obj between tries; -1 once timeout_ms has
 * passed (K_NO_WAIT: one try, K_FOREVER: no deadline). The one wait loop of
 * mutexes and semaphores.
 */
int z_take_or_pend(void *obj, bool (*try_take)(void *obj), uint32_t timeout_ms);
/* Makes every thread pending on obj ready; safe from interrupts. */
void z_ready_waiters(const void *obj);
/* Makes every thread whose timeout has passed ready; from the tick. */
void z_ready_expired(uint32_t now);
/* Runs the timers due at tick now; from the tick. */
void z_timer_announce(uint32_t now);
bool z_any_ready(void);
void k_thread_exit(void);

#endif
