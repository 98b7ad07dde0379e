/* SPDX-License-Identifier: Apache-2.0 */
/* The QEMU board port: UART console, clocks, the sampling timer. */
#ifndef QEMU_PORT_PORT_H
#define QEMU_PORT_PORT_H

#include <stddef.h>
#include <stdint.h>

void port_init(void);

/* Polled UART0 output; every byte reaches the host in order. */
void port_uart_write(const void *buf, size_t len);
/* Next received byte, or -1 when none is waiting (filled by the RX interrupt). */
int port_uart_read(void);

/* Free-running 25 MHz counter (counts up), for timing and calibration. */
uint32_t port_cycles(void);

/* Starts the 1 kHz kernel tick; Tick_IRQHandler calls kernel_tick(). */
void port_tick_start(void);

/* Hands the image's parameters to the sampler core (before any START). */
void sampler_port_init(void);
/* Feeds received bytes to the sampler core and lets it stream; call every few ms. */
void sampler_port_service(void);

/*
 * Code that plays the world outside the chip: the PC at the other end of
 * the USB cable (the usb_host thread of app/echo.c) and the hardware side
 * of the USB controller model (the bus, its rings and FCS). The linker
 * script puts it in .testbench (0x60800000, no Teensy memory): tcmprof sim
 * leaves it out of its model, and the planner never moves it (it is not
 * in a .text section).
 */
#define TESTBENCH __attribute__((section(".testbench")))

__attribute__((noreturn)) void port_panic(const char *what, uint32_t exc, uint32_t pc,
					  uint32_t lr, uint32_t exc_return);

#endif
