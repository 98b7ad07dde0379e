/* SPDX-License-Identifier: Apache-2.0 */
/* UDP input and output. */
#include "net.h"

static __attribute__((noinline)) bool validate(const struct udp_hdr *hdr, size_t avail)
{
	if (avail < UDP_HLEN) {
		return false;
	}
	size_t len = ntohs(hdr->len);
	return len >= UDP_HLEN && len <= avail && hdr->dst_port != 0;
}

static __attribute__((noinline)) void update_stats(struct net_if *iface, bool rx)
{
	k_mutex_lock(&iface->lock, K_FOREVER);
	if (rx) {
		iface->stats.udp_rx++;
	} else {
		iface->stats.udp_tx++;
	}
	k_mutex_unlock(&iface->lock);
}

int net_udp_input(struct net_if *iface, struct net_buf *buf)
{
	const struct udp_hdr *hdr = (const struct udp_hdr *)net_buf_data(buf);
	if (!validate(hdr, buf->len)) {
		iface->stats.rx_dropped++;
		return -1;
	}
	size_t len = ntohs(hdr->len);
	if (hdr->chksum != 0 && net_calc_chksum_udp(buf->src_addr, buf->dst_addr, hdr, len) != 0xFFFFu) {
		iface->stats.udp_bad_chksum++;
		return -1;
	}
	update_stats(iface, true);
	buf->src_port = ntohs(hdr->src_port);
	buf->dst_port = ntohs(hdr->dst_port);
	struct ct_tuple flow = {buf->src_addr, buf->dst_addr, buf->src_port, buf->dst_port, IP_PROTO_UDP};
	net_conntrack(&flow, len, false);
	buf->len = (uint16_t)len;
	net_buf_pull(buf, UDP_HLEN);
	if (net_conn_input(iface, buf) != 0) {
		iface->stats.udp_no_conn++;
		return -1;
	}
	return 0;
}

int net_udp_output(struct net_buf *buf, uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport)
{
	struct net_if *iface = net_route_lookup(dst, NULL);
	if (iface == NULL) {
		return -1;
	}
	if (src == 0) {
		src = net_if_ipv4_select_src_addr(iface, dst);
	}
	struct udp_hdr *hdr = net_buf_push(buf, UDP_HLEN);
	if (hdr == NULL) {
		return -1;
	}
	hdr->src_port = htons(sport);
	hdr->dst_port = htons(dport);
	hdr->len = htons(buf->len);
	hdr->chksum = 0;
	hdr->chksum = htons(net_calc_chksum_udp(src, dst, hdr, buf->len));
	struct ct_tuple flow = {src, dst, sport, dport, IP_PROTO_UDP};
	/* A reply the tracker does not know (its flow timed out) still goes out. */
	net_conntrack(&flow, buf->len, true);
	update_stats(iface, false);
	return net_ipv4_output(buf, src, dst, IP_PROTO_UDP);
}
