/* SPDX-License-Identifier: Apache-2.0 */
/* gamma.c: its object loses .debug_aranges, and the test renames the
 * DW_AT_ranges of its compile-unit DIE, so nothing but its subprograms and
 * line program says where its code is: readers must scan the unit. */
#include "common.h"

__attribute__((hot, noinline)) int32_t gamma_hot(int32_t x)
{
	return scale(x, 11) ^ clamp(x, -5, 5);
}

__attribute__((noinline)) int32_t gamma_plain(volatile int32_t *sink, int32_t x)
{
	int32_t v = clamp(x, 0, 50);
	for (int32_t i = 0; i < v; i++)
		*sink = scale(i, v);
	return v;
}
