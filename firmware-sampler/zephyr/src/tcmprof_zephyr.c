/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sampler core on Zephyr, i.MX RT10xx: the PIT interrupt as a
 * zero-latency direct vector, the PIT clock, the build id, the thread table,
 * and the sampler thread that carries the wire protocol over the UART chosen
 * as tcmprof,transport (a second CDC-ACM port with the tcmprof-sampler
 * snippet).
 */
#include <errno.h>
#include <string.h>

#include <zephyr/device.h>
#include <zephyr/devicetree.h>
#include <zephyr/drivers/clock_control.h>
#include <zephyr/drivers/uart.h>
#include <zephyr/irq.h>
#include <zephyr/kernel.h>
#include <zephyr/logging/log.h>
#include <zephyr/spinlock.h>
#include <zephyr/sys/ring_buffer.h>

#include <fsl_clock.h>

#include "tcmprof_pit.h"
#include "tcmprof_sampler.h"
#include "tcmprof_zephyr.h"

LOG_MODULE_REGISTER(tcmprof, CONFIG_TCMPROF_SAMPLER_LOG_LEVEL);

#define PIT_NODE DT_NODELABEL(pit0)
#define PIT_IRQ DT_IRQN(PIT_NODE)
#define TRANSPORT_NODE DT_CHOSEN(tcmprof_transport)

BUILD_ASSERT(DT_NODE_EXISTS(PIT_NODE), "tcmprof: no pit0 node: the sampler needs the RT10xx PIT");
/*
 * The four PIT channels share one interrupt. The counter driver for an
 * enabled pit0 would IRQ_CONNECT it as well, and its ISR would be replaced
 * or doubly registered.
 */
BUILD_ASSERT(!DT_NODE_HAS_STATUS(PIT_NODE, okay),
	     "tcmprof: the pit0 node must stay status = \"disabled\": the sampler owns the PIT "
	     "and connects its shared IRQ 122 as a zero-latency direct vector");
BUILD_ASSERT(PIT_IRQ == PIT_IRQn, "tcmprof: pit0's interrupt is not the HAL's PIT_IRQn");
BUILD_ASSERT(DT_NODE_EXISTS(TRANSPORT_NODE),
	     "tcmprof: no transport: add chosen { tcmprof,transport = &<uart>; } "
	     "(the tcmprof-sampler snippet makes it a second CDC-ACM port)");
BUILD_ASSERT(DT_REG_ADDR(PIT_NODE) == 0x40084000, "tcmprof: unexpected PIT address");
/* Without these chosen nodes the linker script has no .itcm / .dtcm_bss output sections. */
BUILD_ASSERT(DT_HAS_CHOSEN(zephyr_itcm) && DT_HAS_CHOSEN(zephyr_dtcm),
	     "tcmprof: the sample path needs zephyr,itcm and zephyr,dtcm chosen nodes");

#if defined(CONFIG_LINKER_GNU_BUILD_ID)
/*
 * Zephyr's own build id (newer trees), as tests/kernel/common/src/main.c
 * calls it: the sha1 id, 20 bytes. Declared here, weak, because the
 * declaring header was not located: a tree without the function still
 * links, and HEADER then says the image has no build id.
 */
#define ZEPHYR_GNU_BUILD_ID_LEN 20u
__weak const uint8_t *sys_gnu_build_id_get(void);
#elif defined(CONFIG_TCMPROF_SAMPLER_BUILD_ID)
/* The note ld/tcmprof_build_id.ld places between these. */
extern const uint8_t __tcmprof_build_id_start[], __tcmprof_build_id_end[];
#endif

static const struct device *const transport = DEVICE_DT_GET(TRANSPORT_NODE);

/*
 * All calls into the core (thread context) hold this: the sampler thread and
 * the shell. The sampler thread lets go of it while a write waits for the
 * host (tcmp_port_write), which the core allows for the shell's calls.
 */
static K_MUTEX_DEFINE(core_lock);
static struct tcmp_port_config port_config;
static atomic_t core_ready;

/*
 * UART bytes in both directions. The UART callback (for CDC-ACM, run from
 * the USB class's work queue) and the sampler thread each own one end; the
 * spinlock makes each ring's put/get pair safe between them.
 */
RING_BUF_DECLARE(tcmprof_rx_ring, CONFIG_TCMPROF_SAMPLER_RX_BUFFER_SIZE);
RING_BUF_DECLARE(tcmprof_tx_ring, CONFIG_TCMPROF_SAMPLER_TX_BUFFER_SIZE);
static struct k_spinlock ring_lock;
static K_SEM_DEFINE(rx_ready, 0, 1);
static K_SEM_DEFINE(tx_room, 0, 1);
/*
 * Set when a write gave up on a host that does not read: later writes drop
 * at once instead of waiting the timeout again, frame after frame, until the
 * UART takes bytes again (transport_callback clears it). A DRAIN to a dead
 * port so ends within one timeout; its records stay held for the next DRAIN.
 */
static atomic_t tx_stalled;

/* ---- clocks ----------------------------------------------------------- */

/*
 * Ungates the PIT and returns its clock (PERCLK), Hz. clock_control is asked
 * first, for the clock the pit0 node names (older trees name none). In
 * clock_control_mcux_ccm.c the PIT's on() is a no-op and its get_rate() is
 * compiled only with the PIT counter driver, which must stay off here, so
 * the HAL gate (CCGR1 CG6) and frequency are the fallback that does the
 * work today.
 */
static uint32_t pit_clock_on(void)
{
	uint32_t rate = 0;

#if DT_NODE_HAS_PROP(PIT_NODE, clocks)
	const struct device *ccm = DEVICE_DT_GET(DT_CLOCKS_CTLR(PIT_NODE));
	clock_control_subsys_t subsys = (clock_control_subsys_t)DT_CLOCKS_CELL(PIT_NODE, name);

	if (device_is_ready(ccm)) {
		(void)clock_control_on(ccm, subsys);
		if (clock_control_get_rate(ccm, subsys, &rate) != 0) {
			rate = 0;
		}
	}
#endif
	CLOCK_EnableClock(kCLOCK_Pit);
	if (rate == 0) {
		rate = CLOCK_GetFreq(kCLOCK_PerClk);
	}
	return rate;
}

/* ---- port hooks (thread context; the ISR hooks are in tcmprof_pit.c) -- */

#ifdef CONFIG_TCMPROF_SAMPLER_THREAD
struct thread_entry {
	uint32_t id;
	char name[TCMP_MAX_THREAD_NAME + 1];
#ifdef CONFIG_TCMPROF_SAMPLER_STACK
	uintptr_t stack_top; /* stack_info start + size, as tcmprof_stack_room bounds it */
	size_t stack_size;
#endif
};

static struct thread_entry thread_table[CONFIG_TCMPROF_SAMPLER_MAX_THREADS];
static size_t thread_count;

static void collect_thread(const struct k_thread *thread, void *user_data)
{
	const char *name = k_thread_name_get((k_tid_t)thread);
	struct thread_entry *e;

	ARG_UNUSED(user_data);
	if (thread_count == ARRAY_SIZE(thread_table)) {
		return;
	}
	e = &thread_table[thread_count++];
	e->id = (uint32_t)(uintptr_t)thread;
	e->name[0] = '\0';
	if (name != NULL) {
		strncpy(e->name, name, sizeof(e->name) - 1);
		e->name[sizeof(e->name) - 1] = '\0';
	}
#ifdef CONFIG_TCMPROF_SAMPLER_STACK
	/* Read under the thread-list lock, with the name: the k_thread may be
	 * gone by the time the core asks (tcmp_port_thread_stack_top). */
	e->stack_top = thread->stack_info.start + thread->stack_info.size;
	e->stack_size = thread->stack_info.size;
#endif
}

/*
 * Copies the thread list first and emits it afterwards: k_thread_foreach
 * holds the kernel's thread-list lock during its callbacks, and emit may
 * block on the transport.
 */
void tcmp_port_list_threads(tcmp_thread_emit_fn emit, void *ctx)
{
	thread_count = 0;
	k_thread_foreach(collect_thread, NULL);
	for (size_t i = 0; i < thread_count; i++) {
		emit(ctx, thread_table[i].id, thread_table[i].name);
	}
}

#ifdef CONFIG_TCMPROF_SAMPLER_STACK
/*
 * The stack of a thread tcmp_port_list_threads just listed, from the table
 * it filled (the core asks from inside emit). The table's copy of
 * stack_info, not the k_thread: a thread that exited since cannot send
 * its freed k_thread's contents, only stack memory, which stays mapped.
 */
const uint32_t *tcmp_port_thread_stack_top(uint32_t id, uint32_t *size)
{
	for (size_t i = 0; i < thread_count; i++) {
		if (thread_table[i].id == id && thread_table[i].stack_size != 0) {
			*size = (uint32_t)thread_table[i].stack_size;
			return (const uint32_t *)thread_table[i].stack_top;
		}
	}
	return NULL;
}
#endif
#endif

/*
 * The core calls this only from tcmp_rx/tcmp_poll, i.e. from the sampler
 * thread holding core_lock (sampler_step).
 */
void tcmp_port_write(const uint8_t *data, size_t len)
{
	for (;;) {
		k_spinlock_key_t key = k_spin_lock(&ring_lock);
		uint32_t queued = ring_buf_put(&tcmprof_tx_ring, data, len);

		k_spin_unlock(&ring_lock, key);
		uart_irq_tx_enable(transport);
		data += queued;
		len -= queued;
		if (len == 0 || atomic_get(&tx_stalled)) {
			break;
		}
		/*
		 * Wait for room without the lock, so that the shell's commands
		 * get in meanwhile (the core keeps them safe: it has marked
		 * this frame as being sent).
		 */
		k_mutex_unlock(&core_lock);
		int err = k_sem_take(&tx_room, K_MSEC(CONFIG_TCMPROF_SAMPLER_TX_TIMEOUT_MS));

		k_mutex_lock(&core_lock, K_FOREVER);
		if (err != 0) {
			/*
			 * Nobody reads the port. Dropping the rest loses at most
			 * this frame, which the host sees as a gap or garbage and
			 * resynchronises on the next 0x00.
			 */
			atomic_set(&tx_stalled, 1);
			LOG_WRN("transport: the host stopped reading; output is dropped until it reads");
			break;
		}
	}
}

/* ---- transport -------------------------------------------------------- */

static void transport_callback(const struct device *dev, void *user_data)
{
	ARG_UNUSED(user_data);
	while (uart_irq_update(dev) > 0 && uart_irq_is_pending(dev) > 0) {
		if (uart_irq_rx_ready(dev) > 0) {
			uint8_t buf[64];
			int n = uart_fifo_read(dev, buf, sizeof(buf));

			if (n > 0) {
				k_spinlock_key_t key = k_spin_lock(&ring_lock);

				/*
				 * Bytes beyond the ring are lost; the command
				 * they belonged to fails its CRC and the host
				 * repeats it.
				 */
				(void)ring_buf_put(&tcmprof_rx_ring, buf, n);
				k_spin_unlock(&ring_lock, key);
				k_sem_give(&rx_ready);
			}
		}
		if (uart_irq_tx_ready(dev) > 0) {
			uint8_t buf[64];
			k_spinlock_key_t key = k_spin_lock(&ring_lock);
			uint32_t n = ring_buf_peek(&tcmprof_tx_ring, buf, sizeof(buf));

			k_spin_unlock(&ring_lock, key);
			if (n == 0) {
				uart_irq_tx_disable(dev);
				continue;
			}
			int sent = uart_fifo_fill(dev, buf, n);

			if (sent > 0) {
				key = k_spin_lock(&ring_lock);
				ring_buf_get(&tcmprof_tx_ring, NULL, sent);
				k_spin_unlock(&ring_lock, key);
				atomic_clear(&tx_stalled);
				k_sem_give(&tx_room);
			}
		}
	}
}

static void feed_received_bytes(void)
{
	uint8_t buf[64];
	uint32_t n;

	do {
		k_spinlock_key_t key = k_spin_lock(&ring_lock);

		n = ring_buf_get(&tcmprof_rx_ring, buf, sizeof(buf));
		k_spin_unlock(&ring_lock, key);
		if (n > 0) {
			tcmp_rx(buf, n);
		}
	} while (n > 0);
}

/* ---- init and the sampler thread ------------------------------------- */

static void init_core(void)
{
	uint32_t timer_hz = pit_clock_on();
	uint32_t min_ticks = timer_hz / CONFIG_TCMPROF_SAMPLER_MAX_RATE_HZ;

	port_config = (struct tcmp_port_config){
		.cpu_hz = CLOCK_GetFreq(kCLOCK_CpuClk),
		.timer_hz = timer_hz,
		.min_interval_ticks = min_ticks > 0 ? min_ticks : 1,
		.max_interval_ticks = TCMP_PIT_MAX_INTERVAL_TICKS,
		.default_rate_hz = CONFIG_TCMPROF_SAMPLER_DEFAULT_RATE_HZ,
		/* Different runs of the same image should not share a jitter sequence. */
		.seed = k_cycle_get_32() | 1u,
	};
#if defined(CONFIG_LINKER_GNU_BUILD_ID)
	port_config.build_id = sys_gnu_build_id_get != NULL ? sys_gnu_build_id_get() : NULL;
	port_config.build_id_len = port_config.build_id != NULL ? ZEPHYR_GNU_BUILD_ID_LEN : 0;
#elif defined(CONFIG_TCMPROF_SAMPLER_BUILD_ID)
	port_config.build_id = tcmp_gnu_build_id(
		__tcmprof_build_id_start,
		(size_t)(__tcmprof_build_id_end - __tcmprof_build_id_start), &port_config.build_id_len);
#endif
	if (port_config.build_id == NULL) {
		LOG_WRN("no GNU build id in the image: captures cannot be matched to their ELF");
	}
	tcmp_init(&port_config);

	/*
	 * The core's naked entry is the vector itself: it reads EXC_RETURN
	 * from LR and the stacked frame from MSP/PSP, which a compiler ISR
	 * prologue (ISR_DIRECT_DECLARE) would already have moved. As a
	 * zero-latency IRQ it preempts irq_lock() regions and never enters
	 * the kernel: it returns straight from the exception.
	 */
	IRQ_DIRECT_CONNECT(PIT_IRQ, 0, tcmp_sample_isr, IRQ_ZERO_LATENCY);
	irq_enable(PIT_IRQ);
	atomic_set(&core_ready, 1);
	LOG_INF("PIT %u Hz, CPU %u Hz, capacity %u words", port_config.timer_hz,
		port_config.cpu_hz, TCMP_BUFFER_WORDS);
}

/* The core set up and the transport listening; false if it is not ready. */
static bool sampler_setup(void)
{
	if (!device_is_ready(transport)) {
		LOG_ERR("transport %s not ready", transport->name);
		return false;
	}
	k_mutex_lock(&core_lock, K_FOREVER);
	init_core();
	k_mutex_unlock(&core_lock);

	uart_irq_callback_user_data_set(transport, transport_callback, NULL);
	uart_irq_rx_enable(transport);
	return true;
}

/* One round: commands from the host, then streaming and run ends. */
static void sampler_step(void)
{
	/* Woken by received bytes, else often enough to stream. */
	(void)k_sem_take(&rx_ready, K_MSEC(CONFIG_TCMPROF_SAMPLER_POLL_MS));
	k_mutex_lock(&core_lock, K_FOREVER);
	feed_received_bytes();
	tcmp_poll();
	k_mutex_unlock(&core_lock);
}

static void sampler_thread(void *p1, void *p2, void *p3)
{
	ARG_UNUSED(p1);
	ARG_UNUSED(p2);
	ARG_UNUSED(p3);

	if (!sampler_setup()) {
		return;
	}
	for (;;) {
		sampler_step();
	}
}

K_THREAD_DEFINE(tcmprof_sampler, CONFIG_TCMPROF_SAMPLER_THREAD_STACK_SIZE, sampler_thread, NULL,
		NULL, NULL, CONFIG_TCMPROF_SAMPLER_THREAD_PRIORITY, 0, 0);

/*
 * ---- local control (shell) --------------------------------------------
 *
 * These take core_lock, which the sampler thread holds only between its
 * waits: never while a write waits for the host. None of the core calls
 * below sends anything.
 */

uint8_t tcmprof_zephyr_start(const struct tcmp_start_args *args)
{
	uint8_t status;

	if (!atomic_get(&core_ready)) {
		return TCMP_ERR_UNAVAILABLE;
	}
	k_mutex_lock(&core_lock, K_FOREVER);
	status = tcmp_start(args);
	k_mutex_unlock(&core_lock);
	return status;
}

uint8_t tcmprof_zephyr_stop(void)
{
	uint8_t status;

	if (!atomic_get(&core_ready)) {
		return TCMP_ERR_UNAVAILABLE;
	}
	k_mutex_lock(&core_lock, K_FOREVER);
	status = tcmp_stop();
	k_mutex_unlock(&core_lock);
	return status;
}

void tcmprof_zephyr_status(struct tcmp_status *out)
{
	memset(out, 0, sizeof(*out));
	if (!atomic_get(&core_ready)) {
		return;
	}
	k_mutex_lock(&core_lock, K_FOREVER);
	tcmp_get_status(out);
	k_mutex_unlock(&core_lock);
}

uint8_t tcmprof_zephyr_clear(void)
{
	uint8_t status;

	if (!atomic_get(&core_ready)) {
		return TCMP_ERR_UNAVAILABLE;
	}
	k_mutex_lock(&core_lock, K_FOREVER);
	status = tcmp_done();
	k_mutex_unlock(&core_lock);
	return status;
}

uint32_t tcmprof_zephyr_timer_hz(void)
{
	return atomic_get(&core_ready) ? port_config.timer_hz : 0;
}
