/* SPDX-License-Identifier: Apache-2.0 */
/* Archive libalpha.a, member alpha_math.o: plain flash code called from
 * main and from the ITCM function (so ld needs a veneer ITCM -> flash). */
#include <stdint.h>

uint32_t alpha_mix(uint32_t a, uint32_t b)
{
	a ^= b * 0x9e3779b9u;
	return (a << 7) | (a >> 25);
}

uint32_t alpha_sum(const uint32_t *v, int n)
{
	uint32_t s = 0;
	for (int i = 0; i < n; i++)
		s = alpha_mix(s, v[i]);
	return s;
}

/* Never referenced: --gc-sections drops it, so the map file lists it under
 * "Discarded input sections". */
uint32_t alpha_unused(uint32_t x)
{
	return x * 3u + 1u;
}
