/* SPDX-License-Identifier: Apache-2.0 */
/* Test firmware for the symbolizer: static inline chains, clones
 * (.constprop/.isra/.part), a static name that other.c reuses, calls into
 * newlib, and calls to and from ITCM code that GNU ld reaches through
 * long-branch veneers. Never run; only built and symbolized. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t other_entry(uint32_t x);
uint32_t cpp_entry(uint32_t x);
uint32_t itcm_entry(uint32_t x);

volatile uint32_t sink;

static inline uint32_t mix(uint32_t h, uint32_t v)
{
	h ^= v;
	h *= 0x01000193u;
	return h ^ (h >> 13);
}

static inline uint32_t hash_step(uint32_t h, const uint8_t *p)
{
	h = mix(h, p[0]);
	return mix(h, p[1]);
}

static inline uint32_t hash_pair(uint32_t h, const uint8_t *p)
{
	h = hash_step(h, p);
	return hash_step(h, p + 2);
}

/* Called with the same constant seed everywhere: GCC clones it (.constprop). */
static __attribute__((noinline)) uint32_t hash_buf(const uint8_t *p, size_t n, uint32_t seed)
{
	uint32_t h = seed;
	for (size_t i = 0; i + 4 <= n; i += 4)
		h = hash_pair(h, p + i);
	return h;
}

struct config {
	uint32_t scale;
	uint32_t unused[7];
};

/* Reads one field of a struct passed by pointer: GCC splits it (.isra). */
static __attribute__((noinline)) uint32_t scaled(const struct config *c, uint32_t v)
{
	return v * c->scale + (v >> 3);
}

/* A cheap early-out with an expensive tail: GCC inlines the head (.part). */
static uint32_t lookup_slow(uint32_t key)
{
	char buf[48];
	snprintf(buf, sizeof buf, "key=%lu", (unsigned long)key);
	return hash_buf((const uint8_t *)buf, strlen(buf), 2166136261u);
}

static uint32_t lookup(uint32_t key)
{
	if (key < 16)
		return key * 3;
	return lookup_slow(key) ^ key;
}

/* other.c has its own static helper with this name. */
static __attribute__((noinline)) int helper(int x)
{
	return x * 7 + 1;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

__attribute__((cold, noinline)) void fatal(const char *why)
{
	puts(why);
	abort();
}

uint32_t c_entry(uint32_t x)
{
	uint8_t buf[64];
	uint32_t arr[8];
	struct config cfg = {.scale = x | 1};
	memset(buf, (int)x, sizeof buf);
	uint32_t h = hash_buf(buf, sizeof buf, 2166136261u);
	h += hash_buf(buf + 4, 32, 2166136261u);
	for (int i = 0; i < 8; i++)
		arr[i] = mix(h, (uint32_t)i);
	qsort(arr, 8, sizeof arr[0], cmp_u32);
	h += scaled(&cfg, arr[3]) + scaled(&cfg, arr[5]);
	h += lookup(x) + lookup(x + 100);
	h += (uint32_t)helper((int)h);
	if (h == 0xdeadbeefu)
		fatal("unlucky");
	return h;
}

int main(void)
{
	uint32_t x = sink;
	x = c_entry(x);
	x += other_entry(x);
	x += cpp_entry(x);
	x += itcm_entry(x);
	printf("%lu\n", (unsigned long)x);
	sink = x;
	return 0;
}

void _start(void)
{
	exit(main());
}
