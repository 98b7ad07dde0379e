/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Behaviour of the sampler core through its public API and the fake port:
 * the jittered timer, snapshot and stream runs, the ring, drops, DRAIN
 * ranges, malformed commands, frame sizes, and bytes per sample.
 * One file of some 900 lines, as sampler.c is one (its header says why):
 * every case drives that one core through the fake port, with the helpers
 * at the top (status, frames, drains) that all of them share.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fake_port.h"

static struct frame frames[4096];
static struct tcmp_record recs[600];

static struct tcmp_status status(void)
{
	struct tcmp_status st;
	tcmp_get_status(&st);
	return st;
}

/* The single REPLY the device sent since the last call: its status, or
 * -1 (and a failed check) when the output is anything else. */
static int reply_status(uint8_t command)
{
	size_t bad;
	size_t n = fake_frames(frames, 2, &bad, 1);
	CHECK_EQ_U(bad, 0);
	if (n != 1 || frames[0].type != TCMP_FRAME_REPLY || frames[0].p[1] != command) {
		fprintf(stderr, "want one REPLY to 0x%02x, got %zu frames (first type %d)\n", command, n,
			n ? frames[0].type : -1);
		check_failures++;
		return -1;
	}
	return frames[0].p[2];
}

static int start(uint32_t rate, uint8_t jitter, uint8_t fields, uint8_t mode, uint32_t count,
		 uint32_t duration_ms)
{
	fake_start(rate, jitter, fields, mode, count, duration_ms);
	return reply_status(TCMP_CMD_START);
}

static int drain(uint32_t from, uint32_t count)
{
	uint8_t b[8];
	tcmp_put_u32(b, from);
	tcmp_put_u32(b + 4, count);
	fake_command(TCMP_CMD_DRAIN, b, sizeof b);
	size_t bad;
	size_t n = fake_frames(frames, 4096, &bad, 0);
	CHECK_EQ_U(bad, 0);
	if (n == 1 && frames[0].type == TCMP_FRAME_REPLY)
		return reply_status(TCMP_CMD_DRAIN);
	return TCMP_OK;
}

/* A PC that is a pure function of the sample number, to check order. */
static uint32_t pc_of(uint32_t i)
{
	return 0x60000000u + ((i * 2654435761u) >> 12 & 0xFFFEu);
}

/* ---- jitter ---- */

static void run_intervals(uint32_t rate, uint8_t jitter, uint32_t n, uint32_t *lo, uint32_t *hi, double *mean,
			  uint32_t *hist, uint32_t buckets)
{
	fake_reset(NULL);
	CHECK_EQ_U(start(rate, jitter, TCMP_FIELD_PC, TCMP_MODE_STREAM, 0, 0), TCMP_OK);
	uint32_t m = status().mean_interval_ticks;
	uint32_t half = (uint32_t)((uint64_t)m * jitter / 100u);
	double sum = 0;
	*lo = UINT32_MAX;
	*hi = 0;
	for (uint32_t i = 0; i < n; i++) {
		fake_sample(0x60000000u, 0, 0);
		uint32_t t = port.last_ticks;
		sum += t;
		if (t < *lo)
			*lo = t;
		if (t > *hi)
			*hi = t;
		if (hist != NULL && t >= m - half && t <= m + half)
			hist[(uint64_t)(t - (m - half)) * buckets / (2u * half + 1u)]++;
	}
	*mean = sum / n;
	CHECK_EQ_U(port.acks, n);
}

static void test_jitter_bounds_and_mean(void)
{
	uint32_t lo, hi, hist[10] = {0};
	double mean;
	const uint32_t n = 1000000;
	/* 10 kHz on 24 MHz: mean 2400 ticks, +-25 % = [1800, 3000]. */
	run_intervals(10000, 25, n, &lo, &hi, &mean, hist, 10);
	CHECK_EQ_U(lo, 1800);
	CHECK_EQ_U(hi, 3000);
	/* Uniform over 1201 values: sd 346.7, so the mean of 10^6 draws has an
	 * sd of 0.35 ticks; 2 ticks is > 5 sd. */
	CHECK(fabs(mean - 2400.0) < 2.0);
	for (int b = 0; b < 10; b++) /* each tenth holds 10 % +- 0.5 % */
		CHECK(hist[b] > n / 10 - n / 200 && hist[b] < n / 10 + n / 200);

	/* No jitter: every interval is the mean exactly. */
	run_intervals(10000, 0, 1000, &lo, &hi, &mean, NULL, 0);
	CHECK_EQ_U(lo, 2400);
	CHECK_EQ_U(hi, 2400);

	/* A rate that does not divide the clock: the mean rounds to nearest
	 * (24e6 / 7000 = 3428.57 -> 3429) and the draws centre on it. */
	run_intervals(7000, 50, n, &lo, &hi, &mean, NULL, 0);
	CHECK_EQ_U(status().mean_interval_ticks, 3429);
	CHECK_EQ_U(lo, 3429 - 1714);
	CHECK_EQ_U(hi, 3429 + 1714);
	CHECK(fabs(mean - 3429.0) < 4.0);
}

static void test_timer_acked_on_every_interrupt(void)
{
	fake_reset(NULL);
	CHECK_EQ_U(start(10000, 10, TCMP_FIELD_PC, TCMP_MODE_SNAPSHOT, 5, 0), TCMP_OK);
	for (int i = 0; i < 8; i++)
		fake_sample(0x60000000u, 0, 0);
	/* The run ended at 5 inside the ISR; a late interrupt is still
	 * acknowledged (or it would fire forever) but stores nothing. */
	CHECK_EQ_U(port.acks, 8);
	CHECK_EQ_U(status().taken, 5);
	CHECK_EQ_U(status().stored, 5);
	CHECK_EQ_U(port.timer_running, 1); /* until the thread side notices */
	tcmp_poll();
	CHECK_EQ_U(port.timer_running, 0);
	CHECK_EQ_U(status().state, TCMP_STATE_HOLDING);
}

/* ---- snapshot ---- */

static void test_snapshot_fill_hold_drain(void)
{
	fake_reset(NULL);
	CHECK_EQ_U(start(10000, 25, TCMP_FIELD_PC, TCMP_MODE_SNAPSHOT, 0, 0), TCMP_OK);
	struct tcmp_status st = status();
	CHECK_EQ_U(st.capacity, TCMP_BUFFER_WORDS);
	for (uint32_t i = 0; i < TCMP_BUFFER_WORDS + 1000; i++) {
		fake_sample(pc_of(i), 0, 0);
		if (i % 512 == 0)
			tcmp_poll();
	}
	/* Nothing on the wire while it ran; it stopped when full, no drops. */
	CHECK_EQ_U(port.out_len, 0);
	st = status();
	CHECK_EQ_U(st.state, TCMP_STATE_HOLDING);
	CHECK_EQ_U(st.stored, TCMP_BUFFER_WORDS);
	CHECK_EQ_U(st.taken, TCMP_BUFFER_WORDS);
	CHECK_EQ_U(st.dropped, 0);
	CHECK_EQ_U(port.timer_running, 0);

	/* START while holding is BUSY. */
	CHECK_EQ_U(start(10000, 25, TCMP_FIELD_PC, TCMP_MODE_SNAPSHOT, 0, 0), TCMP_ERR_BUSY);

	/* The whole buffer, then sub-ranges; every record is the right one. */
	static const uint32_t ranges[][2] = {{0, 0}, {100, 50}, {TCMP_BUFFER_WORDS - 1, 1}, {0, 1}, {777, 3000}};
	for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++) {
		uint32_t from = ranges[r][0];
		uint32_t end = ranges[r][1] ? from + ranges[r][1] : TCMP_BUFFER_WORDS;
		CHECK_EQ_U(drain(from, ranges[r][1]), TCMP_OK);
		size_t n = fake_frames(frames, 4096, NULL, 1);
		CHECK(n >= 3);
		if (n < 3)
			continue;
		CHECK_EQ_U(frames[0].type, TCMP_FRAME_HEADER);
		CHECK_EQ_U(frames[n - 1].type, TCMP_FRAME_END);
		CHECK_EQ_U(frames[n - 1].p[1], TCMP_END_DRAINED);
		CHECK_EQ_U(le32(&frames[n - 1].p[2]), from);
		CHECK_EQ_U(le32(&frames[n - 1].p[6]), end);
		uint32_t next = from;
		for (size_t f = 1; f + 1 < n; f++) {
			uint32_t first;
			size_t k = data_records(&frames[f], TCMP_FIELD_PC, &first, recs, 600);
			CHECK_EQ_U(first, next);
			for (size_t i = 0; i < k; i++)
				if (recs[i].pc != pc_of(first + (uint32_t)i)) {
					CHECK_EQ_U(recs[i].pc, pc_of(first + (uint32_t)i));
					break;
				}
			next += (uint32_t)k;
		}
		CHECK_EQ_U(next, end);
	}

	/* The empty range at the end is fine; past it is not held. */
	CHECK_EQ_U(drain(TCMP_BUFFER_WORDS, 0), TCMP_OK);
	size_t n = fake_frames(frames, 4096, NULL, 1);
	CHECK_EQ_U(n, 2);
	CHECK_EQ_U(drain(TCMP_BUFFER_WORDS + 1, 0), TCMP_ERR_UNAVAILABLE);
	CHECK_EQ_U(drain(TCMP_BUFFER_WORDS - 10, 11), TCMP_ERR_UNAVAILABLE);
	CHECK_EQ_U(drain(10, UINT32_MAX), TCMP_ERR_UNAVAILABLE); /* wraps */

	/* DONE releases: IDLE, nothing held, DRAIN unavailable. */
	fake_command(TCMP_CMD_DONE, NULL, 0);
	CHECK_EQ_U(reply_status(TCMP_CMD_DONE), TCMP_OK);
	st = status();
	CHECK_EQ_U(st.state, TCMP_STATE_IDLE);
	CHECK_EQ_U(st.held_from, st.stored);
	CHECK_EQ_U(drain(0, 0), TCMP_ERR_UNAVAILABLE);
}

static void test_snapshot_count_duration_stop(void)
{
	fake_reset(NULL);
	/* count */
	CHECK_EQ_U(start(10000, 25, TCMP_FIELD_PC, TCMP_MODE_SNAPSHOT, 1000, 0), TCMP_OK);
	for (int i = 0; i < 1500; i++)
		fake_sample(pc_of((uint32_t)i), 0, 0);
	tcmp_poll();
	CHECK_EQ_U(status().stored, 1000);
	CHECK_EQ_U(status().state, TCMP_STATE_HOLDING);
	fake_command(TCMP_CMD_DONE, NULL, 0);
	CHECK_EQ_U(reply_status(TCMP_CMD_DONE), TCMP_OK);

	/* duration: 250 ms at 10 kHz = 2500 samples; count larger */
	CHECK_EQ_U(start(10000, 25, TCMP_FIELD_PC, TCMP_MODE_SNAPSHOT, 5000, 250), TCMP_OK);
	for (int i = 0; i < 6000; i++)
		fake_sample(pc_of((uint32_t)i), 0, 0);
	tcmp_poll();
	CHECK_EQ_U(status().taken, 2500);
	fake_command(TCMP_CMD_DONE, NULL, 0);
	CHECK_EQ_U(reply_status(TCMP_CMD_DONE), TCMP_OK);

	/* STOP before anything ends it */
	CHECK_EQ_U(start(1000, 0, TCMP_FIELD_PC, TCMP_MODE_SNAPSHOT, 0, 60000), TCMP_OK);
	for (int i = 0; i < 321; i++)
		fake_sample(pc_of((uint32_t)i), 0, 0);
	fake_command(TCMP_CMD_STOP, NULL, 0);
	CHECK_EQ_U(reply_status(TCMP_CMD_STOP), TCMP_OK);
	CHECK_EQ_U(status().state, TCMP_STATE_HOLDING);
	CHECK_EQ_U(status().stored, 321);
	fake_sample(0x60000000u, 0, 0); /* a pending interrupt after STOP */
	CHECK_EQ_U(status().taken, 321);
	/* STOP again is harmless */
	fake_command(TCMP_CMD_STOP, NULL, 0);
	CHECK_EQ_U(reply_status(TCMP_CMD_STOP), TCMP_OK);
	CHECK_EQ_U(status().state, TCMP_STATE_HOLDING);
}

/* ---- stream ---- */

/* Collects stream output: records into got[] by index; returns the END
 * frame's index in frames[] or -1. Checks indices are contiguous. */
static uint32_t *got_pc;
static uint32_t got_next;

static void collect(uint8_t fields, size_t *end_at, size_t *nframes)
{
	size_t bad;
	size_t n = fake_frames(frames, 4096, &bad, 1);
	CHECK_EQ_U(bad, 0);
	*end_at = SIZE_MAX;
	for (size_t f = 0; f < n; f++) {
		CHECK(frames[f].len + 4 <= TCMP_MAX_PAYLOAD);
		if (frames[f].type == TCMP_FRAME_END)
			*end_at = f;
		if (frames[f].type != TCMP_FRAME_DATA)
			continue;
		uint32_t first;
		size_t k = data_records(&frames[f], fields, &first, recs, 600);
		CHECK_EQ_U(first, got_next);
		for (size_t i = 0; i < k; i++)
			got_pc[first + i] = recs[i].pc;
		got_next = first + (uint32_t)k;
	}
	*nframes = n;
}

static void test_stream_ring_wraps(void)
{
	const uint32_t total = 10 * TCMP_BUFFER_WORDS + 123;
	got_pc = calloc(total, sizeof *got_pc);
	got_next = 0;
	fake_reset(NULL);
	CHECK_EQ_U(start(10000, 25, TCMP_FIELD_PC, TCMP_MODE_STREAM, total, 0), TCMP_OK);
	size_t end_at = SIZE_MAX, n;
	for (uint32_t i = 0; i < total; i++) {
		fake_sample(pc_of(i), 0, 0);
		if (i % 1000 == 999) {
			tcmp_poll();
			collect(TCMP_FIELD_PC, &end_at, &n);
		}
	}
	tcmp_poll(); /* notices the end: the rest, then END */
	collect(TCMP_FIELD_PC, &end_at, &n);
	CHECK(end_at != SIZE_MAX);
	if (end_at != SIZE_MAX) {
		CHECK_EQ_U(frames[end_at].p[1], TCMP_END_STREAM_STOPPED);
		CHECK_EQ_U(le32(&frames[end_at].p[6]), total);  /* end index */
		CHECK_EQ_U(le32(&frames[end_at].p[10]), total); /* taken */
		CHECK_EQ_U(le32(&frames[end_at].p[14]), 0);     /* dropped */
	}
	CHECK_EQ_U(got_next, total);
	for (uint32_t i = 0; i < total; i++)
		if (got_pc[i] != pc_of(i)) {
			CHECK_EQ_U(got_pc[i], pc_of(i));
			break;
		}
	CHECK_EQ_U(status().state, TCMP_STATE_IDLE);
	CHECK_EQ_U(port.timer_running, 0);
	free(got_pc);
}

static void test_stream_drops_are_counted(void)
{
	const uint32_t cap = TCMP_BUFFER_WORDS / 4; /* all fields: 4 words */
	got_pc = calloc(4 * cap, sizeof *got_pc);
	got_next = 0;
	fake_reset(NULL);
	static const struct fake_thread t[2] = {{.id = 0x20001000u, .name = "main"}, {.id = 0x20002000u, .name = "idle"}};
	port.threads = t;
	port.nthreads = 2;
	CHECK_EQ_U(start(10000, 25, FIELDS_4WORD, TCMP_MODE_STREAM, 0, 0), TCMP_OK);
	CHECK_EQ_U(status().capacity, cap);
	/* No poll: the ring fills, then 500 samples are dropped, the ISR
	 * neither blocks nor overwrites. */
	for (uint32_t i = 0; i < cap + 500; i++) {
		port.current_thread = t[i % 2].id;
		fake_sample(pc_of(i), 0x60000001u + 2 * i, 0x01000000u | (i % 3 ? 0 : 138));
	}
	struct tcmp_status st = status();
	CHECK_EQ_U(st.taken, cap + 500);
	CHECK_EQ_U(st.stored, cap);
	CHECK_EQ_U(st.dropped, 500);
	CHECK_EQ_U(port.out_len, 0);
	/* Draining makes room; the next record gets the next index (a device
	 * drop leaves no gap in the numbering). */
	size_t end_at, n;
	for (int i = 0; i < 100; i++)
		tcmp_poll();
	collect(FIELDS_4WORD, &end_at, &n);
	CHECK(got_next >= TCMP_STREAM_BATCH);
	uint32_t sent = got_next;
	for (uint32_t i = 0; i < 10; i++)
		fake_sample(pc_of(10000 + i), 0x60000001u, 0x01000000u);
	CHECK_EQ_U(status().stored, cap + (sent < 10 ? sent : 10));
	/* STOP: REPLY, the rest of the records, THREADS, END. */
	fake_command(TCMP_CMD_STOP, NULL, 0);
	n = fake_frames(frames, 4096, NULL, 0);
	CHECK(n >= 3);
	if (n < 3)
		return;
	CHECK_EQ_U(frames[0].type, TCMP_FRAME_REPLY);
	CHECK_EQ_U(frames[n - 2].type, TCMP_FRAME_THREADS);
	CHECK_EQ_U(frames[n - 2].p[1], 2);
	collect(FIELDS_4WORD, &end_at, &n);
	CHECK_EQ_U(end_at, n - 1);
	CHECK_EQ_U(got_next, cap + 10);
	CHECK_EQ_U(le32(&frames[end_at].p[10]), cap + 510); /* taken */
	CHECK_EQ_U(le32(&frames[end_at].p[14]), 500);       /* dropped */
	CHECK_EQ_U(le32(&frames[end_at].p[18]), cap + 10);  /* stored */
	for (uint32_t i = 0; i < cap; i++)
		if (got_pc[i] != pc_of(i)) {
			CHECK_EQ_U(got_pc[i], pc_of(i));
			break;
		}
	CHECK_EQ_U(got_pc[cap], pc_of(10000));
	free(got_pc);
}

static void test_stream_records_all_fields(void)
{
	fake_reset(NULL);
	CHECK_EQ_U(start(10000, 25, FIELDS_4WORD, TCMP_MODE_STREAM, 300, 0), TCMP_OK);
	for (uint32_t i = 0; i < 300; i++) {
		port.current_thread = 0x20000000u + 0x100u * (i % 5);
		fake_sample(pc_of(i), i % 4 ? 0x60000001u + 8 * i : 0xFFFFFFE9u,
			    0x01000000u | (i % 2 ? 0x200u : 0) | (i % 3 ? 0 : 16 + i % 100));
	}
	tcmp_poll();
	size_t bad;
	size_t n = fake_frames(frames, 16, &bad, 1);
	CHECK_EQ_U(bad, 0);
	uint32_t next = 0;
	for (size_t f = 0; f < n; f++) {
		if (frames[f].type != TCMP_FRAME_DATA)
			continue;
		uint32_t first;
		size_t k = data_records(&frames[f], FIELDS_4WORD, &first, recs, 600);
		CHECK_EQ_U(first, next);
		for (uint32_t i = first; i < first + k; i++) {
			const struct tcmp_record *r = &recs[i - first];
			CHECK_EQ_U(r->pc, pc_of(i));
			CHECK_EQ_U(r->lr, i % 4 ? 0x60000001u + 8 * i : 0xFFFFFFE9u);
			CHECK_EQ_U(r->exc, i % 3 ? 0 : 16 + i % 100);
			CHECK_EQ_U(r->thread, 0x20000000u + 0x100u * (i % 5));
		}
		next += (uint32_t)k;
	}
	CHECK_EQ_U(next, 300);
	CHECK(n >= 3);
	if (n < 3)
		return;
	CHECK_EQ_U(frames[n - 1].type, TCMP_FRAME_END);
	CHECK_EQ_U(frames[n - 2].type, TCMP_FRAME_THREADS); /* an empty table */
	CHECK_EQ_U(frames[n - 2].p[1], 0);
}

static void test_two_word_layouts(void)
{
	static const uint8_t sets[2] = {TCMP_FIELD_PC | TCMP_FIELD_LR, TCMP_FIELD_PC | TCMP_FIELD_EXC};
	for (int s = 0; s < 2; s++) {
		fake_reset(NULL);
		CHECK_EQ_U(start(10000, 0, sets[s], TCMP_MODE_SNAPSHOT, 0, 0), TCMP_OK);
		CHECK_EQ_U(status().capacity, TCMP_BUFFER_WORDS / 2);
		for (uint32_t i = 0; i < 100; i++)
			fake_sample(pc_of(i), 0x60000101u + 4 * i, 0x01000000u | (i & 0x1FF));
		fake_command(TCMP_CMD_STOP, NULL, 0);
		CHECK_EQ_U(reply_status(TCMP_CMD_STOP), TCMP_OK);
		CHECK_EQ_U(drain(0, 0), TCMP_OK);
		size_t n = fake_frames(frames, 16, NULL, 1);
		CHECK_EQ_U(n, 3);
		uint32_t first;
		size_t k = data_records(&frames[1], sets[s], &first, recs, 600);
		CHECK_EQ_U(k, 100);
		for (uint32_t i = 0; i < k; i++) {
			CHECK_EQ_U(recs[i].pc, pc_of(i));
			CHECK_EQ_U(recs[i].lr, s == 0 ? 0x60000101u + 4 * i : 0);
			CHECK_EQ_U(recs[i].exc, s == 1 ? (i & 0x1FF) : 0);
		}
	}
}

/* ---- commands ---- */

static void test_malformed_commands_keep_sampling(void)
{
	fake_reset(NULL);
	CHECK_EQ_U(start(10000, 25, TCMP_FIELD_PC, TCMP_MODE_SNAPSHOT, 0, 0), TCMP_OK);
	uint32_t taken = 0;
	const uint8_t start_body[16] = {0x10, 0x27, 0, 0, 25, 1, 0, 0};

	/* Truncated START body. */
	fake_command(TCMP_CMD_START, start_body, 15);
	CHECK_EQ_U(reply_status(TCMP_CMD_START), TCMP_ERR_MALFORMED);
	/* Truncated DRAIN body. */
	fake_command(TCMP_CMD_DRAIN, start_body, 7);
	CHECK_EQ_U(reply_status(TCMP_CMD_DRAIN), TCMP_ERR_MALFORMED);
	/* START while running: BUSY. */
	fake_command(TCMP_CMD_START, start_body, 16);
	CHECK_EQ_U(reply_status(TCMP_CMD_START), TCMP_ERR_BUSY);
	/* Unknown types, including device frame types. */
	fake_command(0x99, NULL, 0);
	CHECK_EQ_U(reply_status(0x99), TCMP_ERR_UNKNOWN);
	fake_command(TCMP_FRAME_DATA, start_body, 8);
	CHECK_EQ_U(reply_status(TCMP_FRAME_DATA), TCMP_ERR_UNKNOWN);
	/* DRAIN and DONE while a snapshot runs: BUSY. */
	CHECK_EQ_U(drain(0, 0), TCMP_ERR_BUSY);
	fake_command(TCMP_CMD_DONE, NULL, 0);
	CHECK_EQ_U(reply_status(TCMP_CMD_DONE), TCMP_ERR_BUSY);
	/* A longer body than v1.0 defines is accepted (minor versions append). */
	fake_command(TCMP_CMD_STATUS, start_body, 16);
	size_t n = fake_frames(frames, 4, NULL, 1);
	CHECK(n == 1 && frames[0].type == TCMP_FRAME_HEADER);

	fake_sample(0x60000000u, 0, 0);
	taken++;

	/* Bad CRC: a STATUS frame whose CRC bytes are wrong. */
	static const uint8_t bad_crc[] = {0x00, 0x06, 0x83, 0x8A, 0x94, 0xBE, 0x2F, 0x00};
	tcmp_rx(bad_crc, sizeof bad_crc);
	CHECK_EQ_U(reply_status(0), TCMP_ERR_MALFORMED);
	/* Not COBS: a code that runs past the segment. */
	static const uint8_t bad_cobs[] = {0x00, 0x09, 0x83, 0x01, 0x00};
	tcmp_rx(bad_cobs, sizeof bad_cobs);
	CHECK_EQ_U(reply_status(0), TCMP_ERR_MALFORMED);
	/* Shorter than type + CRC. */
	static const uint8_t too_short[] = {0x00, 0x04, 0x83, 0x01, 0x02, 0x00};
	tcmp_rx(too_short, sizeof too_short);
	CHECK_EQ_U(reply_status(0), TCMP_ERR_MALFORMED);
	/* Longer than any frame: one MALFORMED at its end, then the parser is
	 * in step again. */
	uint8_t longseg[1200];
	memset(longseg, 0x41, sizeof longseg);
	longseg[0] = 0;
	tcmp_rx(longseg, sizeof longseg);
	CHECK_EQ_U(port.out_len, 0);
	tcmp_rx_byte(0);
	CHECK_EQ_U(reply_status(0), TCMP_ERR_MALFORMED);
	/* Empty segments are ignored. */
	static const uint8_t zeros[4] = {0};
	tcmp_rx(zeros, sizeof zeros);
	CHECK_EQ_U(port.out_len, 0);
	/* Random garbage: only REPLY frames (or a HEADER for a lucky STATUS)
	 * come back; never a crash. */
	srand(3);
	for (int i = 0; i < 20000; i++) {
		uint8_t b = (uint8_t)(rand() % 8 == 0 ? 0 : rand());
		tcmp_rx_byte(b);
		if (i % 50 == 0) {
			fake_sample(0x60000000u, 0, 0);
			taken++;
		}
	}
	n = fake_frames(frames, 4096, NULL, 1);
	CHECK(n > 100);
	for (size_t f = 0; f < n; f++)
		CHECK(frames[f].type == TCMP_FRAME_REPLY || frames[f].type == TCMP_FRAME_HEADER);

	/* Sampling kept running through all of it. */
	fake_sample(0x60000000u, 0, 0);
	taken++;
	struct tcmp_status st = status();
	CHECK_EQ_U(st.state, TCMP_STATE_RUNNING);
	CHECK_EQ_U(st.taken, taken);
	CHECK_EQ_U(st.stored, taken);
	CHECK_EQ_U(port.timer_running, 1);
}

static void test_start_rejects_bad_args(void)
{
	fake_reset(NULL); /* timer 24 MHz, intervals >= 240 ticks (100 kHz) */
	struct {
		uint32_t rate;
		uint8_t jitter, fields, mode;
		uint32_t count, duration;
	} bad[] = {
		{10000, 25, 0, 0, 0, 0},                 /* no PC */
		{10000, 25, TCMP_FIELD_LR, 0, 0, 0},     /* no PC */
		{10000, 25, 0x21, 0, 0, 0},              /* unknown field */
		{10000, 25, 1, 2, 0, 0},                 /* unknown mode */
		{10000, 51, 1, 0, 0, 0},                 /* jitter above the maximum */
		{200000, 0, 1, 0, 0, 0},                 /* faster than the port allows */
		{80000, 25, 1, 0, 0, 0},                 /* 300 ticks - 25 % = 225 < 240 */
		{30000000, 0, 1, 0, 0, 0},               /* above the timer clock */
		{10000, 0, 1, 0, 0, 0x7FFFFFFF / 10000}, /* fine: not bad (control) */
		{100, 0, 1, 0, 0, 5},                    /* 5 ms at 100 Hz: < 1 sample */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int want = i == 8 ? TCMP_OK : TCMP_ERR_BAD_ARG;
		int got = start(bad[i].rate, bad[i].jitter, bad[i].fields, bad[i].mode, bad[i].count,
				bad[i].duration);
		if (got != want)
			fprintf(stderr, "bad-arg case %zu: got %d, want %d\n", i, got, want);
		CHECK_EQ_U(got, want);
		if (got == TCMP_OK) {
			tcmp_stop();
			fake_command(TCMP_CMD_DONE, NULL, 0);
			CHECK_EQ_U(reply_status(TCMP_CMD_DONE), TCMP_OK);
		} else {
			CHECK_EQ_U(status().state, TCMP_STATE_IDLE);
			CHECK_EQ_U(port.timer_running, 0);
		}
	}
	/* Rate 0 with a port that has no default. */
	struct tcmp_port_config cfg = fake_config;
	cfg.default_rate_hz = 0;
	fake_reset(&cfg);
	CHECK_EQ_U(start(0, 0, 1, 0, 0, 0), TCMP_ERR_BAD_ARG);
	/* A build-id longer than the protocol allows is cut to 32 bytes. */
	uint8_t id[40];
	for (int i = 0; i < 40; i++)
		id[i] = (uint8_t)(i + 1);
	cfg = fake_config;
	cfg.build_id = id;
	cfg.build_id_len = 40;
	fake_reset(&cfg);
	fake_command(TCMP_CMD_STATUS, NULL, 0);
	size_t n = fake_frames(frames, 2, NULL, 1);
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(frames[0].len, 1 + 44 + 32); /* 43 + n, then the stack words (1.1) */
	CHECK_EQ_U(frames[0].p[43], 32);
	CHECK_EQ_U(frames[0].p[1 + 43 + 32], 0);
}

static void test_duration_to_count(void)
{
	fake_reset(NULL);
	/* 1000 ms at 10 kHz = 10000 samples (stream: no capacity limit). */
	CHECK_EQ_U(start(10000, 25, TCMP_FIELD_PC, TCMP_MODE_STREAM, 0, 1000), TCMP_OK);
	for (int i = 0; i < 12000; i++) {
		fake_sample(0x60000000u, 0, 0);
		if (i % 100 == 0)
			tcmp_poll();
	}
	tcmp_poll();
	CHECK_EQ_U(status().taken, 10000);
	CHECK_EQ_U(status().state, TCMP_STATE_IDLE);
	/* 3 ms at 333 Hz = 0.999 -> floor would be 0: rejected above; 7 ms
	 * at 333 Hz = 2.331 -> 2 samples. */
	port.out_len = 0;
	CHECK_EQ_U(start(333, 0, TCMP_FIELD_PC, TCMP_MODE_SNAPSHOT, 0, 7), TCMP_OK);
	for (int i = 0; i < 5; i++)
		fake_sample(0x60000000u, 0, 0);
	CHECK_EQ_U(status().taken, 2);
}

/* ---- sizes ---- */

static void test_frames_never_exceed_512(void)
{
	/* Worst-case records: every field jumps by 2^31. */
	fake_reset(NULL);
	CHECK_EQ_U(start(10000, 0, FIELDS_4WORD, TCMP_MODE_STREAM, 5000, 0), TCMP_OK);
	size_t max_payload = 0, max_wire = 0, nframes = 0;
	for (uint32_t i = 0; i < 5000; i++) {
		port.current_thread = i % 2 ? 0x80000000u : 0;
		fake_sample(i % 2 ? 0xFFFFFFFEu : 0, i % 2 ? 0x80000001u : 1, 0x010001FFu);
		if (i % 700 == 0 || i == 4999) {
			tcmp_poll();
			size_t n = fake_frames(frames, 4096, NULL, 1);
			for (size_t f = 0; f < n; f++) {
				if (frames[f].len + 4 > max_payload)
					max_payload = frames[f].len + 4;
				if (frames[f].wire_len > max_wire)
					max_wire = frames[f].wire_len;
			}
			nframes += n;
		}
	}
	CHECK(nframes > 100);
	CHECK(max_payload <= TCMP_MAX_PAYLOAD);
	CHECK(max_payload > TCMP_MAX_PAYLOAD - TCMP_MAX_RECORD_BYTES); /* frames are filled */
	CHECK(max_wire <= TCMP_MAX_ENCODED);
}

/*
 * Bytes on the wire per PC sample for a realistic distribution (docs/core.md):
 * a firmware image whose code spans 40 KB of flash, 60 % of the time idle in
 * WFI (one PC), 30 % in eight hot loops of 16..64 bytes scattered over the
 * image, 10 % anywhere in the 40 KB. Samples are independent (the sampling
 * interval is far longer than a loop iteration). Counted: DATA frames of a
 * full drain, all framing included (0x00s, COBS, type, index, count, CRC).
 */
static double bytes_per_sample(int idle_pct, int hot_pct)
{
	fake_reset(NULL);
	CHECK_EQ_U(start(10000, 25, TCMP_FIELD_PC, TCMP_MODE_SNAPSHOT, 0, 0), TCMP_OK);
	const uint32_t base = 0x60002000u, span = 40u * 1024u, wfi = base + 0x1F32u;
	uint32_t loop_at[8], loop_len[8];
	srand(11);
	for (int l = 0; l < 8; l++) {
		loop_at[l] = base + ((uint32_t)rand() % (span - 64)) / 2 * 2;
		loop_len[l] = 16u + (uint32_t)rand() % 49u;
	}
	for (uint32_t i = 0; i < TCMP_BUFFER_WORDS; i++) {
		int roll = rand() % 100;
		uint32_t pc;
		if (roll < idle_pct) {
			pc = wfi;
		} else if (roll < idle_pct + hot_pct) {
			int l = rand() % 8;
			pc = loop_at[l] + ((uint32_t)rand() % loop_len[l]) / 2 * 2;
		} else {
			pc = base + ((uint32_t)rand() % span) / 2 * 2;
		}
		fake_sample(pc, 0, 0);
	}
	tcmp_poll();
	CHECK_EQ_U(drain(0, 0), TCMP_OK);
	size_t n = fake_frames(frames, 4096, NULL, 1);
	size_t data_bytes = 0;
	for (size_t f = 0; f < n; f++)
		if (frames[f].type == TCMP_FRAME_DATA)
			data_bytes += frames[f].wire_len + 1; /* + one 0x00 delimiter */
	return (double)data_bytes / TCMP_BUFFER_WORDS;
}

static void test_bytes_per_sample(void)
{
	double idle_heavy = bytes_per_sample(60, 30);
	double busy = bytes_per_sample(20, 60);
	double flat = bytes_per_sample(0, 0);
	printf("     bytes/PC sample: %.3f (60%% idle, 30%% hot loops, 10%% spread), "
	       "%.3f (20/60/20), %.3f (uniform over 40 KB)\n",
	       idle_heavy, busy, flat);
	CHECK(idle_heavy <= 2.5);
	CHECK(busy <= 2.5);
	/* Uniform over 40 KB = 20480 halfwords: |delta| < 8192 halfwords (a
	 * 2-byte varint after zigzag) with probability 1 - (1 - 8192/20480)^2
	 * = 0.64, else 3 bytes: 2.36 bytes, plus about 0.07 of framing. */
	CHECK(flat > 2.36 && flat < 2.5);
}

/* ---- local control while a frame waits for the host ---- */

/*
 * What another thread (a shell) sees and does while the transport's thread
 * waits in tcmp_port_write: the window a port opens when it releases its
 * core lock for the wait (zephyr/src/tcmprof_zephyr.c). Run from the fake
 * port's write hook; tcmp_port_write itself fails the test if any of these
 * sends.
 */
#define SHELL_ANY_STATE 0xFFu
static struct {
	uint32_t calls;
	uint8_t want_state; /* or SHELL_ANY_STATE */
	int stop; /* also call tcmp_stop */
} shell;

static void shell_during_write(void)
{
	shell.calls++;
	struct tcmp_status st = status();
	CHECK_EQ_U(st.sending, 1);
	if (shell.want_state != SHELL_ANY_STATE)
		CHECK_EQ_U(st.state, shell.want_state);
	struct tcmp_start_args a = {.rate_hz = 1000, .fields = TCMP_FIELD_PC};
	CHECK_EQ_U(tcmp_start(&a), TCMP_ERR_BUSY);
	CHECK_EQ_U(tcmp_done(), TCMP_ERR_BUSY);
	if (shell.stop)
		CHECK_EQ_U(tcmp_stop(), TCMP_OK);
}

static void test_drain_unchanged_by_local_control_while_sending(void)
{
	fake_reset(NULL);
	static const struct fake_thread t[2] = {{.id = 0x20001000u, .name = "main"}, {.id = 0x20002000u, .name = "idle"}};
	port.threads = t;
	port.nthreads = 2;
	const uint8_t all = TCMP_FIELD_PC | TCMP_FIELD_LR | TCMP_FIELD_EXC | TCMP_FIELD_THREAD;
	CHECK_EQ_U(start(10000, 25, all, TCMP_MODE_SNAPSHOT, 3000, 0), TCMP_OK);
	for (uint32_t i = 0; i < 3000; i++) {
		port.current_thread = t[i % 2].id;
		fake_sample(pc_of(i), pc_of(i + 1) | 1u, 0x01000000u | (i % 3 ? 0u : 16u + 9u));
	}
	tcmp_poll();
	CHECK_EQ_U(status().state, TCMP_STATE_HOLDING);
	CHECK_EQ_U(status().sending, 0);

	/* The same DRAIN undisturbed, then with a shell busy at every write. */
	CHECK_EQ_U(drain(0, 0), TCMP_OK);
	static uint8_t quiet[64 << 10];
	size_t quiet_len = port.out_len;
	CHECK(quiet_len <= sizeof quiet && quiet_len > 3000);
	memcpy(quiet, port.out, quiet_len < sizeof quiet ? quiet_len : sizeof quiet);
	port.out_len = 0;

	memset(&shell, 0, sizeof shell);
	shell.want_state = TCMP_STATE_HOLDING;
	shell.stop = 1; /* no run: harmless */
	port.during_write = shell_during_write;
	CHECK_EQ_U(drain(0, 0), TCMP_OK);
	port.during_write = NULL;
	size_t n = fake_frames(frames, 4096, NULL, 0);
	CHECK_EQ_U(shell.calls, n); /* one window per frame */
	CHECK(n > 10);
	CHECK_EQ_U(port.out_len, quiet_len);
	CHECK(memcmp(port.out, quiet, quiet_len) == 0);
	port.out_len = 0;

	/* Outside a write the shell's DONE works, as the host's does. */
	struct tcmp_status st = status();
	CHECK_EQ_U(st.sending, 0);
	CHECK_EQ_U(tcmp_done(), TCMP_OK);
	CHECK_EQ_U(status().state, TCMP_STATE_IDLE);
	CHECK_EQ_U(port.out_len, 0);
	CHECK_EQ_U(drain(0, 0), TCMP_ERR_UNAVAILABLE);
}

static void test_local_stop_of_a_stream_while_sending(void)
{
	const uint32_t total = 5000;
	got_pc = calloc(total, sizeof *got_pc);
	got_next = 0;
	fake_reset(NULL);
	CHECK_EQ_U(start(10000, 25, TCMP_FIELD_PC, TCMP_MODE_STREAM, 0, 0), TCMP_OK);
	for (uint32_t i = 0; i < 1000; i++)
		fake_sample(pc_of(i), 0, 0);

	/* The shell stops the run while the first DATA frame waits. */
	memset(&shell, 0, sizeof shell);
	shell.want_state = TCMP_STATE_RUNNING;
	shell.stop = 1;
	port.during_write = shell_during_write;
	tcmp_poll();
	port.during_write = NULL;
	CHECK(shell.calls >= 1);
	CHECK_EQ_U(port.timer_running, 0);
	/* Samples pending in the NVIC after the stop are ignored. */
	for (uint32_t i = 1000; i < 1010; i++)
		fake_sample(pc_of(i), 0, 0);
	size_t end_at, n;
	collect(TCMP_FIELD_PC, &end_at, &n);
	CHECK_EQ_U(end_at, SIZE_MAX); /* the END is the next poll's */
	CHECK_EQ_U(status().state, TCMP_STATE_RUNNING);

	/* The transport's thread sends the rest and END on its next poll. The
	 * state is IDLE while END goes out; START must still wait for it. */
	shell.want_state = SHELL_ANY_STATE;
	shell.stop = 0;
	port.during_write = shell_during_write;
	tcmp_poll();
	port.during_write = NULL;
	collect(TCMP_FIELD_PC, &end_at, &n);
	CHECK(end_at != SIZE_MAX);
	if (end_at != SIZE_MAX) {
		CHECK_EQ_U(frames[end_at].p[1], TCMP_END_STREAM_STOPPED);
		CHECK_EQ_U(le32(&frames[end_at].p[10]), 1000); /* taken */
		CHECK_EQ_U(le32(&frames[end_at].p[14]), 0);    /* dropped */
	}
	CHECK_EQ_U(got_next, 1000);
	for (uint32_t i = 0; i < got_next; i++)
		if (got_pc[i] != pc_of(i)) {
			CHECK_EQ_U(got_pc[i], pc_of(i));
			break;
		}
	CHECK_EQ_U(status().state, TCMP_STATE_IDLE);
	free(got_pc);
}

static void test_local_stop_and_done(void)
{
	fake_reset(NULL);
	struct tcmp_start_args a = {.rate_hz = 10000, .jitter_pct = 25, .fields = TCMP_FIELD_PC};
	CHECK_EQ_U(tcmp_start(&a), TCMP_OK);
	CHECK_EQ_U(tcmp_done(), TCMP_ERR_BUSY); /* running */
	for (uint32_t i = 0; i < 100; i++)
		fake_sample(pc_of(i), 0, 0);
	/* A snapshot is held at once, and nothing is sent. */
	CHECK_EQ_U(tcmp_stop(), TCMP_OK);
	CHECK_EQ_U(status().state, TCMP_STATE_HOLDING);
	CHECK_EQ_U(status().stored, 100);
	CHECK_EQ_U(port.timer_running, 0);
	CHECK_EQ_U(port.out_len, 0);
	CHECK_EQ_U(tcmp_start(&a), TCMP_ERR_BUSY); /* holding */
	CHECK_EQ_U(tcmp_done(), TCMP_OK);
	CHECK_EQ_U(status().state, TCMP_STATE_IDLE);
	CHECK_EQ_U(tcmp_done(), TCMP_OK); /* idle: again harmless */
	CHECK_EQ_U(tcmp_start(&a), TCMP_OK);
	CHECK_EQ_U(status().stored, 0);
}

/* ---- the build-id note ---- */

/* A note as ld --build-id=sha1 lays it out (binutils' ld/ldbuildid.c,
 * checked against readelf -n by zephyr/tests/itcm_check.sh). */
static size_t build_id_note(uint8_t *out, uint32_t namesz, uint32_t descsz, uint32_t type)
{
	memset(out, 0, 64);
	tcmp_put_u32(out, namesz);
	tcmp_put_u32(out + 4, descsz);
	tcmp_put_u32(out + 8, type);
	memcpy(out + 12, "GNU", 4);
	for (uint32_t i = 0; i < descsz && i < 40; i++)
		out[16 + i] = (uint8_t)(0xA0 + i);
	return 16 + descsz;
}

static void test_gnu_build_id_note(void)
{
	uint8_t note[64];
	uint8_t len = 99;
	size_t size = build_id_note(note, 4, 20, 3);
	const uint8_t *id = tcmp_gnu_build_id(note, size, &len);
	CHECK(id == note + 16);
	CHECK_EQ_U(len, 20);
	/* An md5 id (16 bytes) and a longer section (padding after the note). */
	size = build_id_note(note, 4, 16, 3);
	id = tcmp_gnu_build_id(note, size + 8, &len);
	CHECK(id == note + 16);
	CHECK_EQ_U(len, 16);

	/* Nothing linked in, cut short, another note type, oversized. */
	CHECK(tcmp_gnu_build_id(NULL, 0, &len) == NULL);
	CHECK_EQ_U(len, 0);
	size = build_id_note(note, 4, 20, 3);
	len = 99;
	CHECK(tcmp_gnu_build_id(note, 0, &len) == NULL);
	CHECK_EQ_U(len, 0);
	CHECK(tcmp_gnu_build_id(note, 11, &len) == NULL);
	CHECK(tcmp_gnu_build_id(note, size - 1, &len) == NULL);
	CHECK_EQ_U(len, 0);
	build_id_note(note, 4, 20, 1);
	CHECK(tcmp_gnu_build_id(note, size, &len) == NULL);
	build_id_note(note, 0xFFFFFFF0u, 20, 3); /* name size past the end */
	CHECK(tcmp_gnu_build_id(note, size, &len) == NULL);
	size = build_id_note(note, 4, TCMP_MAX_BUILD_ID + 4, 3);
	CHECK(tcmp_gnu_build_id(note, size, &len) == NULL);
	build_id_note(note, 4, 0, 3);
	CHECK(tcmp_gnu_build_id(note, 16, &len) == NULL);
	CHECK_EQ_U(len, 0);
}

const struct test_case sampler_tests[] = {
	{"sampler/jitter_bounds_and_mean", test_jitter_bounds_and_mean},
	{"sampler/timer_acked_on_every_interrupt", test_timer_acked_on_every_interrupt},
	{"sampler/snapshot_fill_hold_drain", test_snapshot_fill_hold_drain},
	{"sampler/snapshot_count_duration_stop", test_snapshot_count_duration_stop},
	{"sampler/stream_ring_wraps", test_stream_ring_wraps},
	{"sampler/stream_drops_are_counted", test_stream_drops_are_counted},
	{"sampler/stream_records_all_fields", test_stream_records_all_fields},
	{"sampler/two_word_layouts", test_two_word_layouts},
	{"sampler/malformed_commands_keep_sampling", test_malformed_commands_keep_sampling},
	{"sampler/start_rejects_bad_args", test_start_rejects_bad_args},
	{"sampler/duration_to_count", test_duration_to_count},
	{"sampler/frames_never_exceed_512", test_frames_never_exceed_512},
	{"sampler/bytes_per_sample", test_bytes_per_sample},
	{"sampler/drain_unchanged_by_local_control_while_sending",
	 test_drain_unchanged_by_local_control_while_sending},
	{"sampler/local_stop_of_a_stream_while_sending", test_local_stop_of_a_stream_while_sending},
	{"sampler/local_stop_and_done", test_local_stop_and_done},
	{"sampler/gnu_build_id_note", test_gnu_build_id_note},
	{NULL, NULL},
};
