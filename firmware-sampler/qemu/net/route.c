/* SPDX-License-Identifier: Apache-2.0 */
/* IPv4 routing table with longest-prefix match. */
#include "net.h"

struct net_route {
	struct net_if *iface;
	uint32_t prefix; /* network order */
	uint32_t mask;   /* network order */
	uint8_t prefix_len;
	uint32_t nexthop;
};

static struct net_route routes[NET_ROUTE_MAX];
static unsigned route_count;
static struct k_mutex route_lock;

static uint32_t prefix_mask(uint8_t len)
{
	return len == 0 ? 0 : htonl(0xFFFFFFFFu << (32u - len));
}

void net_route_init(void)
{
	k_mutex_init(&route_lock);
	route_count = 0;
}

int net_route_add(struct net_if *iface, uint32_t prefix, uint8_t prefix_len, uint32_t nexthop)
{
	if (prefix_len > 32) {
		return -1;
	}
	int ret = -1;
	k_mutex_lock(&route_lock, K_FOREVER);
	if (route_count < NET_ROUTE_MAX) {
		struct net_route *r = &routes[route_count++];
		r->iface = iface;
		r->mask = prefix_mask(prefix_len);
		r->prefix = prefix & r->mask;
		r->prefix_len = prefix_len;
		r->nexthop = nexthop;
		ret = 0;
	}
	k_mutex_unlock(&route_lock);
	return ret;
}

struct net_if *net_route_lookup(uint32_t dst, uint32_t *nexthop)
{
	struct net_route *best = NULL;
	k_mutex_lock(&route_lock, K_FOREVER);
	for (unsigned i = 0; i < route_count; i++) {
		struct net_route *r = &routes[i];
		if ((dst & r->mask) == r->prefix && (best == NULL || r->prefix_len > best->prefix_len)) {
			best = r;
		}
	}
	k_mutex_unlock(&route_lock);
	if (best == NULL) {
		return NULL;
	}
	if (nexthop != NULL) {
		*nexthop = best->nexthop != 0 ? best->nexthop : dst;
	}
	return best->iface;
}

/* API the echo application never calls: --gc-sections removes it, and GNU
 * ld resolves its DWARF to 0, where ITCM code starts (as in every Zephyr
 * image, whose libraries offer far more than one application uses). */
int net_route_del(uint32_t prefix, uint8_t prefix_len)
{
	int ret = -1;
	k_mutex_lock(&route_lock, K_FOREVER);
	for (unsigned i = 0; i < route_count; i++) {
		struct net_route *r = &routes[i];
		if (r->prefix_len == prefix_len && r->prefix == (prefix & r->mask)) {
			routes[i] = routes[--route_count];
			ret = 0;
			break;
		}
	}
	k_mutex_unlock(&route_lock);
	return ret;
}

unsigned net_route_count(void)
{
	return route_count;
}
