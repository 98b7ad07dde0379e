/* SPDX-License-Identifier: Apache-2.0 */
/* alpha.c: a unit whose code is in four places: ITCM (alpha_fast), the cold
 * section (alpha_cold), the hot one (alpha_hot) and plain .text
 * (alpha_plain), each separated from the next by other units' code (see
 * units.ld). Its compile-unit DIE has DW_AT_ranges, and its line program
 * one sequence per place. */
#include "common.h"

__attribute__((section(".itcm.alpha_fast"), noinline)) int32_t alpha_fast(int32_t x)
{
	return scale(x, 3) + 1;
}

__attribute__((cold, noinline)) int32_t alpha_cold(volatile int32_t *sink, int32_t x)
{
	report_fault(sink, x);
	return clamp(x * 7, 0, 99);
}

__attribute__((hot, noinline)) int32_t alpha_hot(volatile int32_t *sink, int32_t n)
{
	int32_t acc = 0;
	for (int32_t i = 0; i < n; i++) {
		acc += scale(i, n);
		if (__builtin_expect(acc == 12345, 0))
			acc = alpha_cold(sink, acc);
	}
	return acc;
}

__attribute__((noinline)) int32_t alpha_plain(int32_t x)
{
	return clamp(x * x, 0, 4096) - scale(x, 5);
}
