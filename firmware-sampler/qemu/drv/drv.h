/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Drivers of the demo: descriptor rings, an "EHCI-like" USB device
 * controller model (queue heads, transfer descriptors, a completion
 * interrupt) and a CDC-ECM style network function on top of it, shaped
 * like the NXP EHCI driver path of the Teensy report.
 */
#ifndef QEMU_DRV_H
#define QEMU_DRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Descriptor ring of buffer pointers, single producer and single consumer. */
#define DMA_RING_SIZE 16 /* power of two */

struct dma_desc {
	uint8_t *addr;
	uint16_t len;
	uint16_t flags;
	void *cookie;
};

#define DMA_DESC_OWN 0x1u /* owned by the "hardware" */
#define DMA_DESC_DONE 0x2u
#define DMA_DESC_ERR 0x4u

struct dma_ring {
	struct dma_desc desc[DMA_RING_SIZE];
	uint32_t head, tail;
	uint32_t pushed, popped, overruns;
};

void dma_ring_init(struct dma_ring *r);
bool dma_ring_push(struct dma_ring *r, uint8_t *addr, uint16_t len, void *cookie);
bool dma_ring_pop(struct dma_ring *r, struct dma_desc *out);
struct dma_desc *dma_ring_peek(struct dma_ring *r);
unsigned dma_ring_used(const struct dma_ring *r);
unsigned dma_ring_space(const struct dma_ring *r);

/* Frames on the "wire" between the host model and the controller. */
#define FRAME_MAX 1536

size_t frame_copy(uint8_t *dst, size_t dst_size, const uint8_t *src, size_t len);
uint32_t frame_crc32(const uint8_t *data, size_t len);
bool frame_check_fcs(const uint8_t *frame, size_t len_with_fcs);
size_t frame_append_fcs(uint8_t *frame, size_t len);

/* EHCI-like controller model. */
#define EHCI_IRQn 31
#define EHCI_EP_OUT 1 /* bulk OUT: host -> device */
#define EHCI_EP_IN 2  /* bulk IN: device -> host */

typedef void (*ehci_complete_t)(uint8_t ep, uint8_t *data, uint16_t actual, void *cookie);

void ehci_init(ehci_complete_t complete);
/* Device side: hand a buffer to an endpoint's queue head. */
int ehci_ep_enqueue(uint8_t ep, uint8_t *data, uint16_t len, void *cookie);
/* Host side: put a frame on the bus towards the device / take one from it. */
int ehci_host_send_out(const uint8_t *frame, size_t len);
int ehci_host_recv_in(uint8_t *frame, size_t size);
/* Runs the "hardware": moves data between the bus and the queued transfers. */
void ehci_hw_process(void);
void EHCI_IRQHandler(void);

struct ehci_stats {
	uint32_t irqs, out_done, in_done, td_errors, bus_overruns;
};
void ehci_get_stats(struct ehci_stats *out);

/* CDC-ECM function: network interface over the two bulk endpoints. */
struct net_if;
void ecm_init(struct net_if *iface);
#endif
