/* SPDX-License-Identifier: Apache-2.0 */
/* A second translation unit with a static function named like one in
 * main.c, so the symbolizer must keep the two apart, and ITCM code that
 * calls back into flash (GNU ld inserts long-branch veneers both ways). */
#include <stdint.h>
#include <string.h>

static __attribute__((noinline)) int helper(int x)
{
	return x ^ (x >> 5);
}

static inline uint32_t rotl(uint32_t v, unsigned n)
{
	return (v << n) | (v >> (32 - n));
}

uint32_t flash_leaf(uint32_t x)
{
	return rotl(x, 7) + (uint32_t)helper((int)x);
}

__attribute__((section(".itcm"), noinline)) uint32_t itcm_entry(uint32_t x)
{
	uint32_t acc = 0;
	for (unsigned i = 0; i < (x & 7) + 1; i++)
		acc += rotl(x + i, i + 1);
	return acc + flash_leaf(acc);
}

/* Never called: --gc-sections drops it, leaving DWARF that points at 0. */
uint32_t unused_function(uint32_t x)
{
	return rotl(x, 3) * 17 + 101 + (uint32_t)strlen((const char *)(uintptr_t)x);
}

uint32_t other_entry(uint32_t x)
{
	char s[16];
	memcpy(s, &x, sizeof x);
	s[4] = 0;
	return (uint32_t)helper((int)x) + (uint32_t)strlen(s) + itcm_entry(x >> 1);
}
