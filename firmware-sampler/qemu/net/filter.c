/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A packet classifier: a table of rules, each matching a different header
 * or payload pattern, run over every received IPv4 packet. The rules are
 * stamped out by a macro with different constants, which gives the image
 * what a real network stack has and a small demo lacks: many hot functions
 * of a few hundred bytes each, together larger than the 32 KB cache.
 */
#include "net.h"

typedef unsigned (*filter_rule_t)(const uint8_t *pkt, size_t len, const struct ipv4_hdr *ip);

static inline uint32_t mix(uint32_t h, uint32_t v, uint32_t k)
{
	h ^= v;
	h *= k;
	return h ^ (h >> 15);
}

/* One unrolled hashing step over byte j of the window, with its own multiplier. */
#define STEP(j) h = mix(h, win[j], key + 2u * (j))
#define STEPS_8(b)                                                                         \
	STEP(b + 0);                                                                       \
	STEP(b + 1);                                                                       \
	STEP(b + 2);                                                                       \
	STEP(b + 3);                                                                       \
	STEP(b + 4);                                                                       \
	STEP(b + 5);                                                                       \
	STEP(b + 6);                                                                       \
	STEP(b + 7)

/* Every packet the rules see is at least this long (IPv4 + UDP + 20 bytes). */
#define FILTER_MIN_LEN 48u

/*
 * Rule n hashes the 24 bytes from offset `off` (at most 24) of the IP
 * packet with multiplier `k`, folds in one more header field chosen by the
 * hash, and matches when the result agrees with the selector `sel` in the
 * bits of `mask`. The steps are unrolled, so each rule is a few hundred
 * bytes of straight-line code, as protocol code tends to be.
 */
#define FILTER_RULE(n, off, k, mask, sel)                                                       \
	unsigned net_filter_rule_##n(const uint8_t *pkt, size_t len, const struct ipv4_hdr *ip) \
	{                                                                                       \
		if (len < FILTER_MIN_LEN) {                                                     \
			return 0;                                                               \
		}                                                                               \
		const uint8_t *win = pkt + (off);                                               \
		const uint32_t key = (k);                                                       \
		uint32_t h = key ^ ip->proto;                                                   \
		STEPS_8(0);                                                                     \
		STEPS_8(8);                                                                     \
		STEPS_8(16);                                                                    \
		uint32_t ports = (uint32_t)pkt[IPV4_HLEN] << 24 | (uint32_t)pkt[IPV4_HLEN + 1] << 16 | \
				 (uint32_t)pkt[IPV4_HLEN + 2] << 8 | pkt[IPV4_HLEN + 3];         \
		switch ((h ^ ports) & 3u) {                                                     \
		case 0:                                                                         \
			h = mix(h, ntohl(ip->src), (k) + 64u);                                  \
			break;                                                                  \
		case 1:                                                                         \
			h = mix(h, ntohl(ip->dst), (k) + 66u);                                  \
			break;                                                                  \
		case 2:                                                                         \
			h = mix(h, ports, (k) + 68u);                                           \
			break;                                                                  \
		default:                                                                        \
			h = mix(h, ntohs(ip->len), (k) + 70u);                                  \
			break;                                                                  \
		}                                                                               \
		return ((h ^ ports) & (mask)) == ((sel) & (mask)) ? 1u : 0u;                    \
	}

#define FILTER_RULES(X) \
	X(0, 0, 0x9E3779B1u, 0x0000000Fu, 0x00000000u) \
	X(1, 3, 0x91C35F65u, 0x000000F0u, 0x000000F0u) \
	X(2, 6, 0xCD7D6731u, 0x00000F00u, 0x00000D00u) \
	X(3, 9, 0x16D26E49u, 0x0000F000u, 0x00004000u) \
	X(4, 12, 0xC909A539u, 0x000F0000u, 0x00010000u) \
	X(5, 15, 0x17FA50A5u, 0x00F00000u, 0x00200000u) \
	X(6, 18, 0xDEB39801u, 0x0F000000u, 0x07000000u) \
	X(7, 21, 0xA04AA187u, 0xF0000000u, 0x00000000u) \
	X(8, 24, 0xF714F7E5u, 0x00000078u, 0x00000018u) \
	X(9, 2, 0x721413B7u, 0x00000780u, 0x00000680u) \
	X(10, 5, 0x4217650Fu, 0x00007800u, 0x00005000u) \
	X(11, 8, 0x62361247u, 0x00078000u, 0x00008000u) \
	X(12, 11, 0x7E3E7CC5u, 0x00780000u, 0x00500000u) \
	X(13, 14, 0x7DCE9BBFu, 0x07800000u, 0x00000000u) \
	X(14, 17, 0x004EDDBFu, 0x78000000u, 0x10000000u) \
	X(15, 20, 0x28B7BD67u, 0x0000003Cu, 0x00000000u) \
	X(16, 23, 0xC852957Du, 0x000003C0u, 0x00000300u) \
	X(17, 1, 0xB26893F1u, 0x00003C00u, 0x00001C00u) \
	X(18, 4, 0x86FF147Du, 0x0003C000u, 0x0003C000u) \
	X(19, 7, 0x749BB9D5u, 0x003C0000u, 0x003C0000u) \
	X(20, 10, 0xF7028105u, 0x03C00000u, 0x00800000u) \
	X(21, 13, 0xEF72C3CFu, 0x3C000000u, 0x18000000u) \
	X(22, 16, 0xEFE8564Du, 0x0000001Eu, 0x0000000Au) \
	X(23, 19, 0xAEC06853u, 0x000001E0u, 0x000001C0u) \
	X(24, 22, 0x76A4920Fu, 0x00001E00u, 0x00000600u) \
	X(25, 0, 0x7A6F4303u, 0x0001E000u, 0x0000C000u) \
	X(26, 3, 0x1629FD1Bu, 0x001E0000u, 0x00020000u) \
	X(27, 6, 0x5927A213u, 0x01E00000u, 0x01400000u) \
	X(28, 9, 0xABF7CEEFu, 0x1E000000u, 0x02000000u) \
	X(29, 12, 0xDE61270Bu, 0x0000000Fu, 0x00000002u) \
	X(30, 15, 0xF10F94CBu, 0x000000F0u, 0x00000080u) \
	X(31, 18, 0x52D2DA33u, 0x00000F00u, 0x00000F00u) \
	X(32, 21, 0xF26DB147u, 0x0000F000u, 0x0000D000u) \
	X(33, 24, 0xD30DC87Bu, 0x000F0000u, 0x000A0000u) \
	X(34, 2, 0x4080C1C7u, 0x00F00000u, 0x00000000u) \
	X(35, 5, 0xD265055Fu, 0x0F000000u, 0x0B000000u) \
	X(36, 8, 0x24FB5CCFu, 0xF0000000u, 0x20000000u) \
	X(37, 11, 0xC6EB36FBu, 0x00000078u, 0x00000028u) \
	X(38, 14, 0x011D1497u, 0x00000780u, 0x00000000u) \
	X(39, 17, 0xBD362F1Du, 0x00007800u, 0x00006000u) \
	X(40, 20, 0xF6342C3Bu, 0x00078000u, 0x00010000u) \
	X(41, 23, 0x82CA724Du, 0x00780000u, 0x00280000u) \
	X(42, 1, 0xEA3C9525u, 0x07800000u, 0x03800000u) \
	X(43, 4, 0x501931DDu, 0x78000000u, 0x30000000u) \
	X(44, 7, 0xD9B1211Bu, 0x0000003Cu, 0x00000014u) \
	X(45, 10, 0x3EF3B255u, 0x000003C0u, 0x000000C0u) \
	X(46, 13, 0xE1D04BD5u, 0x00003C00u, 0x00002C00u) \
	X(47, 16, 0x7CEDF6FDu, 0x0003C000u, 0x00004000u) \
	X(48, 19, 0x1C88CD13u, 0x003C0000u, 0x00140000u) \
	X(49, 22, 0xF3B2FD07u, 0x03C00000u, 0x00800000u) \
	X(50, 0, 0xFA026F13u, 0x3C000000u, 0x3C000000u) \
	X(51, 3, 0x302E50EBu, 0x0000001Eu, 0x0000001Cu) \
	X(52, 6, 0x52F4389Bu, 0x000001E0u, 0x00000160u) \
	X(53, 9, 0x9E63AA25u, 0x00001E00u, 0x00001800u) \
	X(54, 12, 0x1251D2E3u, 0x0001E000u, 0x00016000u) \
	X(55, 15, 0xCBABF5E9u, 0x001E0000u, 0x001A0000u) \
	X(56, 18, 0x75C3C665u, 0x01E00000u, 0x01200000u) \
	X(57, 21, 0x8B25A199u, 0x1E000000u, 0x06000000u) \
	X(58, 24, 0xBE4F2D31u, 0x0000000Fu, 0x00000004u) \
	X(59, 2, 0x470AC1A9u, 0x000000F0u, 0x00000010u) \
	X(60, 5, 0x076A7345u, 0x00000F00u, 0x00000100u) \
	X(61, 8, 0x9F863DA1u, 0x0000F000u, 0x00006000u) \
	X(62, 11, 0xD29102E1u, 0x000F0000u, 0x00020000u) \
	X(63, 14, 0xA70913C9u, 0x00F00000u, 0x00D00000u)

#define DEFINE_RULE(n, off, k, mask, sel) FILTER_RULE(n, off, k, mask, sel)
FILTER_RULES(DEFINE_RULE)

#define RULE_ENTRY(n, off, k, mask, sel) net_filter_rule_##n,
static const filter_rule_t rules[] = {FILTER_RULES(RULE_ENTRY)};

/* A planner workload may run fewer of the rules (Makefile WORKLOAD), so
 * that the rest of the echo leaves its own code room in the cache. */
#ifndef NET_FILTER_ACTIVE_RULES
#define NET_FILTER_ACTIVE_RULES (sizeof(rules) / sizeof(rules[0]))
#endif

unsigned net_filter_run(const struct net_buf *buf, const struct ipv4_hdr *ip)
{
	const uint8_t *pkt = (const uint8_t *)ip;
	size_t len = buf->len;
	unsigned hits = 0;
	for (unsigned i = 0; i < NET_FILTER_ACTIVE_RULES; i++) {
		hits += rules[i](pkt, len, ip);
	}
	return hits;
}
