/* SPDX-License-Identifier: Apache-2.0 */
/* Counting semaphores and the FIFOs built on them; give/put are interrupt-safe. */
#include "kernel.h"
#include "kernel_internal.h"

void k_sem_init(struct k_sem *s, uint32_t initial, uint32_t limit)
{
	s->count = initial;
	s->limit = limit;
}

void k_sem_give(struct k_sem *s)
{
	uint32_t key = irq_lock();
	if (s->count < s->limit) {
		s->count++;
	}
	irq_unlock(key);
	z_ready_waiters(s);
}

static bool sem_try_take(void *obj)
{
	struct k_sem *s = obj;
	if (s->count > 0) {
		s->count--;
		return true;
	}
	return false;
}

int k_sem_take(struct k_sem *s, uint32_t timeout_ms)
{
	return z_take_or_pend(s, sem_try_take, timeout_ms);
}

void k_fifo_init(struct k_fifo *f)
{
	f->head = f->tail = NULL;
	k_sem_init(&f->items, 0, UINT32_MAX);
}

void k_fifo_put(struct k_fifo *f, void *item)
{
	uint32_t key = irq_lock();
	*(void **)item = NULL;
	if (f->tail != NULL) {
		*(void **)f->tail = item;
	} else {
		f->head = item;
	}
	f->tail = item;
	irq_unlock(key);
	k_sem_give(&f->items);
}

void *k_fifo_get(struct k_fifo *f, uint32_t timeout_ms)
{
	if (k_sem_take(&f->items, timeout_ms) != 0) {
		return NULL;
	}
	uint32_t key = irq_lock();
	void *item = f->head;
	f->head = *(void **)item;
	if (f->head == NULL) {
		f->tail = NULL;
	}
	irq_unlock(key);
	return item;
}

/* Never called by the demo: removed by --gc-sections (see net_route_del). */
void k_sem_reset(struct k_sem *s)
{
	s->count = 0;
}

uint32_t k_sem_count_get(const struct k_sem *s)
{
	return s->count;
}
