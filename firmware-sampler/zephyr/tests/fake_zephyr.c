/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host definitions of the Zephyr APIs declared in zephyr_api_stub/, with the
 * behaviour fake_zephyr.h describes. Compiled into glue_test and usbd_test.
 */
#include "fake_zephyr.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fsl_clock.h>
#include <zephyr/device.h>
#include <zephyr/drivers/clock_control.h>
#include <zephyr/drivers/uart.h>
#include <zephyr/irq.h>
#include <zephyr/shell/shell.h>
#include <zephyr/spinlock.h>
#include <zephyr/sys/ring_buffer.h>

#include "tcmprof_sampler.h"

struct fake_zephyr fake;

static const char *const thread_names[] = {"none", "sampler", "shell"};

/* ---- devices and kernel objects ------------------------------------------ */

const struct device DT_N_NODELABEL_ccm_DEVICE = {"ccm"};
const struct device DT_N_NODELABEL_tcmprof_transport_uart_DEVICE = {"tcmprof_transport_uart"};
const struct device DT_N_NODELABEL_zephyr_udc0_DEVICE = {"zephyr_udc0"};
struct z_kernel _kernel;

bool device_is_ready(const struct device *dev)
{
	return dev != NULL;
}

#define MAX_OBJECTS 8

static struct {
	const void *obj;
	enum fake_thread_id owner; /* mutexes */
	int count;                 /* mutex lock depth, semaphore count */
} objects[MAX_OBJECTS];

static int object(const void *obj)
{
	for (int i = 0; i < MAX_OBJECTS; i++) {
		if (objects[i].obj == obj) {
			return i;
		}
	}
	for (int i = 0; i < MAX_OBJECTS; i++) {
		if (objects[i].obj == NULL) {
			objects[i].obj = obj;
			return i;
		}
	}
	fprintf(stderr, "fake_zephyr: more than %d kernel objects\n", MAX_OBJECTS);
	abort();
}

int k_mutex_lock(struct k_mutex *mutex, k_timeout_t timeout)
{
	int i = object(mutex);

	(void)timeout;
	if (objects[i].owner != FAKE_NO_THREAD && objects[i].owner != fake.thread) {
		/* Nothing would ever unlock it: the simulated threads run one at a
		 * time, and the owner is the one waiting in the test. */
		fprintf(stderr, "fake_zephyr: the %s thread would wait for a mutex the %s thread holds\n",
			thread_names[fake.thread], thread_names[objects[i].owner]);
		abort();
	}
	objects[i].owner = fake.thread;
	objects[i].count++;
	return 0;
}

int k_mutex_unlock(struct k_mutex *mutex)
{
	int i = object(mutex);

	if (objects[i].owner != fake.thread || objects[i].count == 0) {
		fprintf(stderr, "fake_zephyr: the %s thread unlocks a mutex it does not hold\n",
			thread_names[fake.thread]);
		abort();
	}
	if (--objects[i].count == 0) {
		objects[i].owner = FAKE_NO_THREAD;
	}
	return 0;
}

enum fake_thread_id fake_mutex_owner(const struct k_mutex *m)
{
	return objects[object(m)].owner;
}

/* The glue's semaphores have a limit of 1. */
void k_sem_give(struct k_sem *sem)
{
	objects[object(sem)].count = 1;
}

int k_sem_take(struct k_sem *sem, k_timeout_t timeout)
{
	int i = object(sem);

	(void)timeout;
	if (objects[i].count == 0) {
		fake.sem_waits++;
		if (fake.sem_wait != NULL) {
			fake.sem_wait(sem);
		}
	}
	if (objects[i].count == 0) {
		return -EAGAIN;
	}
	objects[i].count = 0;
	return 0;
}

k_spinlock_key_t k_spin_lock(struct k_spinlock *l)
{
	(void)l;
	return (k_spinlock_key_t){0};
}

void k_spin_unlock(struct k_spinlock *l, k_spinlock_key_t key)
{
	(void)l;
	(void)key;
}

static struct k_thread threads[2];
/* Their stacks (stack_info, set by fake_thread_stacks): the port reads the
 * words below the top of each. */
uint32_t fake_stacks[2][64];

void fake_thread_stacks(void)
{
	for (size_t i = 0; i < 2; i++) {
		threads[i].stack_info.start = (uintptr_t)fake_stacks[i];
		threads[i].stack_info.size = sizeof(fake_stacks[i]) - 8 * i; /* the second's top is not the array's end */
	}
}

const struct k_thread *fake_thread(size_t i)
{
	return &threads[i];
}

void k_thread_foreach(k_thread_user_cb_t user_cb, void *user_data)
{
	for (size_t i = 0; i < 2; i++) {
		user_cb(&threads[i], user_data);
	}
}

const char *k_thread_name_get(k_tid_t thread)
{
	return thread == &threads[0] ? "main" : "tcmprof_sampler";
}

uint32_t k_cycle_get_32(void)
{
	return 0x1234567u;
}

atomic_val_t atomic_get(const atomic_t *target)
{
	return *target;
}

atomic_val_t atomic_set(atomic_t *target, atomic_val_t value)
{
	atomic_val_t old = *target;

	*target = value;
	return old;
}

atomic_val_t atomic_clear(atomic_t *target)
{
	return atomic_set(target, 0);
}

void irq_enable(unsigned int irq)
{
	(void)irq;
}

void irq_disable(unsigned int irq)
{
	(void)irq;
}

/* ---- clocks (the PIT's clock comes from the HAL fallback) ---------------- */

int clock_control_on(const struct device *dev, clock_control_subsys_t sys)
{
	(void)dev;
	(void)sys;
	return 0;
}

int clock_control_get_rate(const struct device *dev, clock_control_subsys_t sys, uint32_t *rate)
{
	(void)dev;
	(void)sys;
	(void)rate;
	return -ENOTSUP;
}

void CLOCK_EnableClock(clock_ip_name_t name)
{
	(void)name;
}

uint32_t CLOCK_GetFreq(clock_name_t name)
{
	return name == kCLOCK_CpuClk ? 600000000u : 75000000u;
}

/* ---- the timer (tcmprof_pit.c runs against the PIT model elsewhere) ------ */

void tcmp_port_timer_start(uint32_t first_ticks)
{
	(void)first_ticks;
}

void tcmp_port_timer_stop(void)
{
}

void tcmp_port_timer_ack_next(uint32_t next_ticks)
{
	(void)next_ticks;
}

/* ---- ring buffers ---------------------------------------------------------- */

uint32_t ring_buf_put(struct ring_buf *buf, const uint8_t *data, uint32_t size)
{
	uint32_t n = 0;

	while (n < size && buf->head - buf->tail < buf->size) {
		buf->buffer[buf->head++ % buf->size] = data[n++];
	}
	return n;
}

uint32_t ring_buf_peek(struct ring_buf *buf, uint8_t *data, uint32_t size)
{
	uint32_t n = 0;

	while (n < size && buf->tail + n != buf->head) {
		data[n] = buf->buffer[(buf->tail + n) % buf->size];
		n++;
	}
	return n;
}

uint32_t ring_buf_get(struct ring_buf *buf, uint8_t *data, uint32_t size)
{
	uint32_t n = buf->head - buf->tail < size ? buf->head - buf->tail : size;

	if (data != NULL) {
		ring_buf_peek(buf, data, n);
	}
	buf->tail += n;
	return n;
}

/* ---- the transport UART ------------------------------------------------------ */

/* A CDC-ACM endpoint takes one full-speed bulk packet per fill. */
#define UART_FILL_MAX 64

static struct {
	uart_irq_callback_user_data_t cb;
	void *user_data;
	bool rx_enabled, tx_enabled;
	const struct device *dev;
} uart;

int uart_irq_callback_user_data_set(const struct device *dev, uart_irq_callback_user_data_t cb,
				    void *user_data)
{
	uart.dev = dev;
	uart.cb = cb;
	uart.user_data = user_data;
	return 0;
}

void uart_irq_rx_enable(const struct device *dev)
{
	(void)dev;
	uart.rx_enabled = true;
}

void uart_irq_tx_enable(const struct device *dev)
{
	(void)dev;
	uart.tx_enabled = true;
}

void uart_irq_tx_disable(const struct device *dev)
{
	(void)dev;
	uart.tx_enabled = false;
}

int uart_irq_update(const struct device *dev)
{
	(void)dev;
	return 1;
}

int uart_irq_rx_ready(const struct device *dev)
{
	(void)dev;
	return uart.rx_enabled && fake.from_host_read < fake.from_host_len;
}

int uart_irq_tx_ready(const struct device *dev)
{
	(void)dev;
	return uart.tx_enabled && fake.host_reading;
}

int uart_irq_is_pending(const struct device *dev)
{
	return uart_irq_rx_ready(dev) || uart_irq_tx_ready(dev);
}

int uart_fifo_read(const struct device *dev, uint8_t *rx_data, const int size)
{
	int n = 0;

	(void)dev;
	while (n < size && fake.from_host_read < fake.from_host_len) {
		rx_data[n++] = fake.from_host[fake.from_host_read++];
	}
	return n;
}

int uart_fifo_fill(const struct device *dev, const uint8_t *tx_data, int size)
{
	int n = size < UART_FILL_MAX ? size : UART_FILL_MAX;

	(void)dev;
	if (!fake.host_reading || fake.to_host_len + (size_t)n > sizeof(fake.to_host)) {
		return 0;
	}
	memcpy(fake.to_host + fake.to_host_len, tx_data, (size_t)n);
	fake.to_host_len += (size_t)n;
	return n;
}

void fake_uart_service(void)
{
	if (uart.cb != NULL && uart_irq_is_pending(uart.dev)) {
		uart.cb(uart.dev, uart.user_data);
	}
}

void fake_host_send(const uint8_t *data, size_t len)
{
	if (fake.from_host_read == fake.from_host_len) {
		fake.from_host_read = fake.from_host_len = 0;
	}
	if (fake.from_host_len + len > sizeof(fake.from_host)) {
		fprintf(stderr, "fake_zephyr: host sends more than the fake holds\n");
		abort();
	}
	memcpy(fake.from_host + fake.from_host_len, data, len);
	fake.from_host_len += len;
	fake_uart_service();
}

/* ---- logging and the shell ------------------------------------------------- */

static void append(char *buffer, const char *prefix, const char *fmt, va_list ap)
{
	size_t len = strlen(buffer);

	if (len + strlen(prefix) + 2 >= FAKE_TEXT_MAX) {
		return;
	}
	strcat(buffer, prefix);
	len = strlen(buffer);
	vsnprintf(buffer + len, FAKE_TEXT_MAX - len - 1, fmt, ap);
	strcat(buffer, "\n");
}

void z_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	append(fake.log, "", fmt, ap);
	va_end(ap);
}

void shell_print(const struct shell *sh, const char *fmt, ...)
{
	va_list ap;

	(void)sh;
	va_start(ap, fmt);
	append(fake.shell_out, "", fmt, ap);
	va_end(ap);
}

void shell_error(const struct shell *sh, const char *fmt, ...)
{
	va_list ap;

	(void)sh;
	va_start(ap, fmt);
	append(fake.shell_out, "error: ", fmt, ap);
	va_end(ap);
}

unsigned long shell_strtoul(const char *str, int base, int *err)
{
	char *end;
	unsigned long v = strtoul(str, &end, base);

	*err = (*str == '\0' || *end != '\0') ? -EINVAL : 0;
	return v;
}

int fake_count(const char *buffer, const char *text)
{
	int n = 0;

	for (const char *p = strstr(buffer, text); p != NULL; p = strstr(p + 1, text)) {
		n++;
	}
	return n;
}

void fake_reset(void)
{
	memset(&fake, 0, sizeof(fake));
	memset(objects, 0, sizeof(objects));
	memset(&uart, 0, sizeof(uart));
}
