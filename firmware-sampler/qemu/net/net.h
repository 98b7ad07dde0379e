/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small IPv4/UDP stack for the demo workload, shaped after the Zephyr
 * path a UDP echo takes (net_recv_data -> ethernet -> ipv4 -> udp -> conn ->
 * socket, and back), including the read-only address checks that lock the
 * interface.
 */
#ifndef QEMU_NET_H
#define QEMU_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel.h"

#define htons(x) __builtin_bswap16((uint16_t)(x))
#define ntohs(x) __builtin_bswap16((uint16_t)(x))
#define htonl(x) __builtin_bswap32((uint32_t)(x))
#define ntohl(x) __builtin_bswap32((uint32_t)(x))

#define NET_ETH_MTU 1500
#define NET_BUF_SIZE 1536
#define NET_BUF_HEADROOM 64
#define ETH_HLEN 14
#define ETH_P_IP 0x0800
#define ETH_P_ARP 0x0806
#define IP_PROTO_UDP 17
#define IPV4_HLEN 20
#define UDP_HLEN 8

struct net_if;

struct net_buf {
	void *fifo_link;
	struct net_if *iface;
	uint16_t head; /* offset of the first valid byte in data */
	uint16_t len;
	uint8_t refcount;
	uint8_t ip_hlen;
	uint16_t src_port, dst_port;
	uint32_t src_addr, dst_addr; /* network order */
	uint8_t data[NET_BUF_SIZE];
};

struct eth_hdr {
	uint8_t dst[6];
	uint8_t src[6];
	uint16_t type;
} __attribute__((packed));

struct ipv4_hdr {
	uint8_t vhl;
	uint8_t tos;
	uint16_t len;
	uint16_t id;
	uint16_t offset;
	uint8_t ttl;
	uint8_t proto;
	uint16_t chksum;
	uint32_t src;
	uint32_t dst;
} __attribute__((packed));

struct udp_hdr {
	uint16_t src_port;
	uint16_t dst_port;
	uint16_t len;
	uint16_t chksum;
} __attribute__((packed));

#define NET_IF_MAX_ADDR 4
#define NET_IF_MAX_MCAST 4

struct net_if_addr {
	uint32_t addr;    /* network order, 0 = unused */
	uint32_t netmask; /* network order */
	bool is_used;
};

struct net_if_stats {
	uint32_t rx_packets, tx_packets, rx_dropped, tx_dropped;
	uint32_t ipv4_rx, ipv4_tx, ipv4_bad_header, ipv4_bad_chksum, ipv4_not_for_us;
	uint32_t udp_rx, udp_tx, udp_bad_chksum, udp_no_conn;
	uint32_t filter_hits;
	uint32_t ipv4_options, ipv4_bad_options, router_alerts;
	uint32_t qos_class[8];
};

typedef int (*net_if_send_t)(struct net_if *iface, struct net_buf *buf);

struct net_if {
	struct k_mutex lock;
	uint8_t mac[6];
	uint16_t mtu;
	struct net_if_addr unicast[NET_IF_MAX_ADDR];
	uint32_t mcast[NET_IF_MAX_MCAST];
	uint32_t gateway;
	net_if_send_t send;
	struct net_if_stats stats;
	uint16_t ip_id;
};

/* Buffers. */
void net_buf_pool_init(void);
struct net_buf *net_buf_alloc(uint32_t timeout_ms);
void net_buf_unref(struct net_buf *buf);
struct net_buf *net_buf_ref(struct net_buf *buf);
uint8_t *net_buf_data(struct net_buf *buf);
void *net_buf_pull(struct net_buf *buf, uint16_t len);
void *net_buf_push(struct net_buf *buf, uint16_t len);
void net_buf_reset(struct net_buf *buf);
unsigned net_buf_pool_free(void);

/* Checksums (RFC 1071). */
uint32_t net_checksum_add(uint32_t sum, const uint8_t *data, size_t len);
uint16_t net_checksum_finish(uint32_t sum);
uint16_t net_calc_chksum_ipv4(const struct ipv4_hdr *hdr);
uint16_t net_calc_chksum_udp(uint32_t src, uint32_t dst, const struct udp_hdr *udp, size_t len);
/*
 * The deliberately expensive payload check of the demo: it is tuned at boot
 * to take about half of the busy time, so the sampler's accuracy can be
 * tested against a known share.
 */
uint32_t net_checksum_hot(const uint8_t *data, size_t len, unsigned rounds);

/* Interfaces and address checks (all lock the interface, like Zephyr's). */
void net_if_init(struct net_if *iface, const uint8_t mac[6], net_if_send_t send);
int net_if_ipv4_addr_add(struct net_if *iface, uint32_t addr, uint32_t netmask);
void net_if_ipv4_set_gw(struct net_if *iface, uint32_t gw);
int net_if_ipv4_maddr_add(struct net_if *iface, uint32_t addr);
bool net_ipv4_is_addr_bcast(struct net_if *iface, uint32_t addr);
bool net_ipv4_is_addr_mcast(uint32_t addr);
bool net_if_ipv4_is_addr_mcast_joined(struct net_if *iface, uint32_t addr);
struct net_if_addr *net_if_ipv4_addr_lookup(uint32_t addr, struct net_if **ret);
bool net_ipv4_is_my_addr(uint32_t addr);
uint32_t net_if_ipv4_select_src_addr(struct net_if *dst_iface, uint32_t dst);
bool net_ipv4_is_addr_onlink(struct net_if *iface, uint32_t addr);
void net_if_register(struct net_if *iface);

/* Routing. */
#define NET_ROUTE_MAX 16
void net_route_init(void);
int net_route_add(struct net_if *iface, uint32_t prefix, uint8_t prefix_len, uint32_t nexthop);
struct net_if *net_route_lookup(uint32_t dst, uint32_t *nexthop);
int net_route_del(uint32_t prefix, uint8_t prefix_len);
unsigned net_route_count(void);

/* ARP cache (static entries: the demo host never asks). */
void net_arp_init(void);
int net_arp_update(uint32_t addr, const uint8_t mac[6]);
const uint8_t *net_arp_lookup(uint32_t addr);

/* Layers. */
int net_recv_data(struct net_if *iface, struct net_buf *buf);
void net_rx_init(void);
int net_eth_input(struct net_if *iface, struct net_buf *buf);
int net_eth_output(struct net_if *iface, struct net_buf *buf, uint32_t nexthop);
int net_ipv4_input(struct net_if *iface, struct net_buf *buf);
int net_ipv4_output(struct net_buf *buf, uint32_t src, uint32_t dst, uint8_t proto);
int net_udp_input(struct net_if *iface, struct net_buf *buf);
int net_udp_output(struct net_buf *buf, uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport);

/* IPv4 options (net/ipv4_opt.c): what a received datagram carried. */
struct ipv4_opts {
	uint8_t count, unknown;
	uint8_t rr_hops, ts_entries, ts_overflow, security_level;
	bool rr_full, ts_room, router_alert;
	uint16_t ra_value;
};
/* 0, or -1 when an option is malformed (the datagram must be dropped). */
int net_ipv4_parse_options(const uint8_t *opts, unsigned len, struct ipv4_opts *out);

/* Ingress QoS (net/qos.c): meters the datagram in its DSCP's class; returns the class. */
uint8_t net_qos_ingress(struct ipv4_hdr *hdr, uint16_t bytes);

/* Packet filter rules (classification applied to every received packet). */
unsigned net_filter_run(const struct net_buf *buf, const struct ipv4_hdr *ip);

/* Connection tracking (net/conntrack.c). */
struct ct_tuple {
	uint32_t src, dst; /* network order */
	uint16_t sport, dport;
	uint8_t proto;
};
struct ct_stats {
	uint32_t lookups, created, established, expired, evicted, invalid;
};
void net_conntrack_init(void);
/* Accounts one packet of the flow; its state (1 new, 2 established) or -1. */
int net_conntrack(const struct ct_tuple *t, size_t bytes, bool outgoing);
void net_conntrack_get_stats(struct ct_stats *out);

/* Connections and a socket-like API. */
#define NET_CONN_MAX 4
struct net_socket {
	struct k_fifo rx;
	uint32_t local_addr;
	uint16_t local_port;
	bool bound;
	uint32_t rx_queued;
};

void net_conn_init(void);
int net_conn_input(struct net_if *iface, struct net_buf *buf);
struct net_socket *zsock_socket_udp(void);
int zsock_bind(struct net_socket *s, uint32_t addr, uint16_t port);
int zsock_recvfrom(struct net_socket *s, void *buf, size_t len, uint32_t *from_addr,
		   uint16_t *from_port, uint32_t timeout_ms);
int zsock_sendto(struct net_socket *s, const void *data, size_t len, uint32_t to_addr,
		 uint16_t to_port);

#endif
