/* The QEMU board port: UART console, clocks, the sampling timer. */
#ifndef QEMU_PORT_PORT_H
#define QEMU_PORT_PORT_H

#include <stddef.h>
#include <stdint.h>

/* Code the sampling interrupt runs: copied to ITCM at boot, like the board. */
#define PORT_ITCM_TEXT __attribute__((section(".itcm_text.port"), noinline))

void port_init(void);

/* Polled UART0 output; every byte reaches the host in order. */
void port_uart_write(const void *buf, size_t len);
/* Next received byte, or -1 when none is waiting (filled by the RX interrupt). */
int port_uart_read(void);

/* Free-running 25 MHz counter (counts up), for timing and calibration. */
uint32_t port_cycles(void);

/* Starts the 1 kHz kernel tick; Tick_IRQHandler calls kernel_tick(). */
void port_tick_start(void);

__attribute__((noreturn)) void port_panic(const char *what, uint32_t exc, uint32_t pc,
					  uint32_t lr, uint32_t exc_return);

#endif
