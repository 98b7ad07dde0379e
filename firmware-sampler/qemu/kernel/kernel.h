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
void k_sem_reset(struct k_sem *s);
uint32_t k_sem_count_get(const struct k_sem *s);

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
/* The same formatting into buf; returns the length the whole text needs. */
size_t snprintk(char *buf, size_t size, const char *fmt, ...);

/*
 * Deferred logging (kernel/log.c): LOG_*() queue a message when the
 * source's level allows it; log_process() formats the queue into the RAM
 * backend. Arguments are 32-bit integers (no %s: the text is formatted
 * later).
 */
enum { LOG_LEVEL_NONE, LOG_LEVEL_ERR, LOG_LEVEL_WRN, LOG_LEVEL_INF, LOG_LEVEL_DBG };
struct log_source {
	const char *name;
	uint8_t level;
	uint32_t messages, dropped;
};
struct log_stats {
	uint32_t queued, processed, dropped, wraps;
};
void z_log_msg(struct log_source *src, uint8_t level, const char *fmt, uint32_t a0, uint32_t a1,
	       uint32_t a2);
unsigned log_process(void);
void log_get_stats(struct log_stats *out);
#define Z_LOG(src, lvl, fmt, a0, a1, a2)                                                     \
	do {                                                                                 \
		if ((src)->level >= (lvl)) {                                                 \
			z_log_msg((src), (lvl), (fmt), (uint32_t)(a0), (uint32_t)(a1),      \
				  (uint32_t)(a2));                                           \
		}                                                                            \
	} while (0)
#define LOG_WRN(src, fmt, a0, a1, a2) Z_LOG(src, LOG_LEVEL_WRN, fmt, a0, a1, a2)
#define LOG_INF(src, fmt, a0, a1, a2) Z_LOG(src, LOG_LEVEL_INF, fmt, a0, a1, a2)
#define LOG_DBG(src, fmt, a0, a1, a2) Z_LOG(src, LOG_LEVEL_DBG, fmt, a0, a1, a2)

/* Kernel heap (kernel/heap.c): first fit with splitting and coalescing. */
struct k_heap_stats {
	uint32_t allocs, frees, failures, merges, max_scan, free_bytes;
};
void k_heap_init(void);
void *k_malloc(size_t bytes);
void k_free(void *p);
void k_heap_get_stats(struct k_heap_stats *out);

/* Timers on a timing wheel (kernel/timer.c); the expiry runs in the tick interrupt. */
struct k_timer;
typedef void (*k_timer_expiry_t)(struct k_timer *t);
struct k_timer {
	struct k_timer *next, **pprev; /* wheel slot list; pprev NULL when stopped */
	uint32_t expiry_tick;
	uint32_t period; /* ms; 0 for a one-shot timer */
	k_timer_expiry_t expiry;
};
struct k_timer_stats {
	uint32_t starts, restarts, stops, expired, slot_scans;
};
void k_timer_init(struct k_timer *t, k_timer_expiry_t expiry, uint32_t period_ms);
void k_timer_start(struct k_timer *t, uint32_t delay_ms);
void k_timer_stop(struct k_timer *t);
bool k_timer_is_running(const struct k_timer *t);
uint32_t k_timer_remaining_ticks(const struct k_timer *t);
void k_timer_get_stats(struct k_timer_stats *out);

/* Called from the tick interrupt. */
void kernel_tick(void);

#endif
