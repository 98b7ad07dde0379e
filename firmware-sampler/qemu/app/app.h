/* SPDX-License-Identifier: Apache-2.0 */
/* The UDP echo demo application. */
#ifndef QEMU_APP_H
#define QEMU_APP_H

#include <stdint.h>

#include <stddef.h>

#define ECHO_PORT 7

/*
 * The request payload is a telemetry message (app/telemetry.c): a header
 * (magic, version, record count, sequence number) and records of a type
 * byte and an 11-byte body.
 */
#define TELEMETRY_MAGIC 0xEC
#define TELEMETRY_VERSION 1
#define TELEMETRY_HEADER 4
#define TELEMETRY_RECORD 12
#define TELEMETRY_TYPES 64
#define TELEMETRY_FIELDS 5
#define ECHO_RECORDS 5
#define ECHO_PAYLOAD (TELEMETRY_HEADER + ECHO_RECORDS * TELEMETRY_RECORD)

struct telemetry_stats {
	uint32_t messages, records, flagged_records, unknown_records, bad_messages, seq_gaps;
	uint8_t last_seq;
};
/* Accounts the records of one message; returns how many were out of range or alarmed. */
unsigned telemetry_account(const uint8_t *payload, size_t len);
void telemetry_get_stats(struct telemetry_stats *out);

struct echo_stats {
	uint32_t sent, echoed, bad_replies, lost;
	uint32_t flagged, no_memory; /* requests with flagged records; replies without a buffer */
};

/* Planner workloads on every echo (app/workloads/, Makefile WORKLOAD). */
void workload_alias(uint32_t seed);
void workload_loops(uint32_t seed);

/* Starts the echo server thread and the USB host model thread. */
void echo_start(void);
void echo_get_stats(struct echo_stats *out);

#ifdef ECHO_LAN9118
/* Adds the LAN9118 interface (app/lan9118_if.c, build with NIC=lan9118). */
void echo_lan9118_start(void);
#endif

#endif
