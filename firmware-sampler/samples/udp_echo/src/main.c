/* SPDX-License-Identifier: Apache-2.0 */
/*
 * UDP echo server on port 7: every datagram goes back to its sender. The
 * workload the tcmprof seed report measures: USB CDC-NCM in, the IPv4/UDP
 * stack up and down, USB out, with the sampler taking PCs underneath.
 */
#include <errno.h>

#include <zephyr/kernel.h>
#include <zephyr/logging/log.h>
/*
 * The classic socket names (AF_INET, struct sockaddr_in, htons): Zephyr
 * 4.4 moved them to a net_ namespace and keeps them behind this macro, as
 * its own POSIX <sys/socket.h> does; older releases ignore it.
 */
#define ZEPHYR_INCLUDE_NET_COMPAT_MODE_SYMBOLS
#include <zephyr/net/net_config.h>
#include <zephyr/net/socket.h>

LOG_MODULE_REGISTER(udp_echo, LOG_LEVEL_INF);

#define ECHO_PORT 7

static uint8_t buf[1500];

int main(void)
{
	struct sockaddr_in addr = {
		.sin_family = AF_INET,
		.sin_port = htons(ECHO_PORT),
		.sin_addr = {.s_addr = htonl(INADDR_ANY)},
	};
	/*
	 * With a USB network class Zephyr does not apply the NET_CONFIG_*
	 * settings at boot (NET_CONFIG_AUTO_INIT defaults to n): the
	 * application does, once USB is up, which the module's USB init has
	 * done by now (SYS_INIT, APPLICATION level). It waits for the NCM
	 * interface up to NET_CONFIG_INIT_TIMEOUT, then sets 192.0.2.1.
	 */
	(void)net_config_init_app(NULL, "UDP echo: configuring the NCM interface");

	int sock = zsock_socket(AF_INET, SOCK_DGRAM, IPPROTO_UDP);

	if (sock < 0) {
		LOG_ERR("socket: %d", errno);
		return 0;
	}
	if (zsock_bind(sock, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		LOG_ERR("bind to port %d: %d", ECHO_PORT, errno);
		return 0;
	}
	LOG_INF("UDP echo on port %d", ECHO_PORT);

	for (;;) {
		struct sockaddr_in peer;
		socklen_t peer_len = sizeof(peer);
		ssize_t n = zsock_recvfrom(sock, buf, sizeof(buf), 0, (struct sockaddr *)&peer,
					   &peer_len);

		if (n < 0) {
			LOG_WRN("recvfrom: %d", errno);
			continue;
		}
		if (zsock_sendto(sock, buf, (size_t)n, 0, (struct sockaddr *)&peer, peer_len) < 0) {
			LOG_WRN("sendto: %d", errno);
		}
	}
	return 0;
}
