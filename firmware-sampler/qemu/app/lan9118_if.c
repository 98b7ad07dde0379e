/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The echo's second interface, built with NIC=lan9118: the mps2-an500's
 * LAN9118 on QEMU's user-mode network. QEMU's slirp gives the guest
 * 10.0.2.15 (where hostfwd delivers) and answers as 10.0.2.2 for the host,
 * from the MAC address 52:55:0a:00:02:02 (slirp's prefix 52:55 and the
 * address). The demo's ARP cache is static and answers no requests, so the
 * interface announces itself once (gratuitous ARP, which slirp enters in
 * its table) and knows slirp's address statically.
 */
#include <string.h>

#include "app.h"
#include "kernel.h"
#include "lan9118.h"
#include "net.h"

#define GUEST_ADDR htonl(0x0A00020Fu) /* 10.0.2.15 */
#define SLIRP_HOST_ADDR htonl(0x0A000202u) /* 10.0.2.2 */
#define SLIRP_NET htonl(0x0A000200u)
#define ARP_HLEN 28

static const uint8_t slirp_host_mac[6] = {0x52, 0x55, 0x0A, 0x00, 0x02, 0x02};
static struct net_if eth_if;

/* ARP request for our own address (sender = target), sent to broadcast. */
static void announce(void)
{
	struct net_buf *buf = net_buf_alloc(K_NO_WAIT);
	if (buf == NULL) {
		return;
	}
	buf->head = NET_BUF_HEADROOM;
	uint8_t *f = net_buf_data(buf);
	uint32_t addr = GUEST_ADDR;
	memset(f, 0, ETH_HLEN + ARP_HLEN);
	memset(f, 0xFF, 6);
	memcpy(f + 6, eth_if.mac, 6);
	f[12] = ETH_P_ARP >> 8, f[13] = ETH_P_ARP & 0xFF;
	uint8_t *arp = f + ETH_HLEN;
	arp[1] = 1;                                   /* Ethernet */
	arp[2] = ETH_P_IP >> 8, arp[3] = ETH_P_IP & 0xFF;
	arp[4] = 6, arp[5] = 4, arp[7] = 1;           /* request */
	memcpy(arp + 8, eth_if.mac, 6);
	memcpy(arp + 14, &addr, 4);
	memcpy(arp + 24, &addr, 4);
	buf->len = ETH_HLEN + ARP_HLEN;
	eth_if.send(&eth_if, buf);
	net_buf_unref(buf);
}

void echo_lan9118_start(void)
{
	if (lan9118_init(&eth_if) != 0) {
		printk("lan9118: no controller\n");
		return;
	}
	net_if_register(&eth_if);
	net_if_ipv4_addr_add(&eth_if, GUEST_ADDR, htonl(0xFFFFFF00u));
	net_route_add(&eth_if, SLIRP_NET, 24, 0);
	net_arp_update(SLIRP_HOST_ADDR, slirp_host_mac);
	announce();
	printk("lan9118: up as 10.0.2.15, mac %x:%x:%x:%x:%x:%x, echo on UDP port %u\n", eth_if.mac[0],
	       eth_if.mac[1], eth_if.mac[2], eth_if.mac[3], eth_if.mac[4], eth_if.mac[5], ECHO_PORT);
}
