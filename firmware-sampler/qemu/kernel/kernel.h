/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tiny cooperative kernel shaped like Zephyr's: threads with their own
 * stacks on PSP (interrupts on MSP), mutexes under a BASEPRI interrupt lock,
 * semaphores, FIFOs, a work queue and a 1 kHz tick. It exists so that the
 * profile of the demo has the kernel share and the THREAD field of a real
 * image.
 */
#ifndef QEMU_KERNEL_H
#define QEMU_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define K_FOREVER UINT32_MAX
#define K_NO_WAIT 0u

struct k_thread {
	uint32_t sp; /* saved stack pointer while switched out */
	/* The thread's stack, as Zephyr's k_thread.stack_info: the sampler's
	 * STACK field copies no further than start + size. */
	struct {
		uintptr_t start;
		size_t size;
	} stack_info;
	const char *name;
	uint8_t state;
	const void *wait_on; /* object the thread is pending on */
	uint32_t wake_tick;  /* for timed waits */
};

/* The running thread; what the sampler records as THREAD (like Zephyr's _current). */
extern struct k_thread *volatile _current;

void k_thread_create(struct k_thread *t, const char *name, void *stack, size_t stack_size,
		     void (*entry)(void *), void *arg);
/* Starts the scheduler with the first created thread; never returns. */
__attribute__((noreturn)) void k_start(void);
void k_yield(void);
void k_sleep_ms(uint32_t ms);
uint32_t k_uptime_ticks(void);
/* Calls fn for every thread; the sampler's thread-table hook uses it. */
void k_thread_foreach(void (*fn)(const struct k_thread *, void *), void *arg);

/* Interrupt lock that leaves priority 0 (the sampler) enabled. */
static inline uint32_t irq_lock(void)
{
	uint32_t key;
	__asm volatile("mrs %0, basepri\n\t"
		       "msr basepri_max, %1\n\t"
		       "isb"
		       : "=&r"(key)
		       : "r"(0x20u)
		       : "memory");
	return key;
}

static inline void irq_unlock(uint32_t key)
{
	__asm volatile("msr basepri, %0\n\tisb" ::"r"(key) : "memory");
}

struct k_mutex {
	struct k_thread *owner;
	uint32_t lock_count;
};

void k_mutex_init(struct k_mutex *m);
int k_mutex_lock(struct k_mutex *m, uint32_t timeout_ms);
int k_mutex_unlock(struct k_mutex *m);

struct k_sem {
	volatile uint32_t count;
	uint32_t limit;
};

void k_sem_init(struct k_sem *s, uint32_t initial, uint32_t limit);
void k_sem_give(struct k_sem *s);
int k_sem_take(struct k_sem *s, uint32_t timeout_ms);

/* Intrusive singly linked FIFO; items start with a `void *` link word. */
struct k_fifo {
	void *head, *tail;
	struct k_sem items;
};

void k_fifo_init(struct k_fifo *f);
void k_fifo_put(struct k_fifo *f, void *item);
void *k_fifo_get(struct k_fifo *f, uint32_t timeout_ms);

struct k_work;
typedef void (*k_work_handler_t)(struct k_work *work);

struct k_work {
	void *fifo_link;
	k_work_handler_t handler;
	volatile bool pending;
};

struct k_work_q {
	struct k_fifo queue;
	struct k_thread thread;
};

void k_work_init(struct k_work *work, k_work_handler_t handler);
void k_work_queue_start(struct k_work_q *q, const char *name, void *stack, size_t stack_size);
/* Returns false when the work was already queued. */
bool k_work_submit_to_queue(struct k_work_q *q, struct k_work *work);

/* Minimal printf for the console: %s %d %u %x %08x %c %%. */
void printk(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Called from the tick interrupt. */
void kernel_tick(void);

#endif
