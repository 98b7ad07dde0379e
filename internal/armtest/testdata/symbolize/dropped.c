/* SPDX-License-Identifier: Apache-2.0 */
/* A unit whose every function --gc-sections removes: GNU ld resolves their
 * DWARF (ranges, line sequences, .debug_aranges, .debug_frame) to address
 * 0, on top of whatever the image really places at the ITCM origin. One is
 * named like the ITCM function there and several are larger than all the
 * ITCM code, so a symbolizer that believes them names the wrong function
 * anywhere in ITCM. */
#include <stdint.h>

static __attribute__((noinline)) uint32_t itcm_entry(uint32_t x)
{
	return x * 2654435761u + (x >> 11);
}

uint32_t dropped_small(uint32_t x)
{
	return itcm_entry(x) ^ 0x55u;
}

uint32_t dropped_large(const uint32_t *p, uint32_t n)
{
	uint32_t a = 1, b = 0;
	for (uint32_t i = 0; i < n; i++) {
		a = (a + p[i]) % 65521u;
		b = (b + a) % 65521u;
		if (p[i] & 1)
			a ^= b << 3;
		else
			b ^= a >> 2;
	}
	for (uint32_t i = n; i > 0; i--)
		a += p[i - 1] * i + (b >> (i & 7));
	return (b << 16) | (a & 0xffffu);
}

uint32_t dropped_switch(uint32_t x)
{
	switch (x & 15) {
	case 0: return x + 3;
	case 1: return x * 5;
	case 2: return x ^ 0x1234;
	case 3: return dropped_small(x);
	case 4: return x << 7;
	case 5: return x >> 3;
	case 6: return ~x;
	case 7: return x * x;
	case 8: return x - 99;
	case 9: return x | 0x80;
	default: return dropped_large(&x, 1);
	}
}
