/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Network interfaces and the read-only IPv4 address checks. Each check
 * takes the interface mutex, as Zephyr's do: in the Teensy profile these
 * lock/unlock pairs were the largest single kernel cost.
 */
#include <string.h>

#include "net.h"

#define NET_IF_MAX 2

static struct net_if *ifaces[NET_IF_MAX];
static unsigned iface_count;

void net_if_init(struct net_if *iface, const uint8_t mac[6], net_if_send_t send)
{
	memset(iface, 0, sizeof(*iface));
	k_mutex_init(&iface->lock);
	memcpy(iface->mac, mac, 6);
	iface->mtu = NET_ETH_MTU;
	iface->send = send;
}

void net_if_register(struct net_if *iface)
{
	if (iface_count < NET_IF_MAX) {
		ifaces[iface_count++] = iface;
	}
}

int net_if_ipv4_addr_add(struct net_if *iface, uint32_t addr, uint32_t netmask)
{
	int ret = -1;
	k_mutex_lock(&iface->lock, K_FOREVER);
	for (unsigned i = 0; i < NET_IF_MAX_ADDR; i++) {
		if (!iface->unicast[i].is_used) {
			iface->unicast[i].addr = addr;
			iface->unicast[i].netmask = netmask;
			iface->unicast[i].is_used = true;
			ret = 0;
			break;
		}
	}
	k_mutex_unlock(&iface->lock);
	return ret;
}

void net_if_ipv4_set_gw(struct net_if *iface, uint32_t gw)
{
	k_mutex_lock(&iface->lock, K_FOREVER);
	iface->gateway = gw;
	k_mutex_unlock(&iface->lock);
}

int net_if_ipv4_maddr_add(struct net_if *iface, uint32_t addr)
{
	int ret = -1;
	k_mutex_lock(&iface->lock, K_FOREVER);
	for (unsigned i = 0; i < NET_IF_MAX_MCAST; i++) {
		if (iface->mcast[i] == 0) {
			iface->mcast[i] = addr;
			ret = 0;
			break;
		}
	}
	k_mutex_unlock(&iface->lock);
	return ret;
}

bool net_ipv4_is_addr_mcast(uint32_t addr)
{
	return (ntohl(addr) & 0xF0000000u) == 0xE0000000u;
}

bool net_if_ipv4_is_addr_mcast_joined(struct net_if *iface, uint32_t addr)
{
	bool joined = false;
	k_mutex_lock(&iface->lock, K_FOREVER);
	for (unsigned i = 0; i < NET_IF_MAX_MCAST && !joined; i++) {
		joined = iface->mcast[i] == addr;
	}
	k_mutex_unlock(&iface->lock);
	return joined;
}

bool net_ipv4_is_addr_bcast(struct net_if *iface, uint32_t addr)
{
	if (addr == 0xFFFFFFFFu) {
		return true;
	}
	bool bcast = false;
	k_mutex_lock(&iface->lock, K_FOREVER);
	for (unsigned i = 0; i < NET_IF_MAX_ADDR && !bcast; i++) {
		const struct net_if_addr *a = &iface->unicast[i];
		if (a->is_used && (a->addr & a->netmask) == (addr & a->netmask)) {
			bcast = (addr & ~a->netmask) == ~a->netmask;
		}
	}
	k_mutex_unlock(&iface->lock);
	return bcast;
}

struct net_if_addr *net_if_ipv4_addr_lookup(uint32_t addr, struct net_if **ret)
{
	for (unsigned n = 0; n < iface_count; n++) {
		struct net_if *iface = ifaces[n];
		struct net_if_addr *found = NULL;
		k_mutex_lock(&iface->lock, K_FOREVER);
		for (unsigned i = 0; i < NET_IF_MAX_ADDR; i++) {
			if (iface->unicast[i].is_used && iface->unicast[i].addr == addr) {
				found = &iface->unicast[i];
				break;
			}
		}
		k_mutex_unlock(&iface->lock);
		if (found != NULL) {
			if (ret != NULL) {
				*ret = iface;
			}
			return found;
		}
	}
	return NULL;
}

bool net_ipv4_is_my_addr(uint32_t addr)
{
	return net_if_ipv4_addr_lookup(addr, NULL) != NULL;
}

/* Number of leading bits two addresses share, for the best-match rule. */
static unsigned common_prefix_len(uint32_t a, uint32_t b)
{
	uint32_t diff = ntohl(a ^ b);
	return diff == 0 ? 32u : (unsigned)__builtin_clz(diff);
}

uint32_t net_if_ipv4_select_src_addr(struct net_if *dst_iface, uint32_t dst)
{
	uint32_t best = 0;
	unsigned best_len = 0;
	for (unsigned n = 0; n < iface_count; n++) {
		struct net_if *iface = ifaces[n];
		if (dst_iface != NULL && iface != dst_iface) {
			continue;
		}
		k_mutex_lock(&iface->lock, K_FOREVER);
		for (unsigned i = 0; i < NET_IF_MAX_ADDR; i++) {
			const struct net_if_addr *a = &iface->unicast[i];
			if (!a->is_used) {
				continue;
			}
			unsigned len = common_prefix_len(a->addr, dst);
			if (best == 0 || len > best_len) {
				best = a->addr;
				best_len = len;
			}
		}
		k_mutex_unlock(&iface->lock);
	}
	return best;
}

bool net_ipv4_is_addr_onlink(struct net_if *iface, uint32_t addr)
{
	bool onlink = false;
	k_mutex_lock(&iface->lock, K_FOREVER);
	for (unsigned i = 0; i < NET_IF_MAX_ADDR && !onlink; i++) {
		const struct net_if_addr *a = &iface->unicast[i];
		onlink = a->is_used && (a->addr & a->netmask) == (addr & a->netmask);
	}
	k_mutex_unlock(&iface->lock);
	return onlink;
}
