/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Declarations of the Zephyr APIs the port's glue uses, with the signatures
 * read in the Zephyr sources (zephyr/README.md lists them), so
 * standin_build.sh can compile the glue without a Zephyr tree and a call
 * with the wrong arguments fails. Not a model: the host tests that run the
 * glue (glue_test.c, usbd_test.c) define these in fake_zephyr.c.
 *
 * include/zephyr/kernel.h (a stored version of 188057 characters):
 *   __syscall int k_mutex_lock(struct k_mutex *mutex, k_timeout_t timeout);
 *   __syscall int k_mutex_unlock(struct k_mutex *mutex);
 *   __syscall int k_sem_take(struct k_sem *sem, k_timeout_t timeout);
 *   __syscall void k_sem_give(struct k_sem *sem);
 *   void k_thread_foreach(k_thread_user_cb_t user_cb, void *user_data);
 * The others as declared since the module's first version (long-stable
 * APIs, not re-read for 3.7 and 4.x separately).
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>

#define ARG_UNUSED(x) (void)(x)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define BUILD_ASSERT(cond, msg) _Static_assert(cond, msg)
/* toolchain/gcc.h, reached through kernel.h -> toolchain.h */
#define __weak __attribute__((__weak__))

/* sys/util_macro.h, sys/util.h */
#define Z_STRINGIFY(x) #x
#define STRINGIFY(s) Z_STRINGIFY(s)
#define Z_IS_ENABLED1(m) Z_IS_ENABLED2(_XXXX##m)
#define _XXXX1 _YYYY,
#define Z_IS_ENABLED2(one_or_two) Z_IS_ENABLED3(one_or_two 1, 0)
#define Z_IS_ENABLED3(ignore, val, ...) val
#define IS_ENABLED(m) Z_IS_ENABLED1(m)
#define Z_DEBRACKET(...) __VA_ARGS__
#define Z_COND1(m, a, b) Z_COND2(_XXXX##m, a, b)
#define Z_COND2(one_or_two, a, b) Z_COND3(one_or_two a, b)
#define Z_COND3(ignore, val, ...) Z_DEBRACKET val
#define COND_CODE_1(flag, if_1, else) Z_COND1(flag, if_1, else)
#define IF_ENABLED(flag, code) COND_CODE_1(flag, code, ())

/* include/zephyr/kernel/thread.h: stack_info with CONFIG_THREAD_STACK_INFO
 * (start, size, delta; start + size is the top of the writable stack). */
struct _thread_stack_info {
	uintptr_t start;
	size_t size;
	size_t delta;
};
struct k_thread {
#ifdef CONFIG_THREAD_STACK_INFO
	struct _thread_stack_info stack_info;
#endif
	int dummy;
};
typedef struct k_thread *k_tid_t;
/* include/zephyr/kernel_structs.h: struct _cpu's irq_stack (the top of the
 * interrupt stack) and current, the same in 3.7 and 4.x. */
struct _cpu {
	uint32_t nested;
	char *irq_stack;
	struct k_thread *current;
};
struct z_kernel {
	struct _cpu cpus[1];
};
extern struct z_kernel _kernel;

typedef struct {
	int64_t ticks;
} k_timeout_t;
#define K_MSEC(ms) ((k_timeout_t){(ms)})
#define K_FOREVER ((k_timeout_t){-1})

struct k_mutex {
	int dummy;
};
struct k_sem {
	int dummy;
};
#define K_MUTEX_DEFINE(name) struct k_mutex name
#define K_SEM_DEFINE(name, initial, limit) struct k_sem name
int k_mutex_lock(struct k_mutex *mutex, k_timeout_t timeout);
int k_mutex_unlock(struct k_mutex *mutex);
int k_sem_take(struct k_sem *sem, k_timeout_t timeout);
void k_sem_give(struct k_sem *sem);

struct k_spinlock {
	int dummy;
};
typedef struct {
	int key;
} k_spinlock_key_t;
k_spinlock_key_t k_spin_lock(struct k_spinlock *l);
void k_spin_unlock(struct k_spinlock *l, k_spinlock_key_t key);

typedef void (*k_thread_user_cb_t)(const struct k_thread *thread, void *user_data);
void k_thread_foreach(k_thread_user_cb_t user_cb, void *user_data);
const char *k_thread_name_get(k_tid_t thread);
uint32_t k_cycle_get_32(void);
typedef void (*k_thread_entry_t)(void *p1, void *p2, void *p3);
#define K_THREAD_DEFINE(name, stack_size, entry, p1, p2, p3, prio, options, delay)             \
	const k_thread_entry_t name##_entry = (entry)

/* sys/atomic.h */
typedef long atomic_t;
typedef long atomic_val_t;
atomic_val_t atomic_get(const atomic_t *target);
atomic_val_t atomic_set(atomic_t *target, atomic_val_t value);
atomic_val_t atomic_clear(atomic_t *target);

/* irq.h */
#define IRQ_ZERO_LATENCY (1u << 0)
#define IRQ_DIRECT_CONNECT(irq, prio, isr, flags)                                              \
	do {                                                                                   \
		void (*isr_fn)(void) = (isr);                                                  \
		(void)isr_fn;                                                                  \
		BUILD_ASSERT((irq) >= 0 && (prio) >= 0 && (flags) >= 0, "");                   \
	} while (0)
void irq_enable(unsigned int irq);
void irq_disable(unsigned int irq);
