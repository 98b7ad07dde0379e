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

/*
 * Rule n hashes `span` bytes from offset `off` of the IP packet with
 * multiplier `k`, and matches when the hash agrees with the protocol and
 * port selector `sel` in the bits of `mask`.
 */
#define FILTER_RULE(n, off, span, k, mask, sel)                                                  \
	unsigned net_filter_rule_##n(const uint8_t *pkt, size_t len, const struct ipv4_hdr *ip)  \
	{                                                                                        \
		uint32_t h = (uint32_t)(k) ^ ip->proto;                                          \
		size_t end = len < (size_t)(off) + (span) ? len : (size_t)(off) + (span);         \
		_Pragma("GCC unroll 4") for (size_t i = (off); i < end; i++)                     \
		{                                                                                \
			h = mix(h, pkt[i], (k));                                                 \
		}                                                                                \
		uint32_t ports = len >= IPV4_HLEN + 4 ? (uint32_t)pkt[IPV4_HLEN] << 24 |         \
								 (uint32_t)pkt[IPV4_HLEN + 1] << 16 | \
								 (uint32_t)pkt[IPV4_HLEN + 2] << 8 |  \
								 pkt[IPV4_HLEN + 3]                   \
						      : 0;                                       \
		switch ((h ^ ports) & 3u) {                                                      \
		case 0:                                                                          \
			h = mix(h, ntohl(ip->src), (k) + 2u);                                    \
			break;                                                                   \
		case 1:                                                                          \
			h = mix(h, ntohl(ip->dst), (k) + 4u);                                    \
			break;                                                                   \
		case 2:                                                                          \
			h = mix(h, ports, (k) + 6u);                                             \
			break;                                                                   \
		default:                                                                         \
			h = mix(h, ntohs(ip->len), (k) + 8u);                                    \
			break;                                                                   \
		}                                                                                \
		return ((h ^ ports) & (mask)) == ((sel) & (mask)) ? 1u : 0u;                     \
	}

#define FILTER_RULES(X)                                                  \
	X(0, 0, 20, 0x9E3779B1u, 0x0000000Fu, 0x5u)                      \
	X(1, 4, 16, 0x85EBCA77u, 0x000000F0u, 0x30u)                     \
	X(2, 8, 12, 0xC2B2AE3Du, 0x00000F00u, 0x700u)                    \
	X(3, 12, 8, 0x27D4EB2Fu, 0x0000F000u, 0x2000u)                   \
	X(4, 16, 12, 0x165667B1u, 0x000F0000u, 0x90000u)                 \
	X(5, 20, 8, 0xD3A2646Cu, 0x00F00000u, 0x100000u)                 \
	X(6, 24, 16, 0xFD7046C5u, 0x0F000000u, 0x3000000u)               \
	X(7, 28, 16, 0xB55A4F09u, 0xF0000000u, 0x80000000u)              \
	X(8, 0, 32, 0x68E31DA4u, 0x000000FFu, 0x11u)                     \
	X(9, 2, 18, 0xB5297A4Du, 0x0000FF00u, 0x3500u)                   \
	X(10, 6, 14, 0x1B873593u, 0x00FF0000u, 0x440000u)                \
	X(11, 10, 22, 0xCC9E2D51u, 0xFF000000u, 0x7F000000u)             \
	X(12, 14, 10, 0xE6546B64u, 0x00000007u, 0x3u)                    \
	X(13, 18, 14, 0x7FEB352Du, 0x00000070u, 0x50u)                   \
	X(14, 22, 10, 0x846CA68Bu, 0x00000700u, 0x100u)                  \
	X(15, 26, 24, 0x9E3779B9u, 0x00007000u, 0x6000u)                 \
	X(16, 1, 20, 0x2545F491u, 0x0000000Fu, 0xAu)                     \
	X(17, 3, 16, 0x4F1BBCDDu, 0x000000F0u, 0xC0u)                    \
	X(18, 5, 12, 0x61C88647u, 0x00000F00u, 0xE00u)                   \
	X(19, 7, 8, 0x94D049BBu, 0x0000F000u, 0x1000u)                   \
	X(20, 9, 12, 0xBF58476Du, 0x000F0000u, 0x40000u)                 \
	X(21, 11, 8, 0x369DEA0Fu, 0x00F00000u, 0x600000u)                \
	X(22, 13, 16, 0xDB4F0B91u, 0x0F000000u, 0x8000000u)              \
	X(23, 15, 16, 0xBBE0563Du, 0xF0000000u, 0xA0000000u)             \
	X(24, 17, 32, 0x58A5AB3Du, 0x000000FFu, 0x43u)                   \
	X(25, 19, 18, 0x2F8F8E9Bu, 0x0000FF00u, 0x4400u)                 \
	X(26, 21, 14, 0xA0761D65u, 0x00FF0000u, 0x350000u)               \
	X(27, 23, 22, 0xE7037ED1u, 0xFF000000u, 0x08000000u)             \
	X(28, 25, 10, 0x8EBC6AF1u, 0x00000007u, 0x6u)                    \
	X(29, 27, 14, 0x589965CDu, 0x00000070u, 0x20u)                   \
	X(30, 29, 10, 0x1D8E4E27u, 0x00000700u, 0x400u)                  \
	X(31, 31, 24, 0xEB44ACCBu, 0x00007000u, 0x3000u)                 \
	X(32, 0, 28, 0x3C6EF372u, 0x0000001Fu, 0x11u)                    \
	X(33, 2, 24, 0xA54FF53Au, 0x000001F0u, 0x150u)                   \
	X(34, 4, 20, 0x510E527Fu, 0x00001F00u, 0x1200u)                  \
	X(35, 6, 16, 0x9B05688Cu, 0x0001F000u, 0x9000u)                  \
	X(36, 8, 12, 0x1F83D9ABu, 0x001F0000u, 0x130000u)                \
	X(37, 10, 8, 0x5BE0CD19u, 0x01F00000u, 0x0500000u)               \
	X(38, 12, 28, 0x6A09E667u, 0x1F000000u, 0x17000000u)             \
	X(39, 14, 24, 0xBB67AE85u, 0xF1000000u, 0x31000000u)             \
	X(40, 16, 20, 0x428A2F98u, 0x0000003Fu, 0x2Au)                   \
	X(41, 18, 16, 0x71374491u, 0x000003F0u, 0x1A0u)                  \
	X(42, 20, 12, 0xB5C0FBCFu, 0x00003F00u, 0x2B00u)                 \
	X(43, 22, 8, 0xE9B5DBA5u, 0x0003F000u, 0x11000u)                 \
	X(44, 24, 28, 0x3956C25Bu, 0x003F0000u, 0x250000u)               \
	X(45, 26, 24, 0x59F111F1u, 0x03F00000u, 0x1300000u)              \
	X(46, 28, 20, 0x923F82A4u, 0x3F000000u, 0x2D000000u)             \
	X(47, 30, 16, 0xAB1C5ED5u, 0xF3000000u, 0x13000000u)

#define DEFINE_RULE(n, off, span, k, mask, sel) FILTER_RULE(n, off, span, k, mask, sel)
FILTER_RULES(DEFINE_RULE)

#define RULE_ENTRY(n, off, span, k, mask, sel) net_filter_rule_##n,
static const filter_rule_t rules[] = {FILTER_RULES(RULE_ENTRY)};

unsigned net_filter_rule_count(void)
{
	return sizeof(rules) / sizeof(rules[0]);
}

unsigned net_filter_run(const struct net_buf *buf, const struct ipv4_hdr *ip)
{
	const uint8_t *pkt = (const uint8_t *)ip;
	size_t len = buf->len;
	unsigned hits = 0;
	for (unsigned i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		hits += rules[i](pkt, len, ip);
	}
	return hits;
}
