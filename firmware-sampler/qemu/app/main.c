/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Entry of the QEMU demo image: bring up the board, start the echo
 * workload, and run the "console" thread. The console thread is the
 * sampler's thread: it feeds the host's commands to the core, lets it
 * stream, and prints a status line now and then (log text the host must
 * skip between sampler frames; both come from this one thread, so a line
 * never lands inside a frame).
 */
#include "app.h"
#include "drv.h"
#include "kernel.h"
#include "net.h"
#include "port.h"

#define STATUS_PERIOD_MS 2000

static struct k_thread console_thread;
static uint8_t console_stack[2048] __attribute__((aligned(8)));

static void print_status(void)
{
	struct echo_stats s;
	struct ehci_stats e;
	echo_get_stats(&s);
	ehci_get_stats(&e);
	printk("status: uptime=%ums sent=%u echoed=%u bad=%u lost=%u bufs=%u usb: irqs=%u out=%u "
	       "in=%u errors=%u overruns=%u\n",
	       (unsigned)k_uptime_ticks(), (unsigned)s.sent, (unsigned)s.echoed,
	       (unsigned)s.bad_replies, (unsigned)s.lost, net_buf_pool_free(), (unsigned)e.irqs,
	       (unsigned)e.out_done, (unsigned)e.in_done, (unsigned)e.td_errors,
	       (unsigned)e.bus_overruns);
}

static void console_main(void *arg)
{
	(void)arg;
	uint32_t next_status = k_uptime_ticks() + STATUS_PERIOD_MS;
	for (;;) {
		if ((int32_t)(k_uptime_ticks() - next_status) >= 0) {
			print_status();
			next_status += STATUS_PERIOD_MS;
		}
		sampler_port_service();
		log_process();
		k_sleep_ms(1);
	}
}

int main(void)
{
	port_init();
	sampler_port_init();
	printk("\ntcmprof QEMU demo (mps2-an500, Teensy 4.1 memory map)\n");
	k_thread_create(&console_thread, "console", console_stack, sizeof(console_stack),
			console_main, NULL);
	echo_start();
	port_tick_start();
	k_start();
}
