/* SPDX-License-Identifier: Apache-2.0 */
/* Test firmware for lazy, per-unit DWARF: see alpha.c, beta.c, gamma.c.
 * Never run; only built and symbolized. */
#include "common.h"

int32_t alpha_fast(int32_t x);
int32_t alpha_hot(volatile int32_t *sink, int32_t n);
int32_t alpha_plain(int32_t x);
int32_t beta_hot(volatile int32_t *sink, int32_t x);
int32_t beta_plain(int32_t x);
int32_t gamma_hot(int32_t x);
int32_t gamma_plain(volatile int32_t *sink, int32_t x);

volatile int32_t sink;

void _start(void)
{
	int32_t x = 1;
	for (;;) {
		x = alpha_fast(x) + alpha_hot(&sink, x) + alpha_plain(x);
		x += beta_hot(&sink, x) + beta_plain(x);
		x += gamma_hot(x) + gamma_plain(&sink, x);
		sink = scale(x, 2);
	}
}
