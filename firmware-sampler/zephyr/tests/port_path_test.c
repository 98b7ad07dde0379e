/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Zephyr port's sample path on the host: the portable core with this
 * port's PIT hooks (src/tcmprof_pit.c) on the PIT register model and the
 * port's current-thread read. Interrupts are delivered when the model raises
 * one, with synthetic exception frames as the naked entry would pass them.
 * Checks the register traffic of a jittered run, the intervals the PIT
 * really produced, and the records that come back out of a DRAIN.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "pit_model.h"
#include "tcmprof_pit.h"
#include "tcmprof_sampler.h"
#include "wire.h"

struct fake_kernel _kernel;

#define TIMER_HZ 75000000u /* a PERCLK rate; the port reports the real one in HEADER */
#define RATE_HZ 10000u
#define MEAN_TICKS (TIMER_HZ / RATE_HZ)
#define JITTER_PCT 20u
#define HALF_WIDTH (MEAN_TICKS * JITTER_PCT / 100u)

/* ---- port hooks the test stands in for (Zephyr-only in the port) ------- */

static uint8_t out[1 << 20];
static size_t out_len;

void tcmp_port_write(const uint8_t *data, size_t len)
{
	if (out_len + len <= sizeof(out)) {
		memcpy(out + out_len, data, len);
		out_len += len;
	}
}

static const struct {
	uint32_t id;
	const char *name;
} threads[] = {{0x20001000u, "main"}, {0x20002000u, "net_rx"}};

void tcmp_port_list_threads(tcmp_thread_emit_fn emit, void *ctx)
{
	for (size_t i = 0; i < sizeof(threads) / sizeof(threads[0]); i++) {
		emit(ctx, threads[i].id, threads[i].name);
	}
}

/* The sample path is what this test is about: no stack tops. */
const uint32_t *tcmp_port_thread_stack_top(uint32_t id, uint32_t *size)
{
	(void)id;
	(void)size;
	return NULL;
}

/* ---- helpers ------------------------------------------------------------ */

static const uint8_t build_id[20] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6,
				     7,    8,    9,    10,   11, 12, 13, 14, 15, 16};

static void init(void)
{
	const struct tcmp_port_config cfg = {
		.cpu_hz = 600000000u,
		.timer_hz = TIMER_HZ,
		.min_interval_ticks = TIMER_HZ / 100000u,
		.max_interval_ticks = TCMP_PIT_MAX_INTERVAL_TICKS,
		.default_rate_hz = RATE_HZ,
		.seed = 0x1234567u,
		.build_id = build_id,
		.build_id_len = sizeof(build_id),
	};

	pit_model_reset();
	/* The port ungates the PIT clock before tcmp_init (tcmprof_zephyr.c init_core). */
	pit_model_clock_on();
	tcmp_init(&cfg);
	out_len = 0;
}

/* Frame as the hardware stacks it: r0-r3, r12, lr, pc, xpsr. */
static void deliver(uint32_t pc, uint32_t lr, uint32_t exc, uint32_t thread)
{
	uint32_t frame[8] = {0, 0, 0, 0, 0, lr, pc, 0x01000000u | exc};

	_kernel.cpus[0].current = (void *)(uintptr_t)thread;
	tcmp_on_sample(frame, 0xFFFFFFFDu); /* thread mode, PSP, basic frame */
}

/* Decoded frames of the output, in order. */
struct frame {
	uint8_t payload[TCMP_MAX_PAYLOAD];
	long len;
};
static struct frame frames[256];
static int nframes;

static void split_frames(void)
{
	size_t start = 0;

	nframes = 0;
	for (size_t i = 0; i <= out_len; i++) {
		if (i == out_len || out[i] == 0) {
			if (i > start && nframes < 256) {
				struct frame *f = &frames[nframes];

				f->len = tcmp_cobs_decode(out + start, i - start, f->payload,
							  sizeof(f->payload));
				if (f->len >= 5 &&
				    tcmp_crc32(0, f->payload, (size_t)f->len - 4) ==
					    tcmp_get_u32(f->payload + f->len - 4)) {
					nframes++;
				}
			}
			start = i + 1;
		}
	}
}

static void send_command(uint8_t type, const uint8_t *body, size_t len)
{
	struct tcmp_frame f;
	uint8_t wire[TCMP_MAX_ENCODED + 2];

	tcmp_frame_begin(&f, type);
	tcmp_frame_bytes(&f, body, len);
	size_t n = tcmp_frame_seal(&f, wire);
	tcmp_rx(wire, n);
}

/* Unsigned LEB128 and zigzag as docs/protocol.md defines them. */
static uint32_t get_varint(const uint8_t **p)
{
	uint32_t v = 0;
	int shift = 0;

	while (**p & 0x80) {
		v |= (uint32_t)(**p & 0x7F) << shift;
		shift += 7;
		(*p)++;
	}
	v |= (uint32_t)**p << shift;
	(*p)++;
	return v;
}

static int32_t unzigzag(uint32_t z)
{
	return (int32_t)((z >> 1) ^ (0u - (z & 1)));
}

/* ---- tests -------------------------------------------------------------- */

enum { RUN = 600 };

struct sample {
	uint32_t pc, lr, exc, thread;
};
static struct sample sent[RUN];

static uint32_t ldval_writes[RUN + 2];
static unsigned n_ldval;

/* Runs a snapshot of RUN samples and records what was delivered. */
static bool run_snapshot(uint32_t observed[RUN])
{
	struct tcmp_start_args args = {
		.rate_hz = RATE_HZ,
		.jitter_pct = JITTER_PCT,
		.fields = TCMP_FIELD_PC | TCMP_FIELD_LR | TCMP_FIELD_EXC | TCMP_FIELD_THREAD,
		.mode = TCMP_MODE_SNAPSHOT,
		.count = RUN,
	};

	init();
	if (tcmp_start(&args) != TCMP_OK) {
		return false;
	}
	n_ldval = 0;
	unsigned seen = 0;
	for (int k = 0; k < RUN; k++) {
		observed[k] = pit_model_ticks_to_irq(2 * MEAN_TICKS);
		sent[k] = (struct sample){
			.pc = 0x60002000u + 2u * (uint32_t)((k * 37) % 4096),
			.lr = 0x60003001u + 4u * (uint32_t)(k % 7),
			.exc = (k % 5 == 0) ? 16u + 122u : 0u,
			.thread = threads[k % 2].id,
		};
		deliver(sent[k].pc, sent[k].lr, sent[k].exc, sent[k].thread);
		for (; seen < pit_model.log_len; seen++) {
			if (pit_model.log[seen].op == PIT_OP_WRITE && pit_model.log[seen].offset == 0x100 &&
			    n_ldval < RUN + 2) {
				ldval_writes[n_ldval++] = pit_model.log[seen].value;
			}
		}
	}
	return true;
}

static void test_jittered_intervals_within_bounds(void)
{
	uint32_t observed[RUN];
	uint64_t sum = 0;
	uint32_t lo = UINT32_MAX, hi = 0;

	CHECK(run_snapshot(observed), "START refused");
	for (int k = 0; k < RUN; k++) {
		CHECK(observed[k] >= MEAN_TICKS - HALF_WIDTH && observed[k] <= MEAN_TICKS + HALF_WIDTH,
		      "interval %d is %u ticks, outside %u +/- %u", k, observed[k], MEAN_TICKS,
		      HALF_WIDTH);
		sum += observed[k];
		lo = observed[k] < lo ? observed[k] : lo;
		hi = observed[k] > hi ? observed[k] : hi;
	}
	/* Uniform over +/-1500 ticks: the mean of 600 draws is within ~1% of 7500. */
	uint64_t mean = sum / RUN;
	CHECK(mean > MEAN_TICKS - MEAN_TICKS / 100 && mean < MEAN_TICKS + MEAN_TICKS / 100,
	      "mean interval %llu ticks, want about %u", (unsigned long long)mean, MEAN_TICKS);
	CHECK(hi - lo > HALF_WIDTH, "intervals span only %u..%u: not jittered", lo, hi);
	CHECK(pit_model.faults == 0, "%u faults", pit_model.faults);
}

static void test_every_ldval_is_a_used_interval(void)
{
	uint32_t observed[RUN];

	CHECK(run_snapshot(observed), "START refused");
	/* LDVAL writes: one at start, then one per interrupt. */
	CHECK(n_ldval == RUN + 1, "%u LDVAL writes, want %u", n_ldval, RUN + 1);
	CHECK(observed[0] == ldval_writes[0] + 1 && observed[1] == ldval_writes[0] + 1,
	      "first intervals %u, %u, want %u twice", observed[0], observed[1], ldval_writes[0] + 1);
	int mismatches = 0;
	for (int k = 2; k < RUN; k++) {
		mismatches += observed[k] != ldval_writes[k - 1] + 1;
	}
	CHECK(mismatches == 0, "%d intervals are not the LDVAL written two interrupts earlier",
	      mismatches);
}

static void test_each_interrupt_acknowledges_once(void)
{
	struct tcmp_start_args args = {.rate_hz = RATE_HZ, .fields = TCMP_FIELD_PC, .count = 3};

	init();
	CHECK(tcmp_start(&args) == TCMP_OK, "START refused");
	for (int k = 0; k < 3; k++) {
		CHECK(pit_model_ticks_to_irq(2 * MEAN_TICKS) == MEAN_TICKS, "jitter 0: interval not %u", MEAN_TICKS);
		unsigned from = pit_model.log_len;
		deliver(0x60001000u, 0, 0, 0);
		CHECK(pit_model.log_len - from == 3, "interrupt %d made %u accesses, want 3", k,
		      pit_model.log_len - from);
		CHECK(pit_model.log[from].op == PIT_OP_WRITE && pit_model.log[from].offset == 0x10C &&
			      pit_model.log[from].value == 1,
		      "interrupt %d: first access is not the TFLG clear", k);
		CHECK(pit_model.log[from + 1].offset == 0x100 &&
			      pit_model.log[from + 1].value == MEAN_TICKS - 1,
		      "interrupt %d: LDVAL %u, want %u", k, pit_model.log[from + 1].value, MEAN_TICKS - 1);
		CHECK(!pit_model_irq(), "interrupt %d still requested after the sample", k);
	}
	/* The count is reached: the next poll stops the PIT. */
	tcmp_poll();
	CHECK(pit_model.ch[0].tctrl == 0, "TCTRL 0x%x after the run ended", pit_model.ch[0].tctrl);
	CHECK(pit_model_ticks_to_irq(4 * MEAN_TICKS) == 0, "PIT still interrupts after the run ended");
}

static void test_drain_returns_delivered_samples(void)
{
	uint32_t observed[RUN];

	CHECK(run_snapshot(observed), "START refused");
	tcmp_poll();
	struct tcmp_status st;
	tcmp_get_status(&st);
	CHECK(st.state == TCMP_STATE_HOLDING && st.stored == RUN && st.dropped == 0,
	      "state %u stored %u dropped %u", st.state, st.stored, st.dropped);

	out_len = 0;
	const uint8_t drain_all[8] = {0};
	send_command(TCMP_CMD_DRAIN, drain_all, sizeof(drain_all));
	split_frames();
	CHECK(nframes >= 3 && frames[0].payload[0] == TCMP_FRAME_HEADER, "no HEADER first");

	const uint8_t *hdr = frames[0].payload + 1;
	CHECK(tcmp_get_u32(hdr + 14) == TIMER_HZ, "HEADER timer clock %u", tcmp_get_u32(hdr + 14));
	CHECK(tcmp_get_u32(hdr + 18) == MEAN_TICKS, "HEADER mean interval %u", tcmp_get_u32(hdr + 18));
	CHECK(hdr[42] == 20 && memcmp(hdr + 43, build_id, 20) == 0, "HEADER build id not the port's");

	uint32_t next = 0;
	int bad = 0, threads_frames = 0;
	for (int i = 1; i < nframes; i++) {
		const uint8_t *p = frames[i].payload;
		if (p[0] == TCMP_FRAME_THREADS) {
			threads_frames++;
			continue;
		}
		if (p[0] != TCMP_FRAME_DATA) {
			continue;
		}
		uint32_t first = tcmp_get_u32(p + 1);
		uint32_t k = (uint32_t)p[5] | (uint32_t)p[6] << 8;
		CHECK(first == next, "DATA starts at %u, want %u", first, next);
		const uint8_t *q = p + 7;
		uint32_t pc = 0, lr = 0, thread = 0;
		for (uint32_t r = 0; r < k && first + r < RUN; r++) {
			pc += (uint32_t)unzigzag(get_varint(&q)) * 2u;
			lr += (uint32_t)unzigzag(get_varint(&q));
			uint32_t exc = get_varint(&q);
			thread += (uint32_t)unzigzag(get_varint(&q));
			const struct sample *s = &sent[first + r];
			bad += pc != s->pc || lr != s->lr || exc != s->exc || thread != s->thread;
		}
		next = first + k;
	}
	CHECK(next == RUN, "DATA frames covered %u records, want %u", next, RUN);
	CHECK(bad == 0, "%d records differ from the frames delivered", bad);
	CHECK(threads_frames >= 1, "no THREADS frame in a drain with the THREAD field");
	CHECK(frames[nframes - 1].payload[0] == TCMP_FRAME_END, "drain does not end with END");
}

/*
 * The STACK field's bounds (tcmprof_stack_room.h): PSP samples stop at the
 * top of the current thread's stack_info, MSP samples at irq_stack, and a
 * stack pointer outside the stack, no thread yet or no interrupt stack yet
 * give no words.
 */
static void test_stack_room_follows_stack_info_and_irq_stack(void)
{
	static uint32_t thread_stack[256], isr_stack[768]; /* 3072 bytes, 2048 the bound */
	struct k_thread t = {.stack_info = {.start = (uintptr_t)thread_stack, .size = sizeof(thread_stack)}};
	const uint32_t psp = 0xFFFFFFFDu, msp = 0xFFFFFFF1u;

	_kernel.cpus[0].current = &t;
	_kernel.cpus[0].irq_stack = (char *)&isr_stack[768];
	CHECK(TCMP_PORT_STACK_ROOM(psp, &thread_stack[200]) == 56 * 4, "PSP: 56 words below the top");
	CHECK(TCMP_PORT_STACK_ROOM(psp, &thread_stack[256]) == 0, "PSP at the top");
	CHECK(TCMP_PORT_STACK_ROOM(psp, &thread_stack[0]) == 256 * 4, "PSP at the bottom");
	CHECK(TCMP_PORT_STACK_ROOM(psp, &isr_stack[700]) == 0, "PSP in another stack");
	CHECK(TCMP_PORT_STACK_ROOM(msp, &isr_stack[756]) == 12 * 4, "MSP: 12 words below irq_stack");
	/* The bound below irq_stack is CONFIG_ISR_STACK_SIZE (2048 bytes). */
	CHECK(TCMP_PORT_STACK_ROOM(msp, &isr_stack[768 - 2048 / 4]) == 2048, "MSP at the bound");
	CHECK(TCMP_PORT_STACK_ROOM(msp, &isr_stack[768 - 2048 / 4 - 1]) == 0, "MSP below the bound");
	CHECK(TCMP_PORT_STACK_ROOM(msp, &thread_stack[200]) == 0, "MSP in a thread's stack");
	_kernel.cpus[0].current = NULL;
	CHECK(TCMP_PORT_STACK_ROOM(psp, &thread_stack[200]) == 0, "PSP with no current thread");
	_kernel.cpus[0].irq_stack = NULL;
	CHECK(TCMP_PORT_STACK_ROOM(msp, &isr_stack[756]) == 0, "MSP with no interrupt stack yet");
}

int main(void)
{
	static const struct check_test tests[] = {
		{"jittered_intervals_within_bounds", test_jittered_intervals_within_bounds},
		{"every_ldval_is_a_used_interval", test_every_ldval_is_a_used_interval},
		{"each_interrupt_acknowledges_once", test_each_interrupt_acknowledges_once},
		{"drain_returns_delivered_samples", test_drain_returns_delivered_samples},
		{"stack_room_follows_stack_info_and_irq_stack",
		 test_stack_room_follows_stack_info_and_irq_stack},
	};
	return check_run("port_path", tests, sizeof(tests) / sizeof(tests[0]));
}
