/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CDC-ECM network function: Ethernet frames over the bulk endpoints of the
 * controller model. Received frames are copied into network buffers from
 * the controller interrupt and handed to the stack with net_recv_data().
 */
#include <string.h>

#include "drv.h"
#include "net.h"

#define ECM_RX_BUFS 4

static uint8_t rx_bufs[ECM_RX_BUFS][FRAME_MAX] __attribute__((aligned(32)));
static struct net_if *ecm_iface;

static void ecm_prime_rx(uint8_t *buf)
{
	if (ehci_ep_enqueue(EHCI_EP_OUT, buf, FRAME_MAX, NULL) != 0) {
		ecm_iface->stats.rx_dropped++;
	}
}

static void ecm_rx_complete(uint8_t *data, uint16_t actual)
{
	if (actual >= ETH_HLEN) {
		struct net_buf *buf = net_buf_alloc(K_NO_WAIT);
		if (buf != NULL) {
			buf->head = NET_BUF_HEADROOM;
			memcpy(net_buf_data(buf), data, actual);
			buf->len = actual;
			net_recv_data(ecm_iface, buf);
		} else {
			ecm_iface->stats.rx_dropped++;
		}
	}
	ecm_prime_rx(data);
}

static void ecm_transfer_complete(uint8_t ep, uint8_t *data, uint16_t actual, void *cookie)
{
	if (ep == EHCI_EP_OUT) {
		ecm_rx_complete(data, actual);
	} else {
		net_buf_unref(cookie);
	}
}

static int ecm_send(struct net_if *iface, struct net_buf *buf)
{
	net_buf_ref(buf);
	if (ehci_ep_enqueue(EHCI_EP_IN, net_buf_data(buf), buf->len, buf) != 0) {
		iface->stats.tx_dropped++;
		net_buf_unref(buf);
		return -1;
	}
	return 0;
}

void ecm_init(struct net_if *iface)
{
	ecm_iface = iface;
	iface->send = ecm_send;
	ehci_init(ecm_transfer_complete);
	for (unsigned i = 0; i < ECM_RX_BUFS; i++) {
		ecm_prime_rx(rx_bufs[i]);
	}
}
