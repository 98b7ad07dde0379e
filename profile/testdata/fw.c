/* SPDX-License-Identifier: Apache-2.0 */
/* Test firmware for package profile: an inline chain, leaf and non-leaf
 * functions, a tail call, code placed in ITCM, a WFI idle loop and a
 * function from a library archive (libnet.a, checksum.c) and a C++ template
 * member (dsp.cpp). It is never run:
 * the tests symbolize chosen addresses of the linked ELF. */
#include <stdint.h>

volatile uint32_t sink;
uint32_t buf[16];

uint32_t net_checksum(const uint32_t *p, int n);
int32_t dsp_step(int32_t x); /* dsp.cpp */

static inline uint32_t mix(uint32_t h, uint32_t v)
{
	return (h ^ v) * 0x01000193u;
}

static inline uint32_t hash_step(uint32_t h, uint32_t v)
{
	return mix(h, v) + (h >> 7);
}

__attribute__((noinline)) uint32_t hash_buf(const uint32_t *p, int n)
{
	uint32_t h = 2166136261u;
	for (int i = 0; i < n; i++)
		h = hash_step(h, p[i]);
	return h;
}

__attribute__((noinline)) uint32_t leaf_add(uint32_t a, uint32_t b)
{
	return a + b * 3u;
}

__attribute__((noinline)) uint32_t nonleaf(uint32_t x)
{
	uint32_t a = leaf_add(x, 1);
	sink = a;
	uint32_t b = leaf_add(a, 2);
	return a ^ b;
}

__attribute__((noinline)) uint32_t tail(uint32_t x)
{
	return leaf_add(x, sink);
}

__attribute__((noinline, section(".itcm_text"))) uint32_t fast_scale(uint32_t x)
{
	return x * 5u + (x >> 3);
}

/* Non-leaf code in ITCM: main reaches it, and it reaches leaf_add, through
 * linker veneers. */
__attribute__((noinline, section(".itcm_text"))) uint32_t itcm_outer(uint32_t x)
{
	uint32_t a = leaf_add(x, 7);
	sink = a;
	return a + leaf_add(a, 9);
}

__attribute__((noinline, noreturn)) void idle_loop(void)
{
	for (;;)
		__asm volatile("wfi");
}

int main(void)
{
	for (int i = 0; i < 1000; i++) {
		sink = hash_buf(buf, 16);
		sink = nonleaf(sink);
		sink = tail(sink);
		sink = fast_scale(sink);
		sink = itcm_outer(sink);
		sink = net_checksum(buf, 16);
		sink = (uint32_t)dsp_step((int32_t)sink);
	}
	idle_loop();
}

__attribute__((noreturn)) void _start(void)
{
	main();
	for (;;)
		;
}
