/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The C encoder and command parser against the golden vectors that
 * testdata/golden/gen.py wrote from the spec. Inputs here repeat gen.py's
 * (values, or the same formulas); the expected bytes come from the files.
 * One file of some 700 lines: one case per golden file, in the order gen.py
 * writes them, so that the two read side by side.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fake_port.h"

#ifndef GOLDEN_DIR
#error "build with -DGOLDEN_DIR=\"path/to/testdata/golden\""
#endif

static uint8_t golden[1 << 16];

static size_t load(const char *name)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", GOLDEN_DIR, name);
	FILE *f = fopen(path, "rb");
	CHECK(f != NULL);
	if (f == NULL) {
		fprintf(stderr, "cannot open %s\n", path);
		return 0;
	}
	size_t n = fread(golden, 1, sizeof golden, f);
	fclose(f);
	return n;
}

/* Compares bytes built by the test with a golden file. */
static void expect_file(const char *name, const uint8_t *got, size_t n)
{
	size_t want = load(name);
	CHECK_EQ_U(n, want);
	if (n == want && memcmp(got, golden, n) == 0)
		return;
	check_failures++;
	for (size_t i = 0; i < n && i < want; i++) {
		if (got[i] != golden[i]) {
			fprintf(stderr, "%s: first difference at byte %zu: got 0x%02x, want 0x%02x\n", name, i,
				got[i], golden[i]);
			break;
		}
	}
}

/* Frames sealed one after the other, as the device writes them. */
static uint8_t built[1 << 16];
static size_t built_len;
static struct tcmp_frame frame;

static void seal(void)
{
	built_len += tcmp_frame_seal(&frame, &built[built_len]);
}

static const uint8_t build_id[20] = {0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9,
				     0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf, 0xb0, 0xb1, 0xb2, 0xb3};

static void test_header_from_status_command(void)
{
	fake_reset(NULL); /* idle, no build-id, default 10 kHz on a 24 MHz timer */
	size_t n = load("cmd_status.bin");
	tcmp_rx(golden, n);
	uint8_t got[128];
	size_t got_n = port.out_len;
	memcpy(got, port.out, got_n < sizeof got ? got_n : sizeof got);
	expect_file("header_no_build_id.bin", got, got_n);
}

static void test_header_with_build_id(void)
{
	const struct tcmp_status st = {
		.state = TCMP_STATE_RUNNING, .mode = TCMP_MODE_STREAM, .fields = 0x0F, .jitter_pct = 25,
		.mean_interval_ticks = 2400, .capacity = 4096, .taken = 123456, .dropped = 789,
		.stored = 122667, .held_from = 122600,
	};
	built_len = 0;
	tcmp_encode_header(&frame, &st, 600000000u, 24000000u, build_id, sizeof build_id);
	seal();
	expect_file("header_build_id.bin", built, built_len);
}

/* Encodes records into DATA frames the way the sampler does. */
static void data_frames_coded(uint8_t fields, uint8_t coding, uint32_t first, const struct tcmp_record *r,
			      size_t n)
{
	static struct tcmp_v14 v14;
	size_t i = 0;
	for (uint32_t frames = 0; i < n; frames++) {
		struct tcmp_data_enc e;
		tcmp_data_begin(&e, &frame, fields, coding, first + (uint32_t)i, &v14,
				frames % TCMP_V14_KEY_INTERVAL != 0);
		for (; i < n && tcmp_data_add(&e, &r[i]); i++)
			;
		tcmp_data_finish(&e);
		CHECK(frame.len + 4 <= TCMP_MAX_PAYLOAD);
		seal();
	}
}

static void data_frames(uint8_t fields, uint32_t first, const struct tcmp_record *r, size_t n)
{
	data_frames_coded(fields, TCMP_CODING_V10, first, r, n);
}

static const struct tcmp_record mixed[5] = {
	{.pc = 0x60004000u, .lr = 0x60003F01u, .exc = 0, .thread = 0x20001000u},
	{.pc = 0x60003000u, .lr = 0xFFFFFFF9u, .exc = 138, .thread = 0x20001000u},
	{.pc = 0x00000200u, .lr = 0x60003F01u, .exc = 15, .thread = 0x20000C80u},
	{.pc = 0x00000100u, .lr = 0xFFFFFFEDu, .exc = 0, .thread = 0x20003400u},
	{.pc = 0x60004002u, .lr = 0x00000101u, .exc = 511, .thread = 0},
};

static void test_data_frames(void)
{
	static const uint32_t pcs[] = {0x60001234u, 0x60001236u, 0x60001236u, 0x60001230u, 0x600A0000u,
				       0x00000100u, 0x00000100u, 0x6000FFFEu, 0x60001234u};
	struct tcmp_record r[100];
	for (size_t i = 0; i < 9; i++)
		r[i] = (struct tcmp_record){.pc = pcs[i]};
	built_len = 0;
	data_frames(TCMP_FIELD_PC, 0, r, 9);
	expect_file("data_pc.bin", built, built_len);

	built_len = 0;
	data_frames(0x0F, 1000, mixed, 5);
	expect_file("data_all_fields.bin", built, built_len);

	built_len = 0;
	data_frames(TCMP_FIELD_PC | TCMP_FIELD_LR, 7, mixed, 4);
	expect_file("data_pc_lr.bin", built, built_len);

	/* EXC keeps xPSR bits 8:0 only: neither the Thumb bit (24) nor the
	 * stack-alignment bit (9) of the stacked xPSR may leak in. */
	struct tcmp_record with_xpsr[5];
	memcpy(with_xpsr, mixed, sizeof mixed);
	for (size_t i = 0; i < 5; i++)
		with_xpsr[i].exc |= (i % 2) ? 0x01000200u : 0x01000000u;
	built_len = 0;
	data_frames(TCMP_FIELD_PC | TCMP_FIELD_EXC, 0, with_xpsr, 5);
	expect_file("data_pc_exc.bin", built, built_len);

	for (uint32_t i = 0; i < 80; i++)
		r[i] = (struct tcmp_record){.pc = (i % 2) ? 0x60000000u + ((i * 0x9E3779B1u) & 0x00FFFFFEu)
							  : 0x00001000u + i * 0x2222u};
	built_len = 0;
	data_frames(TCMP_FIELD_PC, 0x01020304u, r, 80);
	expect_file("data_cobs_split.bin", built, built_len);

	for (uint32_t i = 0; i < 99; i++)
		r[i] = (struct tcmp_record){.pc = (i < 97 && i % 2 == 0) ? 0x80000000u : 0};
	built_len = 0;
	data_frames(TCMP_FIELD_PC, 0, r, 99);
	expect_file("data_fill_rule.bin", built, built_len);

	for (uint32_t i = 0; i < 60; i++)
		r[i] = (i % 2 == 0) ? (struct tcmp_record){.pc = 0, .lr = 1, .exc = 511, .thread = 0}
				    : (struct tcmp_record){.pc = 0xFFFFFFFEu, .lr = 0x80000001u, .exc = 511,
							   .thread = 0x80000000u};
	built_len = 0;
	data_frames(0x0F, 0, r, 60);
	expect_file("data_worst_case.bin", built, built_len);
}

/* gen.py's STACK records: the same values. */
static const uint32_t stack_a0[12] = {0x60001235u, 0x20201fc0u, 0x00000007u, 0x00000000u,
				      0x6000200bu, 0x20208c34u, 0x2020198cu, 0x00000020u,
				      0x60002f41u, 0xaaaaaaaau, 0x20201ff8u, 0x6000b387u};
static uint32_t stack_a1[12], stack_a5[14], stack_a7[12];
static const uint32_t stack_b[5] = {0x00000001u, 0x60003201u, 0x20203f40u, 0x6000b387u, 0};
static const uint32_t stack_irq[3] = {0x00000004u, 0x60004101u, 0xfffffffdu};

static void stack_records(struct tcmp_record r[8])
{
	memcpy(stack_a1, stack_a0, sizeof stack_a0);
	stack_a1[2] = 8;
	stack_a1[3] = 1;
	stack_a5[0] = 3;
	stack_a5[1] = 0x60001005u;
	memcpy(&stack_a5[2], stack_a0, sizeof stack_a0);
	memcpy(stack_a7, stack_a1, sizeof stack_a1);
	stack_a7[7]++;
	const struct tcmp_record recs[8] = {
		{.pc = 0x60001000u, .lr = 0x60001235u, .thread = 0x20001000u, .sp = 0x20201f80u, .n = 12, .stack = stack_a0},
		{.pc = 0x60001004u, .lr = 0x60001235u, .thread = 0x20001000u, .sp = 0x20201f80u, .n = 12, .stack = stack_a1},
		{.pc = 0x60003000u, .lr = 0x60003101u, .thread = 0x20003400u, .sp = 0x20203f00u, .n = 5, .stack = stack_b},
		{.pc = 0x60001010u, .lr = 0x60001235u, .thread = 0x20001000u, .sp = 0x20201f88u, .n = 10, .stack = &stack_a0[2]},
		{.pc = 0x00000100u, .lr = 0x00000101u, .thread = 0x20000c80u, .sp = 0x10000000u, .n = 0, .stack = NULL},
		{.pc = 0x60001100u, .lr = 0x60001001u, .thread = 0x20001000u, .sp = 0x20201f78u, .n = 14, .stack = stack_a5},
		{.pc = 0x60004000u, .lr = 0xfffffffdu, .exc = 16 + 31, .thread = 0x20001000u, .sp = 0x20210ff4u, .n = 3, .stack = stack_irq},
		{.pc = 0x60001004u, .lr = 0x60001235u, .thread = 0x20001000u, .sp = 0x20201f80u, .n = 12, .stack = stack_a7},
	};
	memcpy(r, recs, sizeof recs);
}

/* gen.py's lcg(). */
static void lcg(uint32_t *out, uint32_t n, uint32_t seed)
{
	for (uint32_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		out[i] = seed ^ (seed >> 7);
	}
}

static void test_stack_data_frames(void)
{
	struct tcmp_record r[18];
	stack_records(r);
	built_len = 0;
	data_frames(0x1F, 20, r, 8);
	expect_file("data_stack.bin", built, built_len);

	built_len = 0;
	data_frames(TCMP_FIELD_PC | TCMP_FIELD_LR | TCMP_FIELD_STACK, 0, r, 4);
	expect_file("data_stack_pc_lr.bin", built, built_len);

	static uint32_t one[16];
	r[0] = (struct tcmp_record){.pc = 0x60001000u, .lr = 0x60001235u, .sp = 0x20201f80u, .n = 12, .stack = stack_a0};
	for (uint32_t i = 0; i < 16; i++) {
		one[i] = i + 1;
		r[1 + i] = (struct tcmp_record){.pc = 0x60002000u + 4 * i, .lr = 0x60002001u,
						.sp = 0x20220000u + 0x100u * i, .n = 1, .stack = &one[i]};
	}
	r[17] = r[0];
	built_len = 0;
	data_frames(TCMP_FIELD_PC | TCMP_FIELD_LR | TCMP_FIELD_STACK, 0, r, 18);
	expect_file("data_stack_window.bin", built, built_len);

	static uint32_t words[9][40];
	for (uint32_t i = 0; i < 9; i++) {
		uint32_t n = (i % 3) ? 40 : 8;
		lcg(words[i], n, i + 1);
		r[i] = (struct tcmp_record){.pc = 0x60001000u + 2 * i, .lr = 0x60001235u, .thread = 0x20001000u,
					    .sp = 0x20201000u - 16 * i, .n = n, .stack = words[i]};
	}
	built_len = 0;
	data_frames(0x1F, 0, r, 9);
	expect_file("data_stack_fill.bin", built, built_len);
}

/* gen.py's v12_stack: the eight STACK records, then thread A shallower
 * (two words above record 5's top), thread B deeper. The records keep
 * their thread ids also without the THREAD field, as the ISR stores them:
 * the encoder must not use them then. */
static void v12_stack_records(struct tcmp_record *s)
{
	static const uint32_t shallow[10] = {0x6000200bu, 0x20208c34u, 0x2020198cu, 0x00000020u, 0x60002f41u,
					     0xaaaaaaaau, 0x20201ff8u, 0x6000b387u, 0x20201fe0u, 0x60000101u};
	static const uint32_t deeper[7] = {0x00000002u, 0x60003301u, 0x00000001u, 0x60003201u,
					   0x20203f40u, 0x6000b387u, 0};
	stack_records(s);
	s[8] = (struct tcmp_record){.pc = 0x60001008u, .lr = 0x60001235u, .thread = 0x20001000u, .sp = 0x20201f90u,
				    .n = 10, .stack = shallow};
	s[9] = (struct tcmp_record){.pc = 0x60003004u, .lr = 0x60003101u, .thread = 0x20003400u, .sp = 0x20203ef8u,
				    .n = 7, .stack = deeper};
}

static const uint32_t coded_pcs[] = {0x60001234u, 0x00000100u, 0x60001238u, 0x00000100u,
				     0x60800000u, 0x6000123cu, 0x60800010u, 0x00000104u,
				     0x60001234u, 0x80000000u, 0xfffffffeu, 0x60001234u};

/* The vectors of a record coding that 1.0 has not: data_pc_<v>.bin,
 * data_stack_<v>.bin and data_stack_pc_lr_<v>.bin. */
static void coded_data_frames(uint8_t coding, const char *v)
{
	char name[64];
	struct tcmp_record r[12];
	for (size_t i = 0; i < 12; i++)
		r[i] = (struct tcmp_record){.pc = coded_pcs[i]};
	built_len = 0;
	data_frames_coded(TCMP_FIELD_PC, coding, 0, r, 12);
	snprintf(name, sizeof name, "data_pc_%s.bin", v);
	expect_file(name, built, built_len);

	struct tcmp_record s[10];
	v12_stack_records(s);
	built_len = 0;
	data_frames_coded(0x1F, coding, 20, s, 10);
	snprintf(name, sizeof name, "data_stack_%s.bin", v);
	expect_file(name, built, built_len);
	built_len = 0;
	data_frames_coded(TCMP_FIELD_PC | TCMP_FIELD_LR | TCMP_FIELD_STACK, coding, 0, s, 10);
	snprintf(name, sizeof name, "data_stack_pc_lr_%s.bin", v);
	expect_file(name, built, built_len);
}

/* Protocol 1.2's record coding: gen.py's *_v12 vectors. */
static void test_v12_data_frames(void)
{
	coded_data_frames(TCMP_CODING_V12, "v12");
	built_len = 0;
	data_frames_coded(0x0F, TCMP_CODING_V12, 1000, mixed, 5);
	expect_file("data_all_fields_v12.bin", built, built_len);
}

/* Protocol 1.4's record coding: gen.py's *_v14 vectors, among them a
 * chain of frames whose stacks refer to stacks of the frames before. */
static void test_v14_data_frames(void)
{
	coded_data_frames(TCMP_CODING_V14, "v14");
	struct tcmp_record m[10];
	for (size_t i = 0; i < 5; i++) {
		m[i] = mixed[i];
		m[9 - i] = mixed[i];
	}
	built_len = 0;
	data_frames_coded(0x0F, TCMP_CODING_V14, 1000, m, 10);
	expect_file("data_all_fields_v14.bin", built, built_len);

	/* gen.py's chain: v12_stack 30 times, the n-th time with its PCs 2n
	 * up and its two lowest stack words n up. */
	static struct tcmp_record chain[300];
	static uint32_t words[300][TCMP_STACK_WORDS_MAX];
	struct tcmp_record s[10];
	v12_stack_records(s);
	for (uint32_t n = 0; n < 30; n++) {
		for (uint32_t k = 0; k < 10; k++) {
			struct tcmp_record *c = &chain[10 * n + k];
			*c = s[k];
			c->pc += 2u * n;
			for (uint32_t j = 0; j < c->n; j++)
				words[10 * n + k][j] = s[k].stack[j] + (j < 2 ? n : 0u);
			c->stack = words[10 * n + k];
		}
	}
	built_len = 0;
	data_frames_coded(0x1F, TCMP_CODING_V14, 0, chain, 300);
	expect_file("data_stack_chain_v14.bin", built, built_len);

	/* gen.py's shifted: a list in a frame growing by a word, then two. */
	static const uint32_t grown0[10] = {0x20200c28u, 0x00000020u, 0x60001001u, 0x60002001u, 0x60003001u,
					    0x60004001u, 0, 0, 0xaaaaaaaau, 0x60000101u};
	static const uint32_t grown1[10] = {0x20200c28u, 0x00000021u, 0x60000f01u, 0x60001001u, 0x60002001u,
					    0x60003001u, 0x60004001u, 0, 0, 0xaaaaaaaau};
	static const uint32_t grown2[10] = {0x20200c28u, 0x00000022u, 0x60000d01u, 0x60000e01u, 0x60000f01u,
					    0x60001001u, 0x60002001u, 0x60003001u, 0x60004001u, 0};
	const struct tcmp_record shifted[3] = {
		{.pc = 0x60001366u, .lr = 0x60001e51u, .thread = 0x202020a0u, .sp = 0x20201da8u, .n = 10, .stack = grown0},
		{.pc = 0x60001374u, .lr = 0x60001e51u, .thread = 0x202020a0u, .sp = 0x20201da8u, .n = 10, .stack = grown1},
		{.pc = 0x60001362u, .lr = 0x60001e51u, .thread = 0x202020a0u, .sp = 0x20201da8u, .n = 10, .stack = grown2},
	};
	built_len = 0;
	data_frames_coded(0x1F, TCMP_CODING_V14, 0, shifted, 3);
	expect_file("data_stack_shift_v14.bin", built, built_len);
}

static void test_header_of_a_stack_run(void)
{
	const struct tcmp_status st = {
		.state = TCMP_STATE_HOLDING, .mode = TCMP_MODE_SNAPSHOT, .fields = 0x1F, .jitter_pct = 25,
		.stack_words = 32, .mean_interval_ticks = 2400, .capacity = 431, .taken = 431, .dropped = 0,
		.stored = 431, .held_from = 0,
	};
	built_len = 0;
	tcmp_encode_header(&frame, &st, 600000000u, 24000000u, build_id, sizeof build_id);
	seal();
	expect_file("header_stack.bin", built, built_len);
}

static void test_end_and_reply(void)
{
	built_len = 0;
	tcmp_encode_end(&frame, TCMP_END_DRAINED, 10, 60, 1000, 0, 1000);
	seal();
	tcmp_encode_end(&frame, TCMP_END_STREAM_STOPPED, 0, 4096, 5000, 904, 4096);
	seal();
	expect_file("end.bin", built, built_len);

	static const uint8_t replies[7][2] = {
		{TCMP_CMD_START, TCMP_OK},          {0x99, TCMP_ERR_UNKNOWN},
		{TCMP_CMD_START, TCMP_ERR_BAD_ARG}, {TCMP_CMD_START, TCMP_ERR_BUSY},
		{TCMP_CMD_DRAIN, TCMP_ERR_UNAVAILABLE}, {TCMP_CMD_DRAIN, TCMP_ERR_MALFORMED},
		{0, TCMP_ERR_MALFORMED},
	};
	built_len = 0;
	for (size_t i = 0; i < 7; i++) {
		tcmp_encode_reply(&frame, replies[i][0], replies[i][1]);
		seal();
	}
	expect_file("reply.bin", built, built_len);
}

static void threads_frames(const struct fake_thread *t, size_t n)
{
	tcmp_threads_begin(&frame);
	for (size_t i = 0; i < n; i++) {
		if (!tcmp_threads_fits(&frame, t[i].name)) {
			seal();
			tcmp_threads_begin(&frame);
		}
		tcmp_threads_add(&frame, t[i].id, t[i].name);
	}
	seal();
}

static void test_threads(void)
{
	static char names[20][40];
	struct fake_thread t[23] = {
		{.id = 0x20001000u, .name = "main"},
		{.id = 0x20002000u, .name = ""},
		{.id = 0x20000C80u, .name = "a_thread_name_of_31_bytes_long_"},
	};
	for (int i = 0; i < 20; i++) {
		snprintf(names[i], sizeof names[i], "worker_%02d_with_a_long_name__", i);
		t[3 + i] = (struct fake_thread){.id = 0x20010000u + 0x100u * (uint32_t)i, .name = names[i]};
	}
	built_len = 0;
	threads_frames(t, 23);
	expect_file("threads.bin", built, built_len);

	/* Names are cut to 31 bytes; NULL is an empty name. */
	struct fake_thread longer[3] = {t[0], {.id = 0x20002000u, .name = NULL}, {.id = 0x20000C80u, .name = "a_thread_name_of_31_bytes_long_AND_MORE"}};
	built_len = 0;
	threads_frames(longer, 3);
	uint8_t first3[1024];
	size_t first3_len = built_len;
	memcpy(first3, built, built_len);
	built_len = 0;
	threads_frames(t, 3);
	CHECK(first3_len == built_len && memcmp(first3, built, built_len) == 0);

	static const char *const tn[7] = {
		"thread_00_named_for_the_test", "thread_01_named_for_the_test", "thread_02_named_for_the_test",
		"thread_03_named_for_the_test", "thread_04_named_for_the_test", "thread_05_named_for_the_test",
		"thread_06_named_for_the_test",
	};
	struct fake_thread t254[8];
	for (uint32_t i = 0; i < 7; i++)
		t254[i] = (struct fake_thread){.id = 0x21212121u + 0x01010101u * i, .name = tn[i]};
	t254[7] = (struct fake_thread){.id = 0x31323334u, .name = "t00000000_xx"};
	built_len = 0;
	threads_frames(t254, 8);
	expect_file("threads_cobs_254.bin", built, built_len);
}

/* gen.py's stack_top_words(): a Weyl sequence, every fourth word 0. */
static void stack_top_words(uint32_t seed, uint32_t *w, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		w[i] = i % 4 == 3 ? 0u : seed + i * 0x9E3779B1u;
}

static void test_stack_top(void)
{
	uint32_t a[TCMP_STACK_TOP_WORDS], b[5];
	stack_top_words(0x20201F81u, a, TCMP_STACK_TOP_WORDS);
	stack_top_words(0x60001235u, b, 5);
	built_len = 0;
	tcmp_encode_stack_top(&frame, 0x20001000u, 0x20202000u, a, TCMP_STACK_TOP_WORDS);
	seal();
	tcmp_encode_stack_top(&frame, 0x20003400u, 0x20204000u, b, 5);
	seal();
	tcmp_encode_stack_top(&frame, 0x20000C80u, 0x20200400u, NULL, 0);
	seal();
	expect_file("stack_top.bin", built, built_len);
}

/* The drain scenarios: the same formula as gen.py's sample_at(). */
static void sample_at(uint32_t i, uint32_t *pc, uint32_t *lr, uint32_t *xpsr, uint32_t *thread)
{
	static const uint32_t threads[3] = {0x20001000u, 0x20003400u, 0x20000c80u};
	*pc = (0x60002000u + ((i * 2654435761u) & 0xFFFFu) % 0xA000u) & ~1u;
	*lr = (i % 7 == 3) ? 0xFFFFFFF9u : ((0x60002000u + ((i * 40503u) & 0x3FFFu)) | 1u);
	*xpsr = 0x01000000u | ((i % 5 == 4) ? 16u + 122u : 0u);
	*xpsr |= (i % 2) ? 0x200u : 0u; /* stack-alignment padding: not part of EXC */
	*thread = threads[i % 3];
}

static const struct fake_thread scenario_threads[3] = {
	{.id = 0x20001000u, .name = "main"},
	{.id = 0x20003400u, .name = "sysworkq"},
	{.id = 0x20000c80u, .name = "a_thread_name_of_31_bytes_long_"},
};

static void run_snapshot(uint8_t fields, uint32_t n)
{
	struct tcmp_port_config cfg = fake_config;
	cfg.build_id = build_id;
	cfg.build_id_len = sizeof build_id;
	fake_reset(&cfg);
	port.threads = scenario_threads;
	port.nthreads = 3;
	fake_start(10000, 25, fields, TCMP_MODE_SNAPSHOT, n, 0);
	port.out_len = 0; /* the START reply */
	for (uint32_t i = 0; i < n + 10; i++) {
		uint32_t pc, lr, xpsr;
		sample_at(i, &pc, &lr, &xpsr, &port.current_thread);
		fake_sample(pc, lr, xpsr);
	}
	tcmp_poll();
	CHECK_EQ_U(port.out_len, 0); /* a snapshot sends nothing by itself */
	struct tcmp_status st;
	tcmp_get_status(&st);
	CHECK_EQ_U(st.state, TCMP_STATE_HOLDING);
	CHECK_EQ_U(st.stored, n);
}

static void test_drain_replays(void)
{
	run_snapshot(TCMP_FIELD_PC, 600);
	size_t n = load("cmd_drain_all.bin");
	tcmp_rx(golden, n);
	static uint8_t got[1 << 16];
	size_t got_n = port.out_len;
	memcpy(got, port.out, got_n);
	expect_file("drain_pc.bin", got, got_n);
	/* DRAIN may be repeated until DONE, with the same answer. */
	port.out_len = 0;
	load("cmd_drain_all.bin");
	tcmp_rx(golden, n);
	CHECK(port.out_len == got_n && memcmp(port.out, got, got_n) == 0);

	run_snapshot(0x0F, 100);
	const uint8_t range[8] = {10, 0, 0, 0, 50, 0, 0, 0};
	fake_command(TCMP_CMD_DRAIN, range, sizeof range);
	got_n = port.out_len;
	memcpy(got, port.out, got_n);
	expect_file("drain_all_fields.bin", got, got_n);
}

/* A host asks for a coding in START's byte 7 (cmd_start_<v>.bin); the
 * HEADER says the run uses it and the DATA frames are coded so
 * (drain_pc_<v>.bin): n samples of sample_at, the START's count. */
static void drain_replay_coded(uint8_t coding, const char *v, uint32_t n_samples)
{
	char name[64];
	struct tcmp_port_config cfg = fake_config;
	cfg.build_id = build_id;
	cfg.build_id_len = sizeof build_id;
	fake_reset(&cfg);
	snprintf(name, sizeof name, "cmd_start_%s.bin", v);
	size_t n = load(name);
	tcmp_rx(golden, n);
	port.out_len = 0; /* the START reply */
	for (uint32_t i = 0; i < n_samples + 10u; i++) {
		uint32_t pc, lr, xpsr, thread;
		sample_at(i, &pc, &lr, &xpsr, &thread);
		fake_sample(pc, lr, xpsr);
	}
	tcmp_poll();
	struct tcmp_status st;
	tcmp_get_status(&st);
	CHECK_EQ_U(st.coding, coding);
	CHECK_EQ_U(st.stored, n_samples);
	n = load("cmd_drain_all.bin");
	tcmp_rx(golden, n);
	static uint8_t got[1 << 16];
	size_t got_n = port.out_len;
	memcpy(got, port.out, got_n);
	snprintf(name, sizeof name, "drain_pc_%s.bin", v);
	expect_file(name, got, got_n);
}

static void test_drain_replay_v12(void)
{
	drain_replay_coded(TCMP_CODING_V12, "v12", 600);

	/* A coding the core does not know is the 1.0 one, as on a 1.1 core. */
	struct tcmp_status st;
	fake_reset(&fake_config);
	uint8_t b[16] = {0x10, 0x27, 0, 0, 25, TCMP_FIELD_PC, TCMP_MODE_SNAPSHOT, 7, 0x58, 0x02};
	fake_command(TCMP_CMD_START, b, sizeof b);
	tcmp_get_status(&st);
	CHECK_EQ_U(st.state, TCMP_STATE_RUNNING);
	CHECK_EQ_U(st.coding, TCMP_CODING_V10);
}

/* 1.4: a DRAIN answer starts a chain with a key frame and starts it again
 * every TCMP_V14_KEY_INTERVAL frames; repeated, the answer is the same. */
static void test_drain_replay_v14(void)
{
	drain_replay_coded(TCMP_CODING_V14, "v14", 10000);
	static uint8_t first[1 << 16];
	size_t first_n = port.out_len;
	memcpy(first, port.out, first_n);
	port.out_len = 0;
	size_t n = load("cmd_drain_all.bin");
	tcmp_rx(golden, n);
	CHECK(port.out_len == first_n && memcmp(port.out, first, first_n) == 0);
}

/* Feeds a golden command file; returns the single REPLY's status. */
static int command_reply(const char *name, uint8_t want_command)
{
	size_t n = load(name);
	port.out_len = 0;
	tcmp_rx(golden, n);
	struct frame f[2];
	size_t bad;
	size_t nf = fake_frames(f, 2, &bad, 1);
	CHECK_EQ_U(nf, 1);
	CHECK_EQ_U(bad, 0);
	if (nf != 1 || f[0].type != TCMP_FRAME_REPLY || f[0].p[1] != want_command) {
		check_failures++;
		return -1;
	}
	return f[0].p[2];
}

static void test_commands(void)
{
	struct tcmp_status st;
	fake_reset(NULL);
	CHECK_EQ_U(command_reply("cmd_start.bin", TCMP_CMD_START), TCMP_OK);
	tcmp_get_status(&st);
	CHECK_EQ_U(st.state, TCMP_STATE_RUNNING);
	CHECK_EQ_U(st.mode, TCMP_MODE_STREAM);
	CHECK_EQ_U(st.fields, 0x0F);
	CHECK_EQ_U(st.jitter_pct, 25);
	CHECK_EQ_U(st.mean_interval_ticks, 2400);
	CHECK_EQ_U(port.timer_starts, 1);
	CHECK(port.first_ticks >= 1800 && port.first_ticks <= 3000);
	/* 2000 ms at 10 kHz = 20000 samples, then the stream ends itself. */
	for (uint32_t i = 0; i < 20005; i++) {
		fake_sample(0x60000100u + 2 * (i % 64), 0x60000001u, 0x01000000u);
		if (i % 100 == 0)
			tcmp_poll();
	}
	tcmp_poll();
	tcmp_get_status(&st);
	CHECK_EQ_U(st.state, TCMP_STATE_IDLE);
	CHECK_EQ_U(st.taken, 20000);
	CHECK_EQ_U(port.timer_running, 0);
	port.out_len = 0;

	fake_reset(NULL);
	CHECK_EQ_U(command_reply("cmd_start_stack.bin", TCMP_CMD_START), TCMP_OK);
	tcmp_get_status(&st);
	CHECK_EQ_U(st.fields, 0x1F);
	CHECK_EQ_U(st.stack_words, 32);
	CHECK_EQ_U(st.capacity, (TCMP_BUFFER_WORDS - 2) / 38);
	CHECK_EQ_U(command_reply("cmd_stop.bin", TCMP_CMD_STOP), TCMP_OK);
	CHECK_EQ_U(command_reply("cmd_done.bin", TCMP_CMD_DONE), TCMP_OK);

	CHECK_EQ_U(command_reply("cmd_start_default.bin", TCMP_CMD_START), TCMP_OK);
	tcmp_get_status(&st);
	CHECK_EQ_U(st.mode, TCMP_MODE_SNAPSHOT);
	CHECK_EQ_U(st.fields, TCMP_FIELD_PC);
	CHECK_EQ_U(st.mean_interval_ticks, 2400); /* the port default, 10 kHz */
	CHECK_EQ_U(port.first_ticks, 2400);       /* no jitter */
	for (int i = 0; i < 10; i++)
		fake_sample(0x60000100u, 0, 0);
	CHECK_EQ_U(command_reply("cmd_drain.bin", TCMP_CMD_DRAIN), TCMP_ERR_BUSY);
	CHECK_EQ_U(command_reply("cmd_done.bin", TCMP_CMD_DONE), TCMP_ERR_BUSY);
	CHECK_EQ_U(command_reply("cmd_stop.bin", TCMP_CMD_STOP), TCMP_OK);
	tcmp_get_status(&st);
	CHECK_EQ_U(st.state, TCMP_STATE_HOLDING);
	CHECK_EQ_U(st.stored, 10);
	CHECK_EQ_U(command_reply("cmd_drain.bin", TCMP_CMD_DRAIN), TCMP_ERR_UNAVAILABLE); /* [5,105) */
	CHECK_EQ_U(command_reply("cmd_done.bin", TCMP_CMD_DONE), TCMP_OK);
	tcmp_get_status(&st);
	CHECK_EQ_U(st.state, TCMP_STATE_IDLE);
}

static void test_mixed_stream_is_answered(void)
{
	/* The device side of mixed_stream.bin: text and a corrupted frame are
	 * not commands (MALFORMED, command 0); device frame types are unknown
	 * commands. Nothing is dropped silently, nothing crashes. */
	fake_reset(NULL);
	size_t n = load("mixed_stream.bin");
	tcmp_rx(golden, n);
	struct frame f[8];
	size_t bad;
	size_t nf = fake_frames(f, 8, &bad, 1);
	CHECK_EQ_U(bad, 0);
	static const uint8_t want[5][2] = {
		{0, TCMP_ERR_MALFORMED},                 /* boot text */
		{TCMP_FRAME_REPLY, TCMP_ERR_UNKNOWN},    /* REPLY frame */
		{0, TCMP_ERR_MALFORMED},                 /* bad CRC */
		{TCMP_FRAME_END, TCMP_ERR_UNKNOWN},      /* END frame */
		{0, TCMP_ERR_MALFORMED},                 /* log line; the last REPLY... */
	};
	CHECK_EQ_U(nf, 6);
	for (size_t i = 0; i < 5 && i < nf; i++) {
		CHECK_EQ_U(f[i].type, TCMP_FRAME_REPLY);
		CHECK_EQ_U(f[i].p[1], want[i][0]);
		CHECK_EQ_U(f[i].p[2], want[i][1]);
	}
	if (nf == 6) /* ...is unknown to the device too */
		CHECK(f[5].p[1] == TCMP_FRAME_REPLY && f[5].p[2] == TCMP_ERR_UNKNOWN);
}

const struct test_case golden_tests[] = {
	{"golden/header_from_status_command", test_header_from_status_command},
	{"golden/header_with_build_id", test_header_with_build_id},
	{"golden/data_frames", test_data_frames},
	{"golden/stack_data_frames", test_stack_data_frames},
	{"golden/header_of_a_stack_run", test_header_of_a_stack_run},
	{"golden/end_and_reply", test_end_and_reply},
	{"golden/threads", test_threads},
	{"golden/stack_top", test_stack_top},
	{"golden/drain_replays", test_drain_replays},
	{"golden/v12_data_frames", test_v12_data_frames},
	{"golden/drain_replay_v12", test_drain_replay_v12},
	{"golden/v14_data_frames", test_v14_data_frames},
	{"golden/drain_replay_v14", test_drain_replay_v14},
	{"golden/commands", test_commands},
	{"golden/mixed_stream_is_answered", test_mixed_stream_is_answered},
	{NULL, NULL},
};
