/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The STACK field through the public API and the fake port: what START
 * accepts, where the copy starts (basic and FP-extended frames, the
 * aligner word), where it stops (K, the top of the stack, a stack pointer
 * outside the stack), the ring of 6 + K word records in snapshot and
 * stream runs, and DATA frames that stay within 512 bytes while filled.
 * The records are read back with the fake port's own decoder.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fake_port.h"

#define STACK_FIELDS (FIELDS_4WORD | TCMP_FIELD_STACK)
#define EXC_RETURN_THREAD_PSP 0xFFFFFFFDu
#define EXC_RETURN_HANDLER_MSP 0xFFFFFFF1u
#define EXC_RETURN_THREAD_PSP_FP 0xFFFFFFEDu /* bit 4 clear: FP-extended frame */

static struct frame frames[4096];
static struct fake_stack_record decoded[600];

/* A stack for the fake port: the copy may read [mem, mem + MEM_WORDS). */
#define MEM_WORDS 512u
static uint32_t mem[MEM_WORDS];

static struct tcmp_status status(void)
{
	struct tcmp_status st;
	tcmp_get_status(&st);
	return st;
}

static int reply(uint8_t command)
{
	size_t n = fake_frames(frames, 2, NULL, 1);
	CHECK(n == 1 && frames[0].type == TCMP_FRAME_REPLY && frames[0].p[1] == command);
	return n == 1 ? frames[0].p[2] : -1;
}

static int start_stack(uint8_t fields, uint8_t mode, uint32_t count, uint8_t stack_words)
{
	fake_start_stack(10000, fields, mode, count, stack_words);
	return reply(TCMP_CMD_START);
}

/* A fresh core whose stack is all of mem, running a STACK run of K words;
 * returns its capacity, checked against (buffer - 2) / (6 + K). */
static uint32_t start_run(uint8_t mode, uint32_t count, uint8_t k)
{
	fake_reset(NULL);
	port.stack_lo = mem;
	port.stack_hi = &mem[MEM_WORDS];
	CHECK_EQ_U(start_stack(STACK_FIELDS, mode, count, k), TCMP_OK);
	const uint32_t cap = status().capacity;
	CHECK_EQ_U(cap, (TCMP_BUFFER_WORDS - 2u) / (6u + k));
	return cap;
}

/* The value of stack word w at sample i: distinct per sample and word. */
static uint32_t word_of(uint32_t i, uint32_t w)
{
	return 0x20000000u + i * 0x1000u + w;
}

/*
 * One sample with its exception frame at mem[at] (the interrupted context's
 * SP is above it) and the whole stack filled with sample i's words.
 */
static void sample(uint32_t i, uint32_t at, uint32_t exc_return, uint32_t xpsr)
{
	for (uint32_t w = 0; w < MEM_WORDS; w++)
		mem[w] = word_of(i, w);
	mem[at + 5] = 0x60000001u + 4u * i; /* lr */
	mem[at + 6] = 0x60001000u + 2u * i; /* pc */
	mem[at + 7] = xpsr;
	port.current_thread = 0x20001000u + i;
	fake_sample_frame(&mem[at], exc_return);
}

/* DRAINs everything held into `frames`; returns their number. */
static size_t drain_frames(void)
{
	port.out_len = 0;
	const uint8_t all[8] = {0};
	fake_command(TCMP_CMD_DRAIN, all, sizeof all);
	size_t bad;
	size_t n = fake_frames(frames, 4096, &bad, 1);
	CHECK_EQ_U(bad, 0);
	return n;
}

/* DRAINs everything held and decodes it into `decoded`; returns the count. */
static uint32_t drain_all(uint8_t fields)
{
	size_t n = drain_frames();
	uint32_t got = 0;
	for (size_t f = 0; f < n; f++) {
		if (frames[f].type != TCMP_FRAME_DATA)
			continue;
		uint32_t first;
		size_t k = data_stack_records(&frames[f], fields, &first, &decoded[got], 600 - got);
		CHECK_EQ_U(first, got);
		got += (uint32_t)k;
	}
	return got;
}

/* The words of record r are mem[from .. from + n) of sample i. */
static void check_words(const struct fake_stack_record *r, uint32_t i, uint32_t from, uint32_t n)
{
	CHECK_EQ_U(r->r.sp, (uint32_t)(uintptr_t)&mem[from]);
	CHECK_EQ_U(r->r.n, n);
	for (uint32_t w = 0; w < n && w < r->r.n; w++)
		if (r->words[w] != word_of(i, from + w)) {
			CHECK_EQ_U(r->words[w], word_of(i, from + w));
			break;
		}
}

static void test_start_arguments(void)
{
	fake_reset(NULL);
	CHECK_EQ_U(start_stack(TCMP_FIELD_PC | TCMP_FIELD_STACK, TCMP_MODE_SNAPSHOT, 0, 32),
		   TCMP_ERR_BAD_ARG); /* the host unwinds from LR too */
	CHECK_EQ_U(start_stack(STACK_FIELDS, TCMP_MODE_SNAPSHOT, 0, TCMP_STACK_WORDS_MIN - 1), TCMP_ERR_BAD_ARG);
	CHECK_EQ_U(start_stack(STACK_FIELDS, TCMP_MODE_SNAPSHOT, 0, TCMP_STACK_WORDS_MAX + 1), TCMP_ERR_BAD_ARG);
	CHECK_EQ_U(status().state, TCMP_STATE_IDLE);

	static const struct {
		uint8_t asked, k;
	} ok[] = {{0, TCMP_STACK_WORDS_DEFAULT}, {8, 8}, {17, 17}, {64, 64}};
	for (size_t c = 0; c < sizeof ok / sizeof ok[0]; c++) {
		fake_reset(NULL);
		CHECK_EQ_U(start_stack(TCMP_FIELD_PC | TCMP_FIELD_LR | TCMP_FIELD_STACK, TCMP_MODE_SNAPSHOT, 0,
				       ok[c].asked),
			   TCMP_OK);
		struct tcmp_status st = status();
		CHECK_EQ_U(st.stack_words, ok[c].k);
		CHECK_EQ_U(st.capacity, (TCMP_BUFFER_WORDS - 2u) / (6u + ok[c].k));
		/* HEADER: build-id length 0, then the stack words. */
		fake_command(TCMP_CMD_STATUS, NULL, 0);
		CHECK_EQ_U(fake_frames(frames, 2, NULL, 1), 1);
		CHECK_EQ_U(frames[0].len, 1 + 44);
		CHECK_EQ_U(frames[0].p[1 + 43], ok[c].k);
	}
	/* Without STACK the stack words are ignored and reported as 0. */
	fake_reset(NULL);
	CHECK_EQ_U(start_stack(FIELDS_4WORD, TCMP_MODE_SNAPSHOT, 0, 99), TCMP_OK);
	CHECK_EQ_U(status().stack_words, 0);
	CHECK_EQ_U(status().capacity, TCMP_BUFFER_WORDS / 4);
}

static void test_copy_bounds(void)
{
	start_run(TCMP_MODE_SNAPSHOT, 0, 32);
	sample(0, 100, EXC_RETURN_THREAD_PSP, 0x01000000u);
	CHECK_EQ_U(port.stack_exc_return, EXC_RETURN_THREAD_PSP);
	sample(1, 100, EXC_RETURN_THREAD_PSP_FP, 0x01000000u);
	sample(2, 100, EXC_RETURN_THREAD_PSP, 0x01000200u); /* aligner word */
	sample(3, 100, EXC_RETURN_HANDLER_MSP, 0x01000000u | 47u);
	CHECK_EQ_U(port.stack_exc_return, EXC_RETURN_HANDLER_MSP);
	sample(4, MEM_WORDS - 8 - 5, EXC_RETURN_THREAD_PSP, 0x01000000u); /* 5 words below the top */
	sample(5, MEM_WORDS - 8, EXC_RETURN_THREAD_PSP, 0x01000000u);     /* SP at the top */
	port.stack_hi = &mem[200];
	sample(6, 300, EXC_RETURN_THREAD_PSP, 0x01000000u); /* SP above the stack */
	port.stack_lo = &mem[400];
	port.stack_hi = &mem[MEM_WORDS];
	sample(7, 100, EXC_RETURN_THREAD_PSP, 0x01000000u); /* SP below it */
	tcmp_stop();
	CHECK_EQ_U(status().stored, 8);

	CHECK_EQ_U(drain_all(STACK_FIELDS), 8);
	static const struct {
		uint32_t from, n;
	} want[8] = {{108, 32}, {126, 32}, {109, 32}, {108, 32}, {MEM_WORDS - 5, 5}, {MEM_WORDS, 0},
		     {308, 0},  {108, 0}};
	for (uint32_t i = 0; i < 8; i++) {
		const struct fake_stack_record *r = &decoded[i];
		CHECK_EQ_U(r->r.pc, 0x60001000u + 2u * i);
		CHECK_EQ_U(r->r.lr, 0x60000001u + 4u * i);
		CHECK_EQ_U(r->r.exc, i == 3 ? 47u : 0u);
		CHECK_EQ_U(r->r.thread, 0x20001000u + i);
		check_words(r, i, want[i].from, want[i].n);
	}
}

/* Every record of a K = 64 stream through a ring of 234, polled every 50
 * samples (a poll leaves fewer than TCMP_STREAM_BATCH unsent, so nothing
 * is dropped): the ring wraps at its last whole record, nothing mixes. */
static void test_stream_wraps(void)
{
	start_run(TCMP_MODE_STREAM, 1000, 64);
	uint32_t next = 0;
	for (uint32_t i = 0; i < 1000; i++) {
		/* SPs vary so that the n differ too. */
		sample(i, MEM_WORDS - 8 - (i * 7) % 100, EXC_RETURN_THREAD_PSP, 0x01000000u);
		if (i % 50 != 49)
			continue;
		tcmp_poll();
		size_t n = fake_frames(frames, 4096, NULL, 1);
		for (size_t f = 0; f < n; f++) {
			if (frames[f].type != TCMP_FRAME_DATA)
				continue;
			uint32_t first;
			size_t k = data_stack_records(&frames[f], STACK_FIELDS, &first, decoded, 600);
			CHECK_EQ_U(first, next);
			for (uint32_t j = 0; j < k; j++) {
				uint32_t idx = first + j, room = (idx * 7) % 100;
				CHECK_EQ_U(decoded[j].r.pc, 0x60001000u + 2u * idx);
				check_words(&decoded[j], idx, MEM_WORDS - room, room < 64 ? room : 64);
			}
			next += (uint32_t)k;
		}
	}
	CHECK_EQ_U(next, 1000);
	CHECK_EQ_U(status().dropped, 0);
	CHECK_EQ_U(status().state, TCMP_STATE_IDLE);
}

/* A snapshot stops when the ring of 6 + K word records is full. */
static void test_snapshot_fills_the_ring(void)
{
	const uint32_t cap = start_run(TCMP_MODE_SNAPSHOT, 0, 8);
	for (uint32_t i = 0; i < cap + 10; i++)
		sample(i, 200, EXC_RETURN_THREAD_PSP, 0x01000000u);
	tcmp_poll();
	struct tcmp_status st = status();
	CHECK_EQ_U(st.state, TCMP_STATE_HOLDING);
	CHECK_EQ_U(st.stored, cap);
	/* The last record is intact: the ring's last slot ends inside the buffer. */
	uint8_t range[8];
	tcmp_put_u32(range, cap - 3);
	tcmp_put_u32(range + 4, 3);
	port.out_len = 0;
	fake_command(TCMP_CMD_DRAIN, range, sizeof range);
	size_t n = fake_frames(frames, 16, NULL, 1);
	CHECK_EQ_U(n, 4); /* HEADER, DATA, THREADS, END */
	uint32_t first;
	CHECK_EQ_U(data_stack_records(&frames[1], STACK_FIELDS, &first, decoded, 600), 3);
	CHECK_EQ_U(first, cap - 3);
	for (uint32_t j = 0; j < 3; j++)
		check_words(&decoded[j], cap - 3 + j, 208, 8);
}

/*
 * Stacks of random words at K = 64 (the worst records, ~340 bytes): every
 * frame stays within the payload limit, decodes, and is full: the next
 * record would not have fitted.
 */
static void test_frames_stay_within_512(void)
{
	start_run(TCMP_MODE_SNAPSHOT, 200, 64);
	srand(7);
	static uint32_t sent[200][64];
	for (uint32_t i = 0; i < 200; i++) {
		for (uint32_t w = 0; w < MEM_WORDS; w++)
			mem[w] = (uint32_t)rand() ^ (uint32_t)rand() << 16;
		/* Every third stack repeats the one before: short records too. */
		if (i % 3 == 2)
			memcpy(&mem[100], sent[i - 1], sizeof sent[i - 1]);
		memcpy(sent[i], &mem[100], sizeof sent[i]);
		mem[92 + 6] = 0x60001000u + 2u * i;
		mem[92 + 7] = 0x01000000u;
		fake_sample_frame(&mem[92], EXC_RETURN_THREAD_PSP);
	}
	tcmp_poll();
	size_t n = drain_frames();
	uint32_t got = 0;
	size_t data_frames = 0;
	for (size_t f = 0; f < n; f++) {
		CHECK(frames[f].len + 4 <= TCMP_MAX_PAYLOAD);
		CHECK(frames[f].wire_len <= TCMP_MAX_ENCODED);
		if (frames[f].type != TCMP_FRAME_DATA)
			continue;
		data_frames++;
		uint32_t first;
		size_t k = data_stack_records(&frames[f], STACK_FIELDS, &first, decoded, 600);
		for (uint32_t j = 0; j < k; j++) {
			CHECK_EQ_U(decoded[j].r.n, 64);
			CHECK(memcmp(decoded[j].words, sent[first + j], sizeof sent[0]) == 0);
		}
		/* Before a random stack: less room left than it needs. */
		if (first + k < 200 && (first + k) % 3 != 2)
			CHECK(TCMP_MAX_PAYLOAD - (frames[f].len + 4) < 17 + 5 + 1 + 1 + 2 + 64 * 4);
		got += (uint32_t)k;
	}
	CHECK_EQ_U(got, 200);
	CHECK(data_frames < 200); /* the repeated stacks share frames */
}

/* The STACK_TOP frame at frames[f]: thread id, its top and the words. */
static void check_stack_top(size_t f, uint32_t id, const uint32_t *top, uint32_t n)
{
	const uint8_t *p = frames[f].p;
	CHECK_EQ_U(frames[f].type, TCMP_FRAME_STACK_TOP);
	CHECK_EQ_U(frames[f].len, 10u + 4u * n);
	CHECK_EQ_U(tcmp_get_u32(p + 1), id);
	CHECK_EQ_U(tcmp_get_u32(p + 5), (uint32_t)(uintptr_t)top);
	CHECK_EQ_U(p[9], n);
	for (uint32_t w = 0; w < n && 10u + 4u * w + 4u <= frames[f].len; w++)
		if (tcmp_get_u32(p + 10 + 4 * w) != top[(int32_t)w - (int32_t)n]) {
			CHECK_EQ_U(tcmp_get_u32(p + 10 + 4 * w), top[(int32_t)w - (int32_t)n]);
			break;
		}
}

/*
 * After the THREADS table of a run with THREAD and STACK, each thread whose
 * stack the port knows gets one STACK_TOP frame with the 32 words below the
 * top (fewer when its stack is smaller), before END, in a drain and at the
 * end of a stream; without STACK none is sent.
 */
static void test_stack_tops_follow_the_threads(void)
{
	static uint32_t stack_a[100], stack_b[3];
	for (uint32_t w = 0; w < 100; w++)
		stack_a[w] = 0xA0000000u + w;
	for (uint32_t w = 0; w < 3; w++)
		stack_b[w] = 0xB0000000u + w;
	const struct fake_thread threads[3] = {
		{.id = 0x20001000u, .name = "main", .stack = stack_a, .stack_words = 100},
		{.id = 0x20002000u, .name = "small", .stack = stack_b, .stack_words = 3},
		{.id = 0x20003000u, .name = "unknown"},
	};

	start_run(TCMP_MODE_SNAPSHOT, 5, 32);
	port.threads = threads;
	port.nthreads = 3;
	for (uint32_t i = 0; i < 5; i++)
		sample(i, MEM_WORDS - 40, EXC_RETURN_THREAD_PSP, 0x01000000u);
	tcmp_poll();
	size_t n = drain_frames();
	CHECK(n >= 5);
	if (n >= 5) {
		CHECK_EQ_U(frames[n - 4].type, TCMP_FRAME_THREADS);
		check_stack_top(n - 3, 0x20001000u, &stack_a[100], TCMP_STACK_TOP_WORDS);
		check_stack_top(n - 2, 0x20002000u, &stack_b[3], 3);
		CHECK_EQ_U(frames[n - 1].type, TCMP_FRAME_END);
	}

	start_run(TCMP_MODE_STREAM, 5, 32);
	port.threads = threads;
	port.nthreads = 3;
	for (uint32_t i = 0; i < 5; i++)
		sample(i, MEM_WORDS - 40, EXC_RETURN_THREAD_PSP, 0x01000000u);
	tcmp_poll();
	n = fake_frames(frames, 4096, NULL, 1);
	CHECK(n >= 4);
	if (n >= 4) {
		check_stack_top(n - 3, 0x20001000u, &stack_a[100], TCMP_STACK_TOP_WORDS);
		check_stack_top(n - 2, 0x20002000u, &stack_b[3], 3);
		CHECK_EQ_U(frames[n - 1].type, TCMP_FRAME_END);
		CHECK_EQ_U(frames[n - 1].p[1], TCMP_END_STREAM_STOPPED);
	}

	/* THREAD without STACK: the table and nothing more. */
	fake_reset(NULL);
	port.threads = threads;
	port.nthreads = 3;
	fake_start(10000, 0, FIELDS_4WORD, TCMP_MODE_SNAPSHOT, 5, 0);
	CHECK_EQ_U(reply(TCMP_CMD_START), TCMP_OK);
	for (uint32_t i = 0; i < 5; i++)
		fake_sample(0x60001000u, 0x60000001u, 0x01000000u);
	tcmp_poll();
	n = drain_frames();
	for (size_t f = 0; f < n; f++)
		CHECK(frames[f].type != TCMP_FRAME_STACK_TOP);
	CHECK(n >= 2 && frames[n - 2].type == TCMP_FRAME_THREADS);
}

const struct test_case stack_tests[] = {
	{"stack/stack_tops_follow_the_threads", test_stack_tops_follow_the_threads},
	{"stack/start_arguments", test_start_arguments},
	{"stack/copy_bounds", test_copy_bounds},
	{"stack/stream_wraps", test_stream_wraps},
	{"stack/snapshot_fills_the_ring", test_snapshot_fills_the_ring},
	{"stack/frames_stay_within_512", test_frames_stay_within_512},
	{NULL, NULL},
};
