/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Connection tracking for UDP flows: a hash table of flows keyed by the
 * 5-tuple, each with per-direction counters, a state (NEW until the reply
 * goes out, then ESTABLISHED) and an idle timer that the tick expires.
 * Every received datagram looks its flow up (or creates it, evicting the
 * least recently used flow when the table is full) and every reply finds
 * it again with the tuple reversed, as a stateful firewall does.
 */
#include <string.h>

#include "net.h"

#define CT_BUCKETS 32u /* power of two */
#define CT_FLOWS 80u
#define CT_TIMEOUT_NEW_MS 5000u
#define CT_TIMEOUT_EST_MS 30000u

enum ct_state { CT_FREE, CT_NEW, CT_ESTABLISHED };

struct ct_flow {
	struct ct_flow *next; /* bucket chain */
	struct ct_tuple tuple; /* as first seen (original direction) */
	uint8_t state;
	uint32_t packets[2], bytes[2];
	uint32_t last_seen;
	struct k_timer idle;
};

static struct ct_flow flows[CT_FLOWS];
static struct ct_flow *buckets[CT_BUCKETS];
static struct ct_stats stats;
static struct log_source ct_log = {.name = "conntrack", .level = LOG_LEVEL_INF};

static uint32_t rol32(uint32_t v, unsigned s)
{
	return (v << s) | (v >> (32u - s));
}

/*
 * Bob Jenkins' final mix (lookup3) over the tuple's three words: seven
 * rounds, each folding one word into the next with its own rotation.
 */
static uint32_t tuple_hash(const struct ct_tuple *t)
{
	static const uint8_t rot[] = {14, 11, 25, 16, 4, 14, 24};
	uint32_t v[3] = {t->src, t->dst, ((uint32_t)t->sport << 16 | t->dport) ^ t->proto};
	for (unsigned i = 0; i < sizeof(rot); i++) {
		uint32_t from = v[(1u + i) % 3u];
		uint32_t *into = &v[(2u + i) % 3u];
		*into ^= from;
		*into -= rol32(from, rot[i]);
	}
	return v[2];
}

static bool tuple_equal(const struct ct_tuple *a, const struct ct_tuple *b)
{
	return a->src == b->src && a->dst == b->dst && a->sport == b->sport && a->dport == b->dport &&
	       a->proto == b->proto;
}

static void tuple_reverse(struct ct_tuple *out, const struct ct_tuple *in)
{
	out->src = in->dst;
	out->dst = in->src;
	out->sport = in->dport;
	out->dport = in->sport;
	out->proto = in->proto;
}

static struct ct_flow **bucket_of(const struct ct_tuple *t)
{
	return &buckets[tuple_hash(t) & (CT_BUCKETS - 1u)];
}

static void flow_unlink(struct ct_flow *f)
{
	for (struct ct_flow **p = bucket_of(&f->tuple); *p != NULL; p = &(*p)->next) {
		if (*p == f) {
			*p = f->next;
			break;
		}
	}
	f->next = NULL;
}

/* The idle timer ran out: the flow is forgotten (from the tick interrupt). */
static void flow_expired(struct k_timer *t)
{
	struct ct_flow *f = (struct ct_flow *)((uint8_t *)t - offsetof(struct ct_flow, idle));
	flow_unlink(f);
	f->state = CT_FREE;
	stats.expired++;
}

static struct ct_flow *find(const struct ct_tuple *t, bool *reply)
{
	for (struct ct_flow *f = *bucket_of(t); f != NULL; f = f->next) {
		if (tuple_equal(&f->tuple, t)) {
			*reply = false;
			return f;
		}
	}
	struct ct_tuple r;
	tuple_reverse(&r, t);
	for (struct ct_flow *f = *bucket_of(&r); f != NULL; f = f->next) {
		if (tuple_equal(&f->tuple, &r)) {
			*reply = true;
			return f;
		}
	}
	return NULL;
}

/* A free slot, or the flow seen longest ago when the table is full. */
static struct ct_flow *flow_slot(uint32_t now)
{
	struct ct_flow *oldest = &flows[0];
	for (unsigned i = 0; i < CT_FLOWS; i++) {
		if (flows[i].state == CT_FREE) {
			return &flows[i];
		}
		if ((int32_t)(flows[i].last_seen - oldest->last_seen) < 0) {
			oldest = &flows[i];
		}
	}
	k_timer_stop(&oldest->idle);
	flow_unlink(oldest);
	stats.evicted++;
	return oldest;
}

static struct ct_flow *flow_create(const struct ct_tuple *t, uint32_t now)
{
	struct ct_flow *f = flow_slot(now);
	memset(f, 0, sizeof(*f));
	f->tuple = *t;
	f->state = CT_NEW;
	k_timer_init(&f->idle, flow_expired, 0);
	struct ct_flow **b = bucket_of(t);
	f->next = *b;
	*b = f;
	stats.created++;
	LOG_DBG(&ct_log, "new flow %x:%u proto %u", ntohl(t->src), t->sport, t->proto);
	return f;
}

int net_conntrack(const struct ct_tuple *t, size_t bytes, bool outgoing)
{
	uint32_t now = k_uptime_ticks();
	uint32_t key = irq_lock();
	bool reply = false;
	struct ct_flow *f = find(t, &reply);
	if (f == NULL) {
		if (outgoing) {
			/* Replies only: this stack never opens a flow itself. */
			stats.invalid++;
			irq_unlock(key);
			return -1;
		}
		f = flow_create(t, now);
	}
	unsigned dir = reply ? 1u : 0u;
	f->packets[dir]++;
	f->bytes[dir] += (uint32_t)bytes;
	f->last_seen = now;
	if (reply && f->state == CT_NEW) {
		f->state = CT_ESTABLISHED;
		stats.established++;
	}
	k_timer_start(&f->idle, f->state == CT_ESTABLISHED ? CT_TIMEOUT_EST_MS : CT_TIMEOUT_NEW_MS);
	stats.lookups++;
	irq_unlock(key);
	return f->state;
}

void net_conntrack_init(void)
{
	memset(flows, 0, sizeof(flows));
	memset(buckets, 0, sizeof(buckets));
	memset(&stats, 0, sizeof(stats));
}

void net_conntrack_get_stats(struct ct_stats *out)
{
	uint32_t key = irq_lock();
	*out = stats;
	irq_unlock(key);
}
