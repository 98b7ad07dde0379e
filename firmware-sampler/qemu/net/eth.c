/* SPDX-License-Identifier: Apache-2.0 */
/* Ethernet framing (what CDC-ECM carries over USB). */
#include <string.h>

#include "net.h"

static const uint8_t broadcast_mac[6] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};

static bool mac_equal(const uint8_t *a, const uint8_t *b)
{
	return memcmp(a, b, 6) == 0;
}

/* A frame is ours when it is unicast to the interface, broadcast or an IPv4 multicast MAC. */
static __attribute__((noinline)) bool validate(const struct net_if *iface, const struct eth_hdr *hdr)
{
	if (mac_equal(hdr->dst, iface->mac) || mac_equal(hdr->dst, broadcast_mac)) {
		return true;
	}
	return hdr->dst[0] == 0x01 && hdr->dst[1] == 0x00 && hdr->dst[2] == 0x5E;
}

int net_eth_input(struct net_if *iface, struct net_buf *buf)
{
	if (buf->len < ETH_HLEN) {
		iface->stats.rx_dropped++;
		return -1;
	}
	const struct eth_hdr *hdr = net_buf_pull(buf, ETH_HLEN);
	if (!validate(iface, hdr)) {
		iface->stats.rx_dropped++;
		return -1;
	}
	iface->stats.rx_packets++;
	switch (ntohs(hdr->type)) {
	case ETH_P_IP:
		return net_ipv4_input(iface, buf);
	case ETH_P_ARP:
		/* The demo's peer is in the static cache; nothing to answer. */
		return -1;
	default:
		iface->stats.rx_dropped++;
		return -1;
	}
}

int net_eth_output(struct net_if *iface, struct net_buf *buf, uint32_t nexthop)
{
	const uint8_t *dst_mac;
	if (net_ipv4_is_addr_bcast(iface, nexthop)) {
		dst_mac = broadcast_mac;
	} else {
		dst_mac = net_arp_lookup(nexthop);
	}
	if (dst_mac == NULL) {
		iface->stats.tx_dropped++;
		return -1;
	}
	struct eth_hdr *hdr = net_buf_push(buf, ETH_HLEN);
	if (hdr == NULL) {
		iface->stats.tx_dropped++;
		return -1;
	}
	memcpy(hdr->dst, dst_mac, 6);
	memcpy(hdr->src, iface->mac, 6);
	hdr->type = htons(ETH_P_IP);
	iface->stats.tx_packets++;
	return iface->send(iface, buf);
}
