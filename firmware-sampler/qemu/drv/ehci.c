/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An "EHCI-like" USB device controller model. The device side queues
 * transfer descriptors (qTDs) on per-endpoint queue heads; the "hardware"
 * (ehci_hw_process, run by whoever plays the bus) moves frames between the
 * bus rings and the active qTDs and raises the controller interrupt; the
 * interrupt handler retires completed qTDs and calls the class driver.
 */
#include <string.h>

#include "cmsdk.h"
#include "drv.h"
#include "kernel.h"
#include "port.h"

#define QTD_COUNT 32
#define QTD_ACTIVE 0x80u
#define QTD_HALTED 0x40u
#define QTD_IOC 0x8000u
#define USBSTS_USBINT 0x1u
#define USBSTS_ERR 0x2u
#define EP_COUNT 3

struct ehci_qtd {
	struct ehci_qtd *next;
	uint32_t token;
	uint8_t *buf;
	uint16_t len, actual;
	void *cookie;
};

struct ehci_qh {
	struct ehci_qtd *first, *last;
	uint32_t completed;
};

static struct ehci_qtd td_pool[QTD_COUNT];
static struct ehci_qtd *td_free;
static struct ehci_qh qhs[EP_COUNT];
static volatile uint32_t usbsts;
static ehci_complete_t complete_cb;
static struct ehci_stats stats;

/* The bus: frames in flight between the host model and the controller. */
static struct dma_ring bus_out, bus_in;
static uint8_t bus_out_bufs[DMA_RING_SIZE][FRAME_MAX + 4];
static uint8_t bus_in_bufs[DMA_RING_SIZE][FRAME_MAX + 4];

static struct ehci_qtd *td_alloc(void)
{
	struct ehci_qtd *td = td_free;
	if (td != NULL) {
		td_free = td->next;
		memset(td, 0, sizeof(*td));
	}
	return td;
}

static void td_release(struct ehci_qtd *td)
{
	td->next = td_free;
	td_free = td;
}

void ehci_init(ehci_complete_t complete)
{
	td_free = NULL;
	for (unsigned i = 0; i < QTD_COUNT; i++) {
		td_release(&td_pool[i]);
	}
	memset(qhs, 0, sizeof(qhs));
	dma_ring_init(&bus_out);
	dma_ring_init(&bus_in);
	complete_cb = complete;
	usbsts = 0;
	nvic_enable(EHCI_IRQn, 0x60u);
}

static void qh_append(struct ehci_qh *qh, struct ehci_qtd *td)
{
	if (qh->last != NULL) {
		qh->last->next = td;
	} else {
		qh->first = td;
	}
	qh->last = td;
}

int ehci_ep_enqueue(uint8_t ep, uint8_t *data, uint16_t len, void *cookie)
{
	if (ep >= EP_COUNT || ep == 0) {
		return -1;
	}
	uint32_t key = irq_lock();
	struct ehci_qtd *td = td_alloc();
	if (td == NULL) {
		irq_unlock(key);
		return -1;
	}
	td->buf = data;
	td->len = len;
	td->cookie = cookie;
	td->token = QTD_ACTIVE | QTD_IOC;
	qh_append(&qhs[ep], td);
	irq_unlock(key);
	return 0;
}

TESTBENCH static struct ehci_qtd *first_active(struct ehci_qh *qh)
{
	for (struct ehci_qtd *td = qh->first; td != NULL; td = td->next) {
		if (td->token & QTD_ACTIVE) {
			return td;
		}
	}
	return NULL;
}

TESTBENCH static void raise_irq(uint32_t status)
{
	usbsts |= status;
	NVIC_ISPR(EHCI_IRQn >> 5) = 1u << (EHCI_IRQn & 31);
}

/* Bus -> device: one received frame into the next active OUT qTD. */
TESTBENCH static bool hw_move_out(void)
{
	struct ehci_qtd *td = first_active(&qhs[EHCI_EP_OUT]);
	struct dma_desc *d = dma_ring_peek(&bus_out);
	if (td == NULL || d == NULL) {
		return false;
	}
	if (!frame_check_fcs(d->addr, d->len)) {
		td->token = (td->token & ~QTD_ACTIVE) | QTD_HALTED;
		stats.td_errors++;
	} else {
		td->actual = (uint16_t)frame_copy(td->buf, td->len, d->addr, d->len - 4u);
		td->token &= ~QTD_ACTIVE;
	}
	struct dma_desc done;
	dma_ring_pop(&bus_out, &done);
	return true;
}

/* Device -> bus: the next active IN qTD onto the bus towards the host. */
TESTBENCH static bool hw_move_in(void)
{
	struct ehci_qtd *td = first_active(&qhs[EHCI_EP_IN]);
	if (td == NULL) {
		return false;
	}
	if (dma_ring_space(&bus_in) == 0) {
		stats.bus_overruns++;
		return false;
	}
	uint8_t *slot = bus_in_bufs[bus_in.head % DMA_RING_SIZE];
	size_t n = frame_copy(slot, FRAME_MAX, td->buf, td->len);
	n = frame_append_fcs(slot, n);
	dma_ring_push(&bus_in, slot, (uint16_t)n, NULL);
	td->actual = (uint16_t)(n - 4u);
	td->token &= ~QTD_ACTIVE;
	return true;
}

TESTBENCH void ehci_hw_process(void)
{
	bool moved = false;
	uint32_t key = irq_lock();
	while (hw_move_out()) {
		moved = true;
	}
	while (hw_move_in()) {
		moved = true;
	}
	if (moved) {
		raise_irq(USBSTS_USBINT);
	}
	irq_unlock(key);
}

TESTBENCH int ehci_host_send_out(const uint8_t *frame, size_t len)
{
	if (len > FRAME_MAX) {
		return -1;
	}
	uint32_t key = irq_lock();
	if (dma_ring_space(&bus_out) == 0) {
		irq_unlock(key);
		stats.bus_overruns++;
		return -1;
	}
	uint8_t *slot = bus_out_bufs[bus_out.head % DMA_RING_SIZE];
	size_t n = frame_copy(slot, FRAME_MAX, frame, len);
	n = frame_append_fcs(slot, n);
	dma_ring_push(&bus_out, slot, (uint16_t)n, NULL);
	irq_unlock(key);
	return 0;
}

TESTBENCH int ehci_host_recv_in(uint8_t *frame, size_t size)
{
	struct dma_desc d;
	uint32_t key = irq_lock();
	bool got = dma_ring_pop(&bus_in, &d);
	irq_unlock(key);
	if (!got) {
		return -1;
	}
	if (!frame_check_fcs(d.addr, d.len)) {
		return -1;
	}
	return (int)frame_copy(frame, size, d.addr, d.len - 4u);
}

/* Retires the finished qTDs at the head of a queue head, in order. */
static void qh_retire(uint8_t ep)
{
	struct ehci_qh *qh = &qhs[ep];
	while (qh->first != NULL && !(qh->first->token & QTD_ACTIVE)) {
		struct ehci_qtd *td = qh->first;
		qh->first = td->next;
		if (qh->first == NULL) {
			qh->last = NULL;
		}
		bool ok = !(td->token & QTD_HALTED);
		uint8_t *buf = td->buf;
		uint16_t actual = ok ? td->actual : 0;
		void *cookie = td->cookie;
		td_release(td);
		qh->completed++;
		if (ep == EHCI_EP_OUT) {
			stats.out_done++;
		} else {
			stats.in_done++;
		}
		complete_cb(ep, buf, actual, cookie);
	}
}

void EHCI_IRQHandler(void)
{
	uint32_t status = usbsts;
	usbsts = 0;
	stats.irqs++;
	if (status & (USBSTS_USBINT | USBSTS_ERR)) {
		for (uint8_t ep = 1; ep < EP_COUNT; ep++) {
			qh_retire(ep);
		}
	}
}

void ehci_get_stats(struct ehci_stats *out)
{
	uint32_t key = irq_lock();
	*out = stats;
	irq_unlock(key);
}
