/* SPDX-License-Identifier: Apache-2.0 */
/* Archive libbeta.a, member beta.o: calls through a function pointer
 * (BLX Rm) and into newlib (memcpy, strlen). */
#include <stdint.h>
#include <string.h>

typedef uint32_t (*beta_op)(uint32_t);

static uint32_t beta_double(uint32_t x) { return x * 2u; }
static uint32_t beta_square(uint32_t x) { return x * x; }

beta_op beta_ops[2] = { beta_double, beta_square };

uint32_t beta_apply(int which, uint32_t x)
{
	return beta_ops[which & 1](x) + 1u;
}

size_t beta_copy(char *dst, const char *src)
{
	size_t n = strlen(src);
	memcpy(dst, src, n + 1);
	return n;
}
