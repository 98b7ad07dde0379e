/* SPDX-License-Identifier: Apache-2.0 */
/* Threads and the cooperative scheduler. */
#include <string.h>

#include "kernel.h"
#include "kernel_internal.h"

#define MAX_THREADS 8

/* In DTCM: the sampler's interrupt reads it and touches nothing outside DTCM. */
struct k_thread *volatile _current __attribute__((section(".dtcm_bss.kernel")));

static struct k_thread *threads[MAX_THREADS];
static unsigned thread_count;
static struct k_thread idle_thread;
static uint8_t idle_stack[512] __attribute__((aligned(8)));

void arch_switch(uint32_t *save_sp, uint32_t new_sp);
__attribute__((noreturn)) void arch_start_first(uint32_t sp);
void arch_thread_entry(void);

/* The frame arch_switch pops: r4..r11, then the return address. */
struct initial_frame {
	uint32_t r4_entry, r5_arg, r6, r7, r8, r9, r10, r11;
	uint32_t pc;
};

void k_thread_create(struct k_thread *t, const char *name, void *stack, size_t stack_size,
		     void (*entry)(void *), void *arg)
{
	if (thread_count == MAX_THREADS) {
		printk("k_thread_create: too many threads, %s not started\n", name);
		return;
	}
	memset(stack, 0xAA, stack_size);
	uintptr_t top = ((uintptr_t)stack + stack_size) & ~(uintptr_t)7;
	struct initial_frame *f = (struct initial_frame *)(top - sizeof(*f));
	memset(f, 0, sizeof(*f));
	f->r4_entry = (uint32_t)(uintptr_t)entry;
	f->r5_arg = (uint32_t)(uintptr_t)arg;
	f->pc = (uint32_t)(uintptr_t)arch_thread_entry;
	memset(t, 0, sizeof(*t));
	t->sp = (uint32_t)(uintptr_t)f;
	t->stack_info.start = (uintptr_t)stack;
	t->stack_info.size = top - (uintptr_t)stack;
	t->name = name;
	t->state = THREAD_READY;
	threads[thread_count++] = t;
}

void k_thread_exit(void)
{
	_current->state = THREAD_DEAD;
	k_yield();
	for (;;) {
	}
}

void k_thread_foreach(void (*fn)(const struct k_thread *, void *), void *arg)
{
	for (unsigned i = 0; i < thread_count; i++) {
		fn(threads[i], arg);
	}
}

/* Round robin from the thread after the current one; idle only when nothing else is ready. */
static struct k_thread *next_ready(void)
{
	unsigned start = 0;
	for (unsigned i = 0; i < thread_count; i++) {
		if (threads[i] == _current) {
			start = i + 1;
		}
	}
	for (unsigned n = 0; n < thread_count; n++) {
		struct k_thread *t = threads[(start + n) % thread_count];
		if (t != &idle_thread && t->state == THREAD_READY) {
			return t;
		}
	}
	return &idle_thread;
}

void k_yield(void)
{
	struct k_thread *from = _current;
	struct k_thread *to = next_ready();
	if (to == from) {
		return;
	}
	_current = to;
	arch_switch(&from->sp, to->sp);
}

bool z_any_ready(void)
{
	for (unsigned i = 0; i < thread_count; i++) {
		if (threads[i] != &idle_thread && threads[i]->state == THREAD_READY) {
			return true;
		}
	}
	return false;
}

void z_pend_current(const void *obj, uint32_t timeout_ms)
{
	uint32_t key = irq_lock();
	_current->state = THREAD_PENDING;
	_current->wait_on = obj;
	_current->wake_tick = timeout_ms == K_FOREVER ? UINT32_MAX : k_uptime_ticks() + timeout_ms;
	irq_unlock(key);
	k_yield();
}

int z_take_or_pend(void *obj, bool (*try_take)(void *obj), uint32_t timeout_ms)
{
	uint32_t deadline = k_uptime_ticks() + timeout_ms;
	for (;;) {
		uint32_t key = irq_lock();
		bool taken = try_take(obj);
		irq_unlock(key);
		if (taken) {
			return 0;
		}
		if (timeout_ms == K_NO_WAIT ||
		    (timeout_ms != K_FOREVER && (int32_t)(k_uptime_ticks() - deadline) >= 0)) {
			return -1;
		}
		z_pend_current(obj, timeout_ms == K_FOREVER ? K_FOREVER : deadline - k_uptime_ticks());
	}
}

void z_ready_waiters(const void *obj)
{
	uint32_t key = irq_lock();
	for (unsigned i = 0; i < thread_count; i++) {
		struct k_thread *t = threads[i];
		if (t->state == THREAD_PENDING && t->wait_on == obj) {
			t->state = THREAD_READY;
			t->wait_on = NULL;
		}
	}
	irq_unlock(key);
}

void z_ready_expired(uint32_t now)
{
	for (unsigned i = 0; i < thread_count; i++) {
		struct k_thread *t = threads[i];
		if (t->state == THREAD_PENDING && t->wake_tick != UINT32_MAX &&
		    (int32_t)(now - t->wake_tick) >= 0) {
			t->state = THREAD_READY;
			t->wait_on = NULL;
		}
	}
}

void k_sleep_ms(uint32_t ms)
{
	z_pend_current(NULL, ms);
}

/*
 * The idle thread: WFI with PRIMASK set, so that a wake-up between the
 * ready check and the WFI is not lost; the pending interrupt ends the WFI
 * and runs once PRIMASK is cleared (the sampler records the PC here).
 */
__attribute__((noinline)) void k_cpu_idle(void)
{
	__asm volatile("cpsid i" ::: "memory");
	if (!z_any_ready()) {
		__asm volatile("dsb\n\twfi" ::: "memory");
	}
	__asm volatile("cpsie i\n\tisb" ::: "memory");
}

static void idle_entry(void *arg)
{
	(void)arg;
	for (;;) {
		k_cpu_idle();
		k_yield();
	}
}

void k_start(void)
{
	k_thread_create(&idle_thread, "idle", idle_stack, sizeof(idle_stack), idle_entry, NULL);
	_current = threads[0];
	arch_start_first(threads[0]->sp);
}
