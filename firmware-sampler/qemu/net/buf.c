/* SPDX-License-Identifier: Apache-2.0 */
/* Fixed pool of network buffers with headroom for the lower layers' headers. */
#include <string.h>

#include "net.h"

#define NET_BUF_COUNT 24

static struct net_buf pool[NET_BUF_COUNT];
static struct k_fifo free_bufs;
static unsigned free_count;

void net_buf_pool_init(void)
{
	k_fifo_init(&free_bufs);
	for (unsigned i = 0; i < NET_BUF_COUNT; i++) {
		k_fifo_put(&free_bufs, &pool[i]);
	}
	free_count = NET_BUF_COUNT;
}

void net_buf_reset(struct net_buf *buf)
{
	buf->head = NET_BUF_HEADROOM;
	buf->len = 0;
	buf->ip_hlen = 0;
	buf->src_port = buf->dst_port = 0;
	buf->src_addr = buf->dst_addr = 0;
	buf->iface = NULL;
}

struct net_buf *net_buf_alloc(uint32_t timeout_ms)
{
	struct net_buf *buf = k_fifo_get(&free_bufs, timeout_ms);
	if (buf == NULL) {
		return NULL;
	}
	uint32_t key = irq_lock();
	free_count--;
	irq_unlock(key);
	net_buf_reset(buf);
	buf->refcount = 1;
	return buf;
}

struct net_buf *net_buf_ref(struct net_buf *buf)
{
	uint32_t key = irq_lock();
	buf->refcount++;
	irq_unlock(key);
	return buf;
}

void net_buf_unref(struct net_buf *buf)
{
	uint32_t key = irq_lock();
	bool last = --buf->refcount == 0;
	if (last) {
		free_count++;
	}
	irq_unlock(key);
	if (last) {
		k_fifo_put(&free_bufs, buf);
	}
}

unsigned net_buf_pool_free(void)
{
	return free_count;
}

uint8_t *net_buf_data(struct net_buf *buf)
{
	return &buf->data[buf->head];
}

void *net_buf_pull(struct net_buf *buf, uint16_t len)
{
	if (len > buf->len) {
		return NULL;
	}
	void *p = &buf->data[buf->head];
	buf->head += len;
	buf->len -= len;
	return p;
}

void *net_buf_push(struct net_buf *buf, uint16_t len)
{
	if (len > buf->head) {
		return NULL;
	}
	buf->head -= len;
	buf->len += len;
	return &buf->data[buf->head];
}
