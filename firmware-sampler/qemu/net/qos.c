/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Ingress QoS: the DSCP of each received datagram picks one of eight
 * traffic classes (RFC 4594's service classes), and each class meters its
 * traffic with a token bucket refilled from the uptime. Datagrams above
 * their class's rate are counted as exceeding and marked ECN-CE, not
 * dropped, so that the echo still answers everything.
 */
#include "net.h"

#define QOS_CLASSES 8

struct qos_bucket {
	uint32_t rate;  /* bytes per ms */
	uint32_t burst; /* bytes */
	uint32_t tokens;
	uint32_t last_tick;
	uint32_t conform, exceed;
};

/* DSCP (6 bits) -> class: CS0 best effort, AFx1-3 by x, EF voice, CS6/7 control. */
static uint8_t dscp_class(uint8_t dscp)
{
	if (dscp == 46) {
		return 7; /* EF */
	}
	if (dscp >= 48) {
		return 6; /* CS6, CS7: network control */
	}
	if ((dscp & 7u) == 0) {
		return (uint8_t)(dscp >> 3); /* class selectors CS0..CS5 */
	}
	if ((dscp & 1u) == 0 && (dscp >> 3) >= 1 && (dscp >> 3) <= 4) {
		return (uint8_t)(dscp >> 3); /* AF11..AF43 share their class selector's class */
	}
	return 0;
}

static struct qos_bucket buckets[QOS_CLASSES] = {
	{.rate = 64, .burst = 4096},   {.rate = 32, .burst = 2048}, {.rate = 48, .burst = 2048},
	{.rate = 96, .burst = 4096},   {.rate = 128, .burst = 8192}, {.rate = 16, .burst = 1024},
	{.rate = 8, .burst = 512},     {.rate = 256, .burst = 8192},
};

static bool bucket_take(struct qos_bucket *b, uint32_t bytes, uint32_t now)
{
	uint32_t elapsed = now - b->last_tick;
	b->last_tick = now;
	uint64_t tokens = (uint64_t)b->tokens + (uint64_t)elapsed * b->rate;
	b->tokens = tokens > b->burst ? b->burst : (uint32_t)tokens;
	if (b->tokens >= bytes) {
		b->tokens -= bytes;
		b->conform++;
		return true;
	}
	b->exceed++;
	return false;
}

uint8_t net_qos_ingress(struct ipv4_hdr *hdr, uint16_t bytes)
{
	uint8_t dscp = hdr->tos >> 2;
	uint8_t cls = dscp_class(dscp);
	uint32_t key = irq_lock();
	bool ok = bucket_take(&buckets[cls], bytes, k_uptime_ticks());
	irq_unlock(key);
	if (!ok && (hdr->tos & 3u) != 0) {
		/* ECN-capable: mark congestion experienced instead of dropping. */
		hdr->tos |= 3u;
	}
	return cls;
}
