/* SPDX-License-Identifier: Apache-2.0 */
/*
 * IPv4 options of received datagrams (RFC 791, RFC 2113): each option is
 * checked against its own rules, and a datagram with a malformed option is
 * dropped, as a host stack must. Record route and timestamp are only
 * validated (this host is their destination, not a router on their path);
 * router alert is counted for the protocols that want it.
 */
#include "net.h"

#define OPT_EOL 0
#define OPT_NOP 1
#define OPT_RR 7
#define OPT_TS 68
#define OPT_SEC 130
#define OPT_RA 148

#define TS_ONLY 0
#define TS_AND_ADDR 1
#define TS_PRESPEC 3

/* Route record: the pointer names the next free 4-byte slot, from 4. */
static int opt_record_route(const uint8_t *opt, unsigned len, struct ipv4_opts *out)
{
	if (len < 3 || (len - 3) % 4 != 0) {
		return -1;
	}
	unsigned ptr = opt[2];
	if (ptr < 4 || (ptr - 4) % 4 != 0 || ptr > len + 1) {
		return -1;
	}
	out->rr_hops = (uint8_t)((ptr - 4) / 4);
	out->rr_full = ptr > len;
	return 0;
}

/* Timestamp: pointer from 5, overflow count and flag in the fourth byte. */
static int opt_timestamp(const uint8_t *opt, unsigned len, struct ipv4_opts *out)
{
	if (len < 4) {
		return -1;
	}
	unsigned ptr = opt[2], overflow = opt[3] >> 4, flag = opt[3] & 0x0Fu;
	unsigned entry;
	switch (flag) {
	case TS_ONLY:
		entry = 4;
		break;
	case TS_AND_ADDR:
	case TS_PRESPEC:
		entry = 8;
		break;
	default:
		return -1;
	}
	if (ptr < 5 || (ptr - 5) % entry != 0 || ptr > len + 1 || (len - 4) % entry != 0) {
		return -1;
	}
	out->ts_entries = (uint8_t)((ptr - 5) / entry);
	out->ts_overflow = (uint8_t)overflow;
	if (ptr <= len) {
		/* Room left: a router on the way would have written here. */
		out->ts_room = true;
	}
	return 0;
}

static int opt_router_alert(const uint8_t *opt, unsigned len, struct ipv4_opts *out)
{
	if (len != 4) {
		return -1;
	}
	uint16_t value = (uint16_t)(opt[2] << 8 | opt[3]);
	out->router_alert = true;
	out->ra_value = value;
	return 0;
}

/* Basic security (RFC 1108): the classification level must be a known one. */
static int opt_security(const uint8_t *opt, unsigned len, struct ipv4_opts *out)
{
	static const uint8_t levels[] = {0x3D, 0x5A, 0x96, 0x66, 0xCC, 0xAB, 0xF1, 0x01};
	if (len < 3) {
		return -1;
	}
	for (unsigned i = 0; i < sizeof(levels); i++) {
		if (opt[2] == levels[i]) {
			out->security_level = (uint8_t)(i + 1u);
			return 0;
		}
	}
	return -1;
}

int net_ipv4_parse_options(const uint8_t *opts, unsigned len, struct ipv4_opts *out)
{
	*out = (struct ipv4_opts){0};
	unsigned i = 0;
	while (i < len) {
		uint8_t type = opts[i];
		if (type == OPT_EOL) {
			break;
		}
		if (type == OPT_NOP) {
			i++;
			continue;
		}
		if (i + 1 >= len || opts[i + 1] < 2 || i + opts[i + 1] > len) {
			return -1;
		}
		unsigned olen = opts[i + 1];
		int err;
		switch (type) {
		case OPT_RR:
			err = opt_record_route(&opts[i], olen, out);
			break;
		case OPT_TS:
			err = opt_timestamp(&opts[i], olen, out);
			break;
		case OPT_RA:
			err = opt_router_alert(&opts[i], olen, out);
			break;
		case OPT_SEC:
			err = opt_security(&opts[i], olen, out);
			break;
		default:
			/* Unknown options are skipped by their length (RFC 1122 3.2.1.8). */
			out->unknown++;
			err = 0;
			break;
		}
		if (err != 0) {
			return -1;
		}
		out->count++;
		i += olen;
	}
	return 0;
}
