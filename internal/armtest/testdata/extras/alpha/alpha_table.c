/* SPDX-License-Identifier: Apache-2.0 */
/* Archive libalpha.a, member alpha_table.o: a function with a name long
 * enough that GNU ld wraps its input-section line in the map file. */
#include <stdint.h>
#include <string.h>

static uint32_t table[16];

void alpha_table_fill_with_a_rather_long_function_name(uint32_t seed)
{
	for (int i = 0; i < 16; i++)
		table[i] = seed + (uint32_t)i;
	memset(&table[8], 0, 4 * sizeof table[0]);
}

uint32_t alpha_table_get(int i)
{
	return table[i & 15];
}
