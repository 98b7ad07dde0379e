/* SPDX-License-Identifier: Apache-2.0 */
/* beta.c: its object loses .debug_aranges before linking, so the unit is
 * found by its own DW_AT_ranges. Its code sits between alpha's parts. */
#include "common.h"

__attribute__((hot, noinline)) int32_t beta_hot(volatile int32_t *sink, int32_t x)
{
	int32_t v = scale(x, 9);
	if (__builtin_expect(v == -777, 0)) {
		report_fault(sink, v);
		v = clamp(v, 1, 2);
	}
	return v;
}

__attribute__((noinline)) int32_t beta_plain(int32_t x)
{
	return scale(x, -2) + clamp(x, 3, 30);
}

void report_fault(volatile int32_t *where, int32_t code)
{
	*where = code;
}
