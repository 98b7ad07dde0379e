/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Descriptor rings of the controller model's bus, between the host model
 * and the "hardware": testbench code (port.h).
 */
#include <string.h>

#include "drv.h"
#include "port.h"

TESTBENCH void dma_ring_init(struct dma_ring *r)
{
	memset(r, 0, sizeof(*r));
}

TESTBENCH unsigned dma_ring_used(const struct dma_ring *r)
{
	return r->head - r->tail;
}

TESTBENCH unsigned dma_ring_space(const struct dma_ring *r)
{
	return DMA_RING_SIZE - dma_ring_used(r);
}

TESTBENCH bool dma_ring_push(struct dma_ring *r, uint8_t *addr, uint16_t len, void *cookie)
{
	if (dma_ring_space(r) == 0) {
		r->overruns++;
		return false;
	}
	struct dma_desc *d = &r->desc[r->head % DMA_RING_SIZE];
	d->addr = addr;
	d->len = len;
	d->flags = DMA_DESC_OWN;
	d->cookie = cookie;
	__asm volatile("dmb" ::: "memory");
	r->head++;
	r->pushed++;
	return true;
}

TESTBENCH struct dma_desc *dma_ring_peek(struct dma_ring *r)
{
	if (dma_ring_used(r) == 0) {
		return NULL;
	}
	return &r->desc[r->tail % DMA_RING_SIZE];
}

TESTBENCH bool dma_ring_pop(struct dma_ring *r, struct dma_desc *out)
{
	struct dma_desc *d = dma_ring_peek(r);
	if (d == NULL) {
		return false;
	}
	*out = *d;
	d->flags = 0;
	__asm volatile("dmb" ::: "memory");
	r->tail++;
	r->popped++;
	return true;
}
