/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host fakes of the Zephyr APIs the port's glue calls (declared in
 * zephyr_api_stub/), for tests that run the glue's own code: one simulated
 * thread at a time, switched by the test (fake.thread), with mutexes that
 * fail the test instead of blocking, semaphores whose waits call back into
 * the test, and a CDC-ACM-like UART whose host side the test drives.
 */
#ifndef FAKE_ZEPHYR_H
#define FAKE_ZEPHYR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <zephyr/kernel.h>

enum fake_thread_id { FAKE_NO_THREAD, FAKE_SAMPLER, FAKE_SHELL };

#define FAKE_HOST_MAX (1u << 20)
#define FAKE_TEXT_MAX 8192u

struct fake_zephyr {
	enum fake_thread_id thread; /* the thread the test is running as */
	/* A k_sem_take that would wait: called with the semaphore; the test may
	 * give it (then the take succeeds) or not (a timeout). */
	void (*sem_wait)(struct k_sem *sem);
	unsigned sem_waits;
	/* Set when a k_mutex_lock would have blocked: the simulated threads
	 * would then never finish, as a shell stuck behind the sampler would. */
	const char *deadlock;

	/* The transport UART as the host sees it. */
	bool host_reading;                /* the host takes what the device sends */
	uint8_t to_host[FAKE_HOST_MAX];   /* what it took */
	size_t to_host_len;
	uint8_t from_host[4096];          /* bytes it sent, not yet read by the device */
	size_t from_host_len, from_host_read;

	char log[FAKE_TEXT_MAX];          /* LOG_* lines */
	char shell_out[FAKE_TEXT_MAX];    /* shell_print/shell_error lines */
};
extern struct fake_zephyr fake;

void fake_reset(void);
/* The host sends bytes: the UART's receive callback runs, as the USB
 * stack's would. */
void fake_host_send(const uint8_t *data, size_t len);
/* The USB stack services the UART once: if the host reads and the device
 * enabled its transmit interrupt, the callback runs and moves bytes. */
void fake_uart_service(void);
/* The owner of a mutex, FAKE_NO_THREAD when free. */
enum fake_thread_id fake_mutex_owner(const struct k_mutex *m);
/* How many times the text occurs in the buffer. */
int fake_count(const char *buffer, const char *text);

/* Gives the two fake threads stacks in fake_stacks (stack_info); the
 * second's top is 8 bytes below its array's end. */
extern uint32_t fake_stacks[2][64];
void fake_thread_stacks(void);
const struct k_thread *fake_thread(size_t i);

#endif
