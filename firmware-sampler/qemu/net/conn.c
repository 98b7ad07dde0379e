/* SPDX-License-Identifier: Apache-2.0 */
/* UDP connections and the socket calls the echo application uses. */
#include <string.h>

#include "net.h"

static struct net_socket sockets[NET_CONN_MAX];
static unsigned socket_count;
static struct k_mutex conn_lock;

void net_conn_init(void)
{
	k_mutex_init(&conn_lock);
	socket_count = 0;
}

struct net_socket *zsock_socket_udp(void)
{
	struct net_socket *s = NULL;
	k_mutex_lock(&conn_lock, K_FOREVER);
	if (socket_count < NET_CONN_MAX) {
		s = &sockets[socket_count++];
		memset(s, 0, sizeof(*s));
		k_fifo_init(&s->rx);
	}
	k_mutex_unlock(&conn_lock);
	return s;
}

int zsock_bind(struct net_socket *s, uint32_t addr, uint16_t port)
{
	k_mutex_lock(&conn_lock, K_FOREVER);
	s->local_addr = addr;
	s->local_port = port;
	s->bound = true;
	k_mutex_unlock(&conn_lock);
	return 0;
}

static bool conn_matches(const struct net_socket *s, const struct net_buf *buf)
{
	return s->bound && s->local_port == buf->dst_port &&
	       (s->local_addr == 0 || s->local_addr == buf->dst_addr);
}

int net_conn_input(struct net_if *iface, struct net_buf *buf)
{
	(void)iface;
	struct net_socket *target = NULL;
	k_mutex_lock(&conn_lock, K_FOREVER);
	for (unsigned i = 0; i < socket_count; i++) {
		if (conn_matches(&sockets[i], buf)) {
			target = &sockets[i];
			break;
		}
	}
	k_mutex_unlock(&conn_lock);
	if (target == NULL) {
		return -1;
	}
	net_buf_ref(buf);
	target->rx_queued++;
	k_fifo_put(&target->rx, buf);
	return 0;
}

int zsock_recvfrom(struct net_socket *s, void *data, size_t len, uint32_t *from_addr,
		   uint16_t *from_port, uint32_t timeout_ms)
{
	struct net_buf *buf = k_fifo_get(&s->rx, timeout_ms);
	if (buf == NULL) {
		return -1;
	}
	size_t n = buf->len < len ? buf->len : len;
	memcpy(data, net_buf_data(buf), n);
	if (from_addr != NULL) {
		*from_addr = buf->src_addr;
	}
	if (from_port != NULL) {
		*from_port = buf->src_port;
	}
	net_buf_unref(buf);
	return (int)n;
}

int zsock_sendto(struct net_socket *s, const void *data, size_t len, uint32_t to_addr,
		 uint16_t to_port)
{
	struct net_buf *buf = net_buf_alloc(K_FOREVER);
	if (len > NET_ETH_MTU - IPV4_HLEN - UDP_HLEN) {
		net_buf_unref(buf);
		return -1;
	}
	memcpy(net_buf_data(buf), data, len);
	buf->len = (uint16_t)len;
	int ret = net_udp_output(buf, s->local_addr, to_addr, s->local_port, to_port);
	/* The driver keeps its own reference while the frame is queued. */
	net_buf_unref(buf);
	return ret == 0 ? (int)len : -1;
}
