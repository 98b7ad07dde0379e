/* SPDX-License-Identifier: Apache-2.0 */
/* The UDP echo demo application. */
#ifndef QEMU_APP_H
#define QEMU_APP_H

#include <stdint.h>

#define ECHO_PORT 7
#define ECHO_PAYLOAD 32

struct echo_stats {
	uint32_t sent, echoed, bad_replies, lost;
};

/* Starts the echo server thread and the USB host model thread. */
void echo_start(void);
void echo_get_stats(struct echo_stats *out);

#ifdef ECHO_LAN9118
/* Adds the LAN9118 interface (app/lan9118_if.c, build with NIC=lan9118). */
void echo_lan9118_start(void);
#endif

#endif
