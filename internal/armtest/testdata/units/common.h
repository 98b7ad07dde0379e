/* SPDX-License-Identifier: Apache-2.0 */
/* Static inline helpers every unit inlines, so that each has inline chains. */
#ifndef UNITS_COMMON_H
#define UNITS_COMMON_H
#include <stdint.h>

static inline int32_t clamp(int32_t v, int32_t lo, int32_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static inline int32_t scale(int32_t v, int32_t k)
{
	return clamp(v * k, -1000, 1000);
}

/* Defined in beta.c; cold, so it goes to .text.unlikely. */
__attribute__((cold, noinline)) void report_fault(volatile int32_t *where, int32_t code);

#endif
