/* SPDX-License-Identifier: Apache-2.0 */
/* The smallest firmware with what the loader parses (FUNC symbols, a local
 * static, an inlined call, DWARF lines and inline tree, ITCM code and a
 * veneer): the seed of FuzzLoad in testdata/fuzz/FuzzLoad/tiny. */
static inline int twice(int x)
{
	return 2 * x;
}

static int __attribute__((noinline)) helper(int x)
{
	return twice(x) + 1;
}

__attribute__((section(".itcm"), noinline)) int fast(int x)
{
	return helper(x) * 3;
}

void _start(void)
{
	volatile int v = fast(helper(1));
	(void)v;
}
