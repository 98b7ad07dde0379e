/* SPDX-License-Identifier: Apache-2.0 */
/* IPv4 input and output. */
#include <string.h>

#include "net.h"

#define IPV4_DEFAULT_TTL 64
#define IPV4_MORE_FRAGMENTS 0x2000u
#define IPV4_OFFSET_MASK 0x1FFFu

/* Header sanity before anything trusts the lengths. */
static __attribute__((noinline)) bool validate(const struct ipv4_hdr *hdr, size_t avail)
{
	if (avail < IPV4_HLEN || (hdr->vhl >> 4) != 4) {
		return false;
	}
	size_t hlen = (size_t)(hdr->vhl & 0x0Fu) * 4u;
	size_t total = ntohs(hdr->len);
	return hlen >= IPV4_HLEN && hlen <= total && total <= avail;
}

static __attribute__((noinline)) void update_stats(struct net_if *iface, bool rx)
{
	k_mutex_lock(&iface->lock, K_FOREVER);
	if (rx) {
		iface->stats.ipv4_rx++;
	} else {
		iface->stats.ipv4_tx++;
	}
	k_mutex_unlock(&iface->lock);
}

static bool is_fragment(const struct ipv4_hdr *hdr)
{
	uint16_t off = ntohs(hdr->offset);
	return (off & IPV4_MORE_FRAGMENTS) != 0 || (off & IPV4_OFFSET_MASK) != 0;
}

static bool addressed_to_us(struct net_if *iface, uint32_t dst)
{
	if (net_ipv4_is_my_addr(dst)) {
		return true;
	}
	if (net_ipv4_is_addr_bcast(iface, dst)) {
		return true;
	}
	return net_ipv4_is_addr_mcast(dst) && net_if_ipv4_is_addr_mcast_joined(iface, dst);
}

int net_ipv4_input(struct net_if *iface, struct net_buf *buf)
{
	const struct ipv4_hdr *hdr = (const struct ipv4_hdr *)net_buf_data(buf);
	if (!validate(hdr, buf->len)) {
		iface->stats.ipv4_bad_header++;
		return -1;
	}
	if (net_calc_chksum_ipv4(hdr) != 0) {
		iface->stats.ipv4_bad_chksum++;
		return -1;
	}
	if (is_fragment(hdr) || hdr->ttl == 0) {
		iface->stats.ipv4_bad_header++;
		return -1;
	}
	if (!addressed_to_us(iface, hdr->dst)) {
		iface->stats.ipv4_not_for_us++;
		return -1;
	}
	/* Source checks as a router-aware stack does: no broadcast or multicast sources. */
	if (net_ipv4_is_addr_bcast(iface, hdr->src) || net_ipv4_is_addr_mcast(hdr->src)) {
		iface->stats.ipv4_bad_header++;
		return -1;
	}
	buf->ip_hlen = (uint8_t)((hdr->vhl & 0x0Fu) * 4u);
	if (buf->ip_hlen > IPV4_HLEN) {
		struct ipv4_opts opts;
		if (net_ipv4_parse_options((const uint8_t *)hdr + IPV4_HLEN, buf->ip_hlen - IPV4_HLEN,
					   &opts) != 0) {
			iface->stats.ipv4_bad_options++;
			return -1;
		}
		iface->stats.ipv4_options++;
		if (opts.router_alert) {
			iface->stats.router_alerts++;
		}
	}
	update_stats(iface, true);
	iface->stats.qos_class[net_qos_ingress((struct ipv4_hdr *)hdr, ntohs(hdr->len))]++;
	iface->stats.filter_hits += net_filter_run(buf, hdr);
	buf->src_addr = hdr->src;
	buf->dst_addr = hdr->dst;
	buf->len = ntohs(hdr->len);
	net_buf_pull(buf, buf->ip_hlen);
	switch (hdr->proto) {
	case IP_PROTO_UDP:
		return net_udp_input(iface, buf);
	default:
		return -1;
	}
}

static void fill_header(struct ipv4_hdr *hdr, struct net_if *iface, uint32_t src, uint32_t dst,
			uint8_t proto, uint16_t total_len)
{
	hdr->vhl = 0x45;
	hdr->tos = 0;
	hdr->len = htons(total_len);
	hdr->id = htons(iface->ip_id++);
	hdr->offset = 0;
	hdr->ttl = IPV4_DEFAULT_TTL;
	hdr->proto = proto;
	hdr->chksum = 0;
	hdr->src = src;
	hdr->dst = dst;
	hdr->chksum = htons(net_calc_chksum_ipv4(hdr));
}

int net_ipv4_output(struct net_buf *buf, uint32_t src, uint32_t dst, uint8_t proto)
{
	uint32_t nexthop = dst;
	struct net_if *iface = net_route_lookup(dst, &nexthop);
	if (iface == NULL) {
		return -1;
	}
	if (net_ipv4_is_addr_onlink(iface, dst)) {
		nexthop = dst;
	}
	if (src == 0) {
		src = net_if_ipv4_select_src_addr(iface, dst);
	}
	struct ipv4_hdr *hdr = net_buf_push(buf, IPV4_HLEN);
	if (hdr == NULL || buf->len > iface->mtu) {
		iface->stats.tx_dropped++;
		return -1;
	}
	fill_header(hdr, iface, src, dst, proto, buf->len);
	update_stats(iface, false);
	return net_eth_output(iface, buf, nexthop);
}
