/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kernel heap (k_malloc/k_free): first fit over an address-ordered
 * free list, chunks with boundary tags so that a freed chunk merges with
 * both neighbours in constant time, under the interrupt lock (the network
 * stack allocates from its work queue thread and the echo thread alike).
 * Zephyr's sys_heap buckets its free lists; this one is smaller but does
 * the same splitting and coalescing on every allocation and free.
 */
#include <string.h>

#include "kernel.h"

#define HEAP_BYTES 8192u
#define UNIT 8u /* chunk granularity: headers and payloads stay 8-byte aligned */
#define USED 0x8000u

/* Header and footer of a chunk: its size in units, the top bit when used. */
struct chunk {
	uint16_t size_used;
	uint16_t prev_size; /* size of the chunk below, 0 for the first */
	uint16_t next_free, prev_free; /* unit offsets in the free list (free chunks only) */
};

static uint8_t heap_mem[HEAP_BYTES] __attribute__((aligned(UNIT)));
static uint16_t free_head; /* unit offset of the first free chunk, 0 = none */
static struct k_heap_stats stats;

#define NONE 0u
#define HEAP_UNITS (HEAP_BYTES / UNIT)

static struct chunk *chunk_at(uint16_t unit)
{
	return (struct chunk *)&heap_mem[(size_t)unit * UNIT];
}

static uint16_t unit_of(const struct chunk *c)
{
	return (uint16_t)(((const uint8_t *)c - heap_mem) / UNIT);
}

static uint16_t chunk_size(const struct chunk *c)
{
	return c->size_used & (uint16_t)~USED;
}

static bool chunk_used(const struct chunk *c)
{
	return (c->size_used & USED) != 0;
}

static void set_size(uint16_t unit, uint16_t size, bool used)
{
	struct chunk *c = chunk_at(unit);
	c->size_used = (uint16_t)(size | (used ? USED : 0u));
	uint16_t next = (uint16_t)(unit + size);
	if (next < HEAP_UNITS) {
		chunk_at(next)->prev_size = size;
	}
}

/* Keeps the free list in address order: first fit then prefers low memory. */
static void free_list_insert(uint16_t unit)
{
	struct chunk *c = chunk_at(unit);
	uint16_t prev = NONE, cur = free_head;
	while (cur != NONE && cur < unit) {
		prev = cur;
		cur = chunk_at(cur)->next_free;
	}
	c->prev_free = prev;
	c->next_free = cur;
	if (cur != NONE) {
		chunk_at(cur)->prev_free = unit;
	}
	if (prev != NONE) {
		chunk_at(prev)->next_free = unit;
	} else {
		free_head = unit;
	}
}

static void free_list_remove(uint16_t unit)
{
	struct chunk *c = chunk_at(unit);
	if (c->prev_free != NONE) {
		chunk_at(c->prev_free)->next_free = c->next_free;
	} else {
		free_head = c->next_free;
	}
	if (c->next_free != NONE) {
		chunk_at(c->next_free)->prev_free = c->prev_free;
	}
}

void k_heap_init(void)
{
	memset(&stats, 0, sizeof(stats));
	/* Unit 0 is a permanently used guard, so that offset 0 can mean "none". */
	chunk_at(0)->prev_size = 0;
	set_size(0, 1, true);
	set_size(1, HEAP_UNITS - 1, false);
	free_head = NONE;
	free_list_insert(1);
	stats.free_bytes = (HEAP_UNITS - 1) * UNIT;
}

void *k_malloc(size_t bytes)
{
	if (bytes == 0 || bytes > HEAP_BYTES) {
		return NULL;
	}
	uint16_t want = (uint16_t)((bytes + sizeof(struct chunk) + UNIT - 1) / UNIT);
	uint32_t key = irq_lock();
	uint16_t unit = free_head;
	unsigned scanned = 0;
	while (unit != NONE && chunk_size(chunk_at(unit)) < want) {
		unit = chunk_at(unit)->next_free;
		scanned++;
	}
	if (unit == NONE) {
		stats.failures++;
		irq_unlock(key);
		return NULL;
	}
	free_list_remove(unit);
	uint16_t have = chunk_size(chunk_at(unit));
	if ((unsigned)(have - want) >= 2u) {
		/* Split: the tail stays free. */
		set_size((uint16_t)(unit + want), (uint16_t)(have - want), false);
		free_list_insert((uint16_t)(unit + want));
		have = want;
	}
	set_size(unit, have, true);
	stats.allocs++;
	stats.free_bytes -= (uint32_t)have * UNIT;
	if (scanned > stats.max_scan) {
		stats.max_scan = scanned;
	}
	irq_unlock(key);
	return (uint8_t *)chunk_at(unit) + sizeof(struct chunk);
}

void k_free(void *p)
{
	if (p == NULL) {
		return;
	}
	struct chunk *c = (struct chunk *)((uint8_t *)p - sizeof(struct chunk));
	uint32_t key = irq_lock();
	uint16_t unit = unit_of(c);
	uint16_t size = chunk_size(c);
	stats.frees++;
	stats.free_bytes += (uint32_t)size * UNIT;
	/* Merge with the chunk above, then with the one below. */
	uint16_t above = (uint16_t)(unit + size);
	if (above < HEAP_UNITS && !chunk_used(chunk_at(above))) {
		free_list_remove(above);
		size = (uint16_t)(size + chunk_size(chunk_at(above)));
		stats.merges++;
	}
	if (c->prev_size != 0) {
		uint16_t below = (uint16_t)(unit - c->prev_size);
		if (!chunk_used(chunk_at(below))) {
			free_list_remove(below);
			size = (uint16_t)(size + chunk_size(chunk_at(below)));
			unit = below;
			stats.merges++;
		}
	}
	set_size(unit, size, false);
	free_list_insert(unit);
	irq_unlock(key);
}

void k_heap_get_stats(struct k_heap_stats *out)
{
	uint32_t key = irq_lock();
	*out = stats;
	irq_unlock(key);
}
