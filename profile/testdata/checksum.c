/* SPDX-License-Identifier: Apache-2.0 */
/* The "library" function of the test firmware, linked from libnet.a so the
 * map file attributes it to that archive. */
#include <stdint.h>

uint32_t net_checksum(const uint32_t *p, int n)
{
	uint32_t s = 0;
	for (int i = 0; i < n; i++)
		s += p[i] >> 16 | p[i] << 16;
	return s;
}
