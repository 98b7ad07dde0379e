/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Receive hand-off: drivers queue frames with net_recv_data() (from their
 * interrupt), and the "net_rx" work queue thread runs the stack on them,
 * as Zephyr's RX thread does.
 */
#include "net.h"

static struct k_work_q rx_queue;
static uint8_t rx_stack[2048] __attribute__((aligned(8)));
static struct k_fifo rx_frames;
static struct k_work rx_work;

static void rx_process(struct k_work *work)
{
	(void)work;
	struct net_buf *buf;
	while ((buf = k_fifo_get(&rx_frames, K_NO_WAIT)) != NULL) {
		net_eth_input(buf->iface, buf);
		net_buf_unref(buf);
	}
}

void net_rx_init(void)
{
	k_fifo_init(&rx_frames);
	k_work_init(&rx_work, rx_process);
	k_work_queue_start(&rx_queue, "net_rx", rx_stack, sizeof(rx_stack));
}

int net_recv_data(struct net_if *iface, struct net_buf *buf)
{
	buf->iface = iface;
	k_fifo_put(&rx_frames, buf);
	k_work_submit_to_queue(&rx_queue, &rx_work);
	return 0;
}
