/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The UDP echo workload. An echo server thread answers datagrams on port 7
 * through the socket calls: it accounts the telemetry records each request
 * carries (app/telemetry.c), assembles the reply in a buffer from the
 * kernel heap and sends it back. A "usb_host" thread plays the PC on the
 * other end of the USB cable (testbench code, port.h): it sends requests
 * through the controller model, runs the bus and checks the replies, in
 * bursts with short sleeps so that the profile also has idle time. Its
 * requests vary as a real peer's do: 64 source ports, some with IPv4
 * options, several DSCP classes, and a mix of record types in which a few
 * are common and most are rare.
 *
 * Every request's payload also goes through net_checksum_hot(), whose
 * round count is calibrated at start so that it takes a known share
 * (HOT_PERCENT) of the busy time: the sampler accuracy tests check it.
 *
 * WORKLOAD=bulk (Makefile) adds a second workload to the same image, which
 * the testbench chooses before reset (bench_switch = 1): bulk transfer, one
 * flow of BULK_PAYLOAD-byte datagrams of data (no IP options, the bulk
 * DSCP class) that the server passes block by block through a codec (the
 * aliasing groups of app/workloads/alias.S) before it echoes them.
 */
#include <string.h>

#include "app.h"
#include "drv.h"
#include "kernel.h"
#include "net.h"
#include "cmsdk.h"
#include "port.h"

#define BURST 4
#define CALIBRATION_ECHOES 64
/* Busy share the host model aims at: it sleeps one tick after enough bursts. */
#define BUSY_PERCENT 75u
/* Share of the busy time net_checksum_hot is calibrated to take. */
#define HOT_PERCENT 15u
#define TICK_TIMER_TICKS (SYSCLK_HZ / 1000u)
/* Bulk transfer's datagrams: their first byte says so; the codec runs per block. */
#define BULK_MAGIC 0xB1
#define BULK_PAYLOAD 512u
#define BULK_BLOCK 256u
#define BULK_DSCP 8 /* CS1, low-priority data */
/* The largest request frame: Ethernet, IPv4 with 40 bytes of options, UDP, payload. */
#define REQUEST_MAX (ETH_HLEN + IPV4_HLEN + 40 + UDP_HLEN + BULK_PAYLOAD)

static const uint8_t host_mac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
static const uint8_t dev_mac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
#define DEV_ADDR htonl(0xC0000201u)  /* 192.0.2.1 */
#define HOST_ADDR htonl(0xC0000202u) /* 192.0.2.2 */

static struct k_thread echo_thread, host_thread;
static uint8_t echo_stack[2048] __attribute__((aligned(8)));
static uint8_t host_stack[2048] __attribute__((aligned(8)));
static struct echo_stats stats;
static volatile uint32_t hot_rounds;
static uint32_t bursts_per_sleep = 1;
static uint32_t payload_digest;
/* What the host sends: ECHO_PAYLOAD-byte telemetry, or bulk data (WORKLOAD=bulk). */
static bool host_bulk;
static size_t host_payload = ECHO_PAYLOAD;

#ifdef ECHO_WORKLOAD_BULK
/* The testbench's workload switch (Makefile BENCH_SWITCH): 1 for bulk transfer. */
extern volatile const uint32_t bench_switch;

static bool is_bulk(const uint8_t *data, size_t len)
{
	return len != 0 && data[0] == BULK_MAGIC;
}

/* Runs a bulk datagram's blocks through the codec. */
static void bulk_decode(const uint8_t *data, size_t len)
{
	for (size_t at = 0; at < len; at += BULK_BLOCK) {
		workload_alias(payload_digest ^ data[at]);
	}
}
#else
static bool is_bulk(const uint8_t *data, size_t len)
{
	return false;
}
#endif

static void echo_main(void *arg)
{
	(void)arg;
	struct net_socket *s = zsock_socket_udp();
	zsock_bind(s, 0, ECHO_PORT);
	uint8_t data[NET_ETH_MTU];
	for (;;) {
		uint32_t from;
		uint16_t port;
		int n = zsock_recvfrom(s, data, sizeof(data), &from, &port, K_FOREVER);
		if (n < 0) {
			continue;
		}
		bool bulk = is_bulk(data, (size_t)n);
		if (!bulk && telemetry_account(data, (size_t)n) != 0) {
			stats.flagged++;
		}
		payload_digest ^= net_checksum_hot(data, (size_t)n, hot_rounds);
#ifdef ECHO_WORKLOAD_BULK
		if (bulk) {
			bulk_decode(data, (size_t)n);
		}
#endif
#ifdef ECHO_WORKLOAD_ALIAS
		workload_alias(payload_digest);
#endif
#ifdef ECHO_WORKLOAD_LOOPS
		workload_loops(payload_digest);
#endif
		uint8_t *reply = k_malloc((size_t)n);
		if (reply == NULL) {
			stats.no_memory++;
			continue;
		}
		memcpy(reply, data, (size_t)n);
		zsock_sendto(s, reply, (size_t)n, from, port);
		k_free(reply);
	}
}

/* The host's pseudo-random numbers (xorshift32): the same run every time. */
TESTBENCH static uint32_t host_random(void)
{
	static uint32_t state = 0x2545F491u;
	state ^= state << 13;
	state ^= state >> 17;
	state ^= state << 5;
	return state;
}

/*
 * A record type: the product of two uniform draws, so that the low types
 * are common and the high ones rare (about as skewed as the message mix
 * of a real sensor network).
 */
TESTBENCH static uint8_t pick_record_type(void)
{
	uint32_t r = host_random();
	return (uint8_t)(((r & 0xFFFFu) % TELEMETRY_TYPES) * ((r >> 16) % TELEMETRY_TYPES) /
			 (TELEMETRY_TYPES - 1u));
}

/* IPv4 options some requests carry: router alert, timestamp, record route. */
TESTBENCH static size_t add_ip_options(uint8_t *opt, uint32_t seq)
{
	size_t n = 0;
	if (seq % 3u == 0) {
		opt[n++] = 148; /* router alert */
		opt[n++] = 4;
		opt[n++] = 0;
		opt[n++] = 0;
	}
	if (seq % 5u == 0) {
		opt[n++] = 68; /* timestamp, room for two */
		opt[n++] = 12;
		opt[n++] = 5;
		opt[n++] = 0;
		memset(&opt[n], 0, 8);
		n += 8;
	}
	if (seq % 7u == 0) {
		uint32_t host = HOST_ADDR;
		opt[n++] = 7; /* record route, one hop recorded, room for one more */
		opt[n++] = 11;
		opt[n++] = 8;
		memcpy(&opt[n], &host, 4);
		memset(&opt[n + 4], 0, 4);
		n += 8;
	}
	while (n % 4u != 0) {
		opt[n++] = 1; /* NOP to the 32-bit boundary */
	}
	return n;
}

/* Builds the Ethernet/IPv4/UDP request the PC would send; *payload_at: where its payload starts. */
TESTBENCH static size_t build_request(uint8_t *frame, uint32_t seq, size_t *payload_at)
{
	static const uint8_t dscps[] = {0, 0, 0, 10, 18, 26, 34, 46, 48, 8};
	struct eth_hdr *eth = (struct eth_hdr *)frame;
	struct ipv4_hdr *ip = (struct ipv4_hdr *)(frame + ETH_HLEN);
	size_t ip_hlen = IPV4_HLEN + (host_bulk ? 0 : add_ip_options(frame + ETH_HLEN + IPV4_HLEN, seq));
	struct udp_hdr *udp = (struct udp_hdr *)(frame + ETH_HLEN + ip_hlen);
	uint8_t *payload = frame + ETH_HLEN + ip_hlen + UDP_HLEN;

	memcpy(eth->dst, dev_mac, 6);
	memcpy(eth->src, host_mac, 6);
	eth->type = htons(ETH_P_IP);
	if (host_bulk) {
		payload[0] = BULK_MAGIC;
		for (unsigned i = 1; i < BULK_PAYLOAD; i++) {
			payload[i] = (uint8_t)host_random();
		}
	} else {
		payload[0] = TELEMETRY_MAGIC;
		payload[1] = TELEMETRY_VERSION;
		payload[2] = ECHO_RECORDS;
		payload[3] = (uint8_t)seq;
		for (unsigned r = 0; r < ECHO_RECORDS; r++) {
			uint8_t *rec = payload + TELEMETRY_HEADER + r * TELEMETRY_RECORD;
			rec[0] = pick_record_type();
			for (unsigned i = 1; i < TELEMETRY_RECORD; i++) {
				rec[i] = (uint8_t)host_random();
			}
		}
	}
	udp->src_port = htons(host_bulk ? 40000u : 40000u + (seq % 64u));
	udp->dst_port = htons(ECHO_PORT);
	udp->len = htons(UDP_HLEN + host_payload);
	udp->chksum = 0;
	udp->chksum = htons(net_calc_chksum_udp(HOST_ADDR, DEV_ADDR, udp, UDP_HLEN + host_payload));
	ip->vhl = (uint8_t)(0x40u | ip_hlen / 4u);
	ip->tos = (uint8_t)((host_bulk ? BULK_DSCP : dscps[seq % sizeof(dscps)]) << 2 | (seq & 1u));
	ip->len = htons(ip_hlen + UDP_HLEN + host_payload);
	ip->id = htons((uint16_t)seq);
	ip->offset = 0;
	ip->ttl = 64;
	ip->proto = IP_PROTO_UDP;
	ip->chksum = 0;
	ip->src = HOST_ADDR;
	ip->dst = DEV_ADDR;
	ip->chksum = htons(net_calc_chksum_ipv4(ip));
	*payload_at = ETH_HLEN + ip_hlen + UDP_HLEN;
	return *payload_at + host_payload;
}

TESTBENCH static bool reply_matches(const uint8_t *reply, int len, const uint8_t *request,
				    size_t request_payload_at)
{
	const size_t payload_at = ETH_HLEN + IPV4_HLEN + UDP_HLEN;
	if (len != (int)(payload_at + host_payload)) {
		return false;
	}
	const struct ipv4_hdr *ip = (const struct ipv4_hdr *)(reply + ETH_HLEN);
	return ip->src == DEV_ADDR && ip->dst == HOST_ADDR && net_calc_chksum_ipv4(ip) == 0 &&
	       memcmp(reply + payload_at, request + request_payload_at, host_payload) == 0;
}

/* Sends one burst and waits for its replies; returns how many came back right. */
TESTBENCH static unsigned run_burst(uint32_t *seq)
{
	static uint8_t requests[BURST][REQUEST_MAX];
	static size_t payload_at[BURST];
	static uint8_t reply[FRAME_MAX];
	for (unsigned i = 0; i < BURST; i++) {
		size_t len = build_request(requests[i], (*seq)++, &payload_at[i]);
		if (ehci_host_send_out(requests[i], len) == 0) {
			stats.sent++;
		}
	}
	unsigned got = 0;
	uint32_t deadline = k_uptime_ticks() + 100;
	while (got < BURST && (int32_t)(k_uptime_ticks() - deadline) < 0) {
		ehci_hw_process();
		int n = ehci_host_recv_in(reply, sizeof(reply));
		if (n < 0) {
			k_yield();
			continue;
		}
		if (reply_matches(reply, n, requests[got], payload_at[got])) {
			stats.echoed++;
		} else {
			stats.bad_replies++;
		}
		got++;
	}
	stats.lost += BURST - got;
	return got;
}

/*
 * Times echoes without the hot check, then the hot check alone, and picks
 * the round count that makes the check HOT_PERCENT of the two. Measuring
 * on the running system (QEMU's speed, -O level) keeps the share near
 * HOT_PERCENT everywhere.
 */
TESTBENCH static void calibrate(uint32_t *seq)
{
	hot_rounds = 0;
	run_burst(seq); /* warm up: QEMU translates the code on first use */
	uint32_t t0 = port_cycles();
	for (unsigned i = 0; i < CALIBRATION_ECHOES / BURST; i++) {
		run_burst(seq);
	}
	uint32_t echo_cycles = port_cycles() - t0;

	static uint8_t sample[BULK_PAYLOAD];
	memset(sample, 0x5A, host_payload);
	t0 = port_cycles();
	for (unsigned i = 0; i < CALIBRATION_ECHOES; i++) {
		payload_digest ^= net_checksum_hot(sample, host_payload, 8);
	}
	uint32_t hot_cycles_per_round = (port_cycles() - t0) / 8u;
	uint32_t hot_cycles = echo_cycles / (100u - HOT_PERCENT) * HOT_PERCENT;
	uint32_t rounds = hot_cycles_per_round == 0 ? 1 : hot_cycles / hot_cycles_per_round;
	hot_rounds = rounds == 0 ? 1 : rounds;
	/* With the hot check a burst takes 100 / (100 - HOT_PERCENT) times as long as measured. */
	uint32_t burst_ticks = (echo_cycles + hot_cycles) / (CALIBRATION_ECHOES / BURST);
	uint32_t busy_ticks = TICK_TIMER_TICKS * BUSY_PERCENT / (100u - BUSY_PERCENT);
	bursts_per_sleep = burst_ticks == 0 ? 1 : (busy_ticks + burst_ticks - 1) / burst_ticks;
	printk("echo: calibrated net_checksum_hot to %u rounds (echo %u, round %u timer ticks), "
	       "%u bursts per sleep\n",
	       (unsigned)hot_rounds, (unsigned)(echo_cycles / CALIBRATION_ECHOES),
	       (unsigned)(hot_cycles_per_round / CALIBRATION_ECHOES), (unsigned)bursts_per_sleep);
}

TESTBENCH static void host_main(void *arg)
{
	(void)arg;
#ifdef ECHO_WORKLOAD_BULK
	host_bulk = bench_switch == 1;
	host_payload = host_bulk ? BULK_PAYLOAD : ECHO_PAYLOAD;
	printk("echo: the host sends %s\n", host_bulk ? "bulk data" : "telemetry");
#endif
	uint32_t seq = 0;
	calibrate(&seq);
	for (;;) {
		for (unsigned i = 0; i < bursts_per_sleep; i++) {
			run_burst(&seq);
		}
		k_sleep_ms(1);
	}
}

static struct net_if ecm_if;

void echo_start(void)
{
	k_heap_init();
	net_buf_pool_init();
	net_conntrack_init();
	net_route_init();
	net_arp_init();
	net_conn_init();
	net_if_init(&ecm_if, dev_mac, NULL);
	net_if_register(&ecm_if);
	ecm_init(&ecm_if);
	net_if_ipv4_addr_add(&ecm_if, DEV_ADDR, htonl(0xFFFFFF00u));
	net_if_ipv4_addr_add(&ecm_if, htonl(0xC6336401u), htonl(0xFFFFFF00u)); /* 198.51.100.1 */
	net_if_ipv4_maddr_add(&ecm_if, htonl(0xE00000FBu));                 /* 224.0.0.251 */
	net_if_ipv4_set_gw(&ecm_if, htonl(0xC00002FEu));
	net_route_add(&ecm_if, htonl(0xC0000200u), 24, 0);
	net_route_add(&ecm_if, htonl(0xC6336400u), 24, 0);
	net_route_add(&ecm_if, htonl(0x0A000000u), 8, htonl(0xC00002FEu));
	net_route_add(&ecm_if, 0, 0, htonl(0xC00002FEu));
	net_arp_update(HOST_ADDR, host_mac);
	net_arp_update(htonl(0xC00002FEu), host_mac);
#ifdef ECHO_LAN9118
	echo_lan9118_start();
#endif
	net_rx_init();
	k_thread_create(&echo_thread, "udp_echo", echo_stack, sizeof(echo_stack), echo_main, NULL);
	k_thread_create(&host_thread, "usb_host", host_stack, sizeof(host_stack), host_main, NULL);
}

void echo_get_stats(struct echo_stats *out)
{
	*out = stats;
}
