/* SPDX-License-Identifier: Apache-2.0 */
/* Internet checksums, plus the demo's deliberately hot payload check. */
#include "net.h"

/* Folds the carries of a 32-bit one's-complement sum into 16 bits. */
static uint16_t fold(uint32_t sum)
{
	while (sum >> 16) {
		sum = (sum & 0xFFFFu) + (sum >> 16);
	}
	return (uint16_t)sum;
}

uint32_t net_checksum_add(uint32_t sum, const uint8_t *data, size_t len)
{
	while (len >= 2) {
		sum += (uint32_t)data[0] << 8 | data[1];
		data += 2;
		len -= 2;
	}
	if (len > 0) {
		sum += (uint32_t)data[0] << 8;
	}
	return sum;
}

uint16_t net_checksum_finish(uint32_t sum)
{
	return (uint16_t)~fold(sum);
}

uint16_t net_calc_chksum_ipv4(const struct ipv4_hdr *hdr)
{
	size_t hlen = (size_t)(hdr->vhl & 0x0Fu) * 4u;
	return net_checksum_finish(net_checksum_add(0, (const uint8_t *)hdr, hlen));
}

uint16_t net_calc_chksum_udp(uint32_t src, uint32_t dst, const struct udp_hdr *udp, size_t len)
{
	uint32_t sum = 0;
	sum = net_checksum_add(sum, (const uint8_t *)&src, 4);
	sum = net_checksum_add(sum, (const uint8_t *)&dst, 4);
	sum += IP_PROTO_UDP + (uint32_t)len;
	sum = net_checksum_add(sum, (const uint8_t *)udp, len);
	uint16_t c = net_checksum_finish(sum);
	return c == 0 ? 0xFFFFu : c;
}

/*
 * A Fletcher/Adler-style mix over the payload, `rounds` times. Kept out of
 * line (noinline, noclone) so that all of its time is attributed to this
 * one symbol whatever the optimisation level.
 */
__attribute__((noinline, noclone)) uint32_t net_checksum_hot(const uint8_t *data, size_t len,
							     unsigned rounds)
{
	uint32_t a = 1, b = 0;
	for (unsigned r = 0; r < rounds; r++) {
		for (size_t i = 0; i < len; i++) {
			a = (a + data[i] + r) % 65521u;
			b = (b + a) % 65521u;
		}
	}
	return (b << 16) | a;
}
