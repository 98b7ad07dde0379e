/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The PIT timer hooks (src/tcmprof_pit.c) against the register model:
 * exact register sequences, and the intervals the model then produces.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "pit_model.h"
#include "tcmprof_pit.h"

#define MCR 0x000u
#define LDVAL0 0x100u
#define TCTRL0 0x108u
#define TFLG0 0x10Cu

struct expect {
	enum pit_op op;
	uint32_t offset, value;
};

static void check_log(unsigned from, const struct expect *want, unsigned n)
{
	CHECK(pit_model.log_len - from == n, "got %u accesses, want %u", pit_model.log_len - from, n);
	for (unsigned i = 0; i < n && from + i < pit_model.log_len; i++) {
		const struct pit_access *a = &pit_model.log[from + i];

		CHECK(a->op == want[i].op && a->offset == want[i].offset && a->value == want[i].value,
		      "access %u: got %s 0x%03x = 0x%x, want %s 0x%03x = 0x%x", i,
		      a->op == PIT_OP_WRITE ? "W" : "R", a->offset, a->value,
		      want[i].op == PIT_OP_WRITE ? "W" : "R", want[i].offset, want[i].value);
	}
}

static void powered_model(void)
{
	pit_model_reset();
	pit_model_clock_on();
}

static void test_model_faults_without_clock(void)
{
	/* The model must catch what the chip would bus-fault on. */
	pit_model_reset();
	tcmp_port_timer_start(100);
	CHECK(pit_model.faults > 0, "register writes with the clock gated were not caught");
}

static void test_start_sequence(void)
{
	powered_model();
	tcmp_port_timer_start(7500);
	const struct expect want[] = {
		{PIT_OP_WRITE, MCR, TCMP_PIT_MCR_FRZ},
		{PIT_OP_WRITE, TCTRL0, 0},
		{PIT_OP_WRITE, TFLG0, TCMP_PIT_TFLG_TIF},
		{PIT_OP_WRITE, LDVAL0, 7499},
		{PIT_OP_WRITE, TCTRL0, TCMP_PIT_TCTRL_TIE | TCMP_PIT_TCTRL_TEN},
	};
	check_log(0, want, sizeof(want) / sizeof(want[0]));
	CHECK(pit_model.faults == 0, "%u faults", pit_model.faults);
	CHECK(!(pit_model.mcr & TCMP_PIT_MCR_MDIS), "module still disabled");
	CHECK(pit_model_ticks_to_irq(10000) == 7500, "first interval is not 7500 ticks");
}

static void test_start_clears_stale_flag_and_restarts(void)
{
	/* A channel left running with a pending flag from an earlier run. */
	powered_model();
	tcmp_port_timer_start(50);
	CHECK(pit_model_ticks_to_irq(100) == 50, "first run did not fire");
	tcmp_port_timer_start(300);
	CHECK(!pit_model_irq(), "stale flag still requests an interrupt after start");
	CHECK(pit_model_ticks_to_irq(1000) == 300, "restart did not begin a fresh 300-tick period");
}

static void test_ack_next_sequence(void)
{
	powered_model();
	tcmp_port_timer_start(100);
	CHECK(pit_model_ticks_to_irq(1000) == 100, "no interrupt after 100 ticks");
	unsigned from = pit_model.log_len;
	tcmp_port_timer_ack_next(2500);
	const struct expect want[] = {
		{PIT_OP_WRITE, TFLG0, TCMP_PIT_TFLG_TIF},
		{PIT_OP_WRITE, LDVAL0, 2499},
		{PIT_OP_READ, TFLG0, 0}, /* read back after the clear: flag already 0 */
	};
	check_log(from, want, sizeof(want) / sizeof(want[0]));
	CHECK(!pit_model_irq(), "interrupt still requested after the acknowledge");
	CHECK(pit_model.faults == 0, "%u faults", pit_model.faults);
}

/*
 * The reload lag: a value given at interrupt k times interval k + 2, and
 * the first interval runs twice. Every requested interval is used once, in
 * order, so the mean over a run is exactly the mean requested.
 */
static void test_intervals_follow_requests_with_one_interval_lag(void)
{
	enum { N = 400 };
	uint32_t requested[N], observed[N];
	uint32_t lcg = 12345;
	uint64_t sum_requested = 0, sum_observed = 0;

	powered_model();
	tcmp_port_timer_start(1000);
	for (int k = 0; k < N; k++) {
		observed[k] = pit_model_ticks_to_irq(100000);
		lcg = lcg * 1103515245u + 12345u;
		requested[k] = 1 + (lcg >> 16) % 4000; /* 1 tick is the shortest period */
		tcmp_port_timer_ack_next(requested[k]);
	}
	CHECK(observed[0] == 1000 && observed[1] == 1000, "first two intervals %u, %u, want 1000, 1000",
	      observed[0], observed[1]);
	int mismatches = 0;
	for (int k = 2; k < N; k++) {
		if (observed[k] != requested[k - 2]) {
			mismatches++;
		}
		sum_observed += observed[k];
		sum_requested += requested[k - 2];
	}
	CHECK(mismatches == 0, "%d intervals differ from the value requested two interrupts earlier",
	      mismatches);
	CHECK(sum_observed == sum_requested, "total time %llu, want %llu",
	      (unsigned long long)sum_observed, (unsigned long long)sum_requested);
}

static void test_stop_sequence_and_silence(void)
{
	powered_model();
	tcmp_port_timer_start(40);
	CHECK(pit_model_ticks_to_irq(100) == 40, "no interrupt");
	/* Stop with the flag still set, as when the interrupt is pending. */
	unsigned from = pit_model.log_len;
	tcmp_port_timer_stop();
	const struct expect want[] = {
		{PIT_OP_WRITE, TCTRL0, 0},
		{PIT_OP_WRITE, TFLG0, TCMP_PIT_TFLG_TIF},
	};
	check_log(from, want, sizeof(want) / sizeof(want[0]));
	CHECK(!pit_model_irq(), "interrupt requested after stop");
	CHECK(pit_model_ticks_to_irq(10000) == 0, "interrupt after stop");
	/* A late acknowledge (an interrupt already pended in the NVIC) must not restart it. */
	tcmp_port_timer_ack_next(10);
	CHECK(pit_model_ticks_to_irq(10000) == 0, "a late acknowledge restarted the timer");
}

static void test_touches_only_mcr_and_channel0(void)
{
	powered_model();
	tcmp_port_timer_start(10);
	for (int k = 0; k < 5; k++) {
		pit_model_ticks_to_irq(100);
		tcmp_port_timer_ack_next(20);
	}
	tcmp_port_timer_stop();
	for (unsigned i = 0; i < pit_model.log_len; i++) {
		uint32_t off = pit_model.log[i].offset;

		CHECK(off == MCR || (off >= LDVAL0 && off <= TFLG0 && off != LDVAL0 + 4),
		      "access %u at 0x%03x: outside MCR and channel 0 (or CVAL)", i, off);
	}
	CHECK(pit_model.ch[0].tctrl == 0, "channel 0 left enabled");
	for (int c = 1; c < 4; c++) {
		CHECK(pit_model.ch[c].tctrl == 0, "channel %d enabled", c);
	}
}

static void test_longest_interval(void)
{
	/* The longest interval, 2^32 - 1 ticks, and the shortest, 1 tick. */
	powered_model();
	tcmp_port_timer_start(TCMP_PIT_MAX_INTERVAL_TICKS);
	CHECK(pit_model.ch[0].ldval == 0xFFFFFFFEu, "LDVAL 0x%x", pit_model.ch[0].ldval);
	tcmp_port_timer_ack_next(1);
	CHECK(pit_model.ch[0].ldval == 0, "a 1-tick interval gives LDVAL 0x%x", pit_model.ch[0].ldval);
}

int main(void)
{
	static const struct check_test tests[] = {
		{"model_faults_without_clock", test_model_faults_without_clock},
		{"start_sequence", test_start_sequence},
		{"start_clears_stale_flag_and_restarts", test_start_clears_stale_flag_and_restarts},
		{"ack_next_sequence", test_ack_next_sequence},
		{"intervals_follow_requests_with_one_interval_lag",
		 test_intervals_follow_requests_with_one_interval_lag},
		{"stop_sequence_and_silence", test_stop_sequence_and_silence},
		{"touches_only_mcr_and_channel0", test_touches_only_mcr_and_channel0},
		{"longest_interval", test_longest_interval},
	};
	return check_run("pit", tests, sizeof(tests) / sizeof(tests[0]));
}
