/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sampler core's port hooks on the QEMU board: CMSDK timer 0 as the
 * sampling timer at priority 0 (above the kernel's BASEPRI lock, like a
 * Zephyr zero-latency IRQ), UART 0 as the host link, the demo kernel's
 * threads for the THREAD field, and the image's GNU build-id.
 */
#include "cmsdk.h"
#include "kernel.h"
#include "port.h"
#include "tcmprof_sampler.h"

/* Sampling rates the port accepts: 100 Hz .. 100 kHz of the 25 MHz timer. */
#define SAMPLER_DEFAULT_RATE_HZ 10000u
#define SAMPLER_MIN_INTERVAL (SYSCLK_HZ / 100000u)

/* The .note.gnu.build-id section (see ld/teensy_qemu.ld). */
extern const uint8_t __build_id_note_start[], __build_id_note_end[];

void sampler_port_init(void)
{
	struct tcmp_port_config cfg = {
		.cpu_hz = SYSCLK_HZ,
		.timer_hz = SYSCLK_HZ,
		.min_interval_ticks = SAMPLER_MIN_INTERVAL,
		.max_interval_ticks = UINT32_MAX,
		.default_rate_hz = SAMPLER_DEFAULT_RATE_HZ,
	};
	cfg.build_id = tcmp_gnu_build_id(__build_id_note_start,
					 (size_t)(__build_id_note_end - __build_id_note_start),
					 &cfg.build_id_len);
	tcmp_init(&cfg);
}

void tcmp_port_timer_start(uint32_t first_ticks)
{
	TIMER_CTRL(TIMER0_BASE) = 0;
	TCMP_PORT_TIMER_ACK_NEXT(first_ticks);
	TIMER_VALUE(TIMER0_BASE) = first_ticks - 1u;
	nvic_enable(TIMER0_IRQn, IRQ_PRIO_SAMPLER);
	TIMER_CTRL(TIMER0_BASE) = TIMER_CTRL_EN | TIMER_CTRL_IRQEN;
}

void tcmp_port_timer_stop(void)
{
	TIMER_CTRL(TIMER0_BASE) = 0;
	TIMER_INTCLEAR(TIMER0_BASE) = 1u;
}

void tcmp_port_write(const uint8_t *data, size_t len)
{
	port_uart_write(data, len);
}

struct emit_ctx {
	tcmp_thread_emit_fn emit;
	void *ctx;
};

static void emit_thread(const struct k_thread *t, void *arg)
{
	struct emit_ctx *e = arg;
	e->emit(e->ctx, (uint32_t)(uintptr_t)t, t->name);
}

void tcmp_port_list_threads(tcmp_thread_emit_fn emit, void *ctx)
{
	struct emit_ctx e = {emit, ctx};
	k_thread_foreach(emit_thread, &e);
}

void sampler_port_service(void)
{
	int byte;
	while ((byte = port_uart_read()) >= 0) {
		tcmp_rx_byte((uint8_t)byte);
	}
	tcmp_poll();
}

struct stack_top_ctx {
	uint32_t id;
	const struct k_thread *found;
};

static void find_thread(const struct k_thread *t, void *arg)
{
	struct stack_top_ctx *c = arg;
	if ((uint32_t)(uintptr_t)t == c->id)
		c->found = t;
}

/* The top qemu_stack_room bounds the thread's PSP samples by. The id is
 * looked up among the live threads rather than dereferenced: the core asks
 * for ids the list just gave, but a port must not trust an id blindly. */
const uint32_t *tcmp_port_thread_stack_top(uint32_t id, uint32_t *size)
{
	struct stack_top_ctx c = {id, NULL};
	k_thread_foreach(find_thread, &c);
	if (c.found == NULL || c.found->stack_info.size == 0)
		return NULL;
	*size = (uint32_t)c.found->stack_info.size;
	return (const uint32_t *)(c.found->stack_info.start + c.found->stack_info.size);
}
