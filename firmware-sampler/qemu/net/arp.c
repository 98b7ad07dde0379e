/* SPDX-License-Identifier: Apache-2.0 */
/* A static ARP cache; the lookup is on the transmit path of every packet. */
#include <string.h>

#include "net.h"

#define ARP_CACHE_SIZE 8

struct arp_entry {
	uint32_t addr;
	uint8_t mac[6];
};

static struct arp_entry cache[ARP_CACHE_SIZE];
static struct k_mutex arp_lock;

void net_arp_init(void)
{
	memset(cache, 0, sizeof(cache));
	k_mutex_init(&arp_lock);
}

int net_arp_update(uint32_t addr, const uint8_t mac[6])
{
	int ret = -1;
	k_mutex_lock(&arp_lock, K_FOREVER);
	for (unsigned i = 0; i < ARP_CACHE_SIZE; i++) {
		if (cache[i].addr == addr || cache[i].addr == 0) {
			cache[i].addr = addr;
			memcpy(cache[i].mac, mac, 6);
			ret = 0;
			break;
		}
	}
	k_mutex_unlock(&arp_lock);
	return ret;
}

const uint8_t *net_arp_lookup(uint32_t addr)
{
	const uint8_t *mac = NULL;
	k_mutex_lock(&arp_lock, K_FOREVER);
	for (unsigned i = 0; i < ARP_CACHE_SIZE; i++) {
		if (cache[i].addr == addr) {
			mac = cache[i].mac;
			break;
		}
	}
	k_mutex_unlock(&arp_lock);
	return mac;
}
