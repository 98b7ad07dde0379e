/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A firmware for imageinput.Read's rules: a function in a vector-table
 * section, one whose name merely contains "vector", sampler code, two
 * functions sharing one input section, a 16-byte aligned function, a
 * function in ITCM, and calls between them (BL and a tail call).
 */
#include <stdint.h>

volatile uint32_t sink;

__attribute__((noinline)) uint32_t vector_add(uint32_t a, uint32_t b) { return a + b + sink; }

__attribute__((noinline, section(".exc_vector_table"))) void vector_table_stub(void) { sink = 1; }

__attribute__((noinline)) void tcmp_sample(void) { sink = 2; }

__attribute__((noinline, section(".ramfunc"))) uint32_t shared_a(uint32_t x) { return x * 3 + sink; }
__attribute__((noinline, section(".ramfunc"))) uint32_t shared_b(uint32_t x) { return x * 5 + sink; }

__attribute__((noinline, aligned(16))) uint32_t aligned16(uint32_t x) { return x ^ sink; }

__attribute__((noinline, section(".itcm_text"))) uint32_t fast(uint32_t x) { return vector_add(x, 1); }

__attribute__((noinline)) uint32_t tail(uint32_t x) { return aligned16(x + sink); }

void Reset_Handler(void)
{
	vector_table_stub();
	tcmp_sample();
	for (;;) {
		sink = fast(sink) + shared_a(sink) + shared_b(sink) + tail(sink);
	}
}
