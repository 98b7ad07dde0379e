/* SPDX-License-Identifier: Apache-2.0 */
/* Test firmware for the linker package: near-miss section names, static
   duplicates, an archive member, existing ITCM code, and a boot path. */
#include "util.h"

int ip_input(int x);
int drv_poll(int x);
int fast(int x);
int plain_mix(int x);

__attribute__((noinline)) int foo(int x) { return x * 3 + 1; }
__attribute__((noinline)) int foobar(int x) { return foo(x) + 2; }
/* Looks like a GCC clone of foo to a careless regex. */
__attribute__((noinline, section(".text.foo.constprop.0"))) int foo_clone(int x) { return x + 7; }
/* A data section with the same stem. */
__attribute__((section(".rodata.foo"))) const int foo_table[4] = {1, 2, 3, 4};
/* Glob metacharacters in section names, with a near miss for '*'. */
__attribute__((noinline, section(".text.a*b"))) int star(int x) { return x + 11; }
__attribute__((noinline, section(".text.aXb"))) int not_star(int x) { return x + 12; }
__attribute__((noinline, section(".text.odd$name"))) int odd(int x) { return x + 13; }

__attribute__((noinline)) static int dup(int x) { return x ^ 0x55; }

/* A 6-byte function and a 16-byte aligned one: padding the model must predict. */
__attribute__((noinline)) int add3(int a, int b, int c) { return a + b + c; }
__attribute__((noinline, aligned(16))) int wide(int x) { return add3(x, x, 1) * 3; }

__attribute__((noinline)) int hot(int x)
{
	return dup(x) + foobar(x) + ip_input(x) + drv_poll(x) + util_hot(x) + fast(x) + foo_table[x & 3] + plain_mix(x);
}

__attribute__((noinline)) int warm(int x) { return hot(x) + foo_clone(x) + star(x) + not_star(x) + odd(x) + wide(x); }

__attribute__((noinline)) static int early_helper(int x) { return x * 9; }
__attribute__((noinline)) int early_init(void) { return early_helper(3) + util_cold(1); }

int main(void)
{
	int s = 0;
	for (int i = 0; i < 10; i++)
		s += warm(i);
	return s;
}

void Reset_Handler(void)
{
	early_init();
	main();
	for (;;)
		;
}
