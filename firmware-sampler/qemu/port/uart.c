/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CMSDK UART 0 as the host link (the Teensy's USB CDC-ACM port). TX is
 * polled from thread mode only, so a frame and a log line never interleave
 * byte-wise. RX uses the RX interrupt at a low priority: QEMU's CMSDK UART
 * holds a single received byte and stops reading the pty until it is taken,
 * so a thread that is busy for a while must not stall the host's commands.
 */
#include "cmsdk.h"
#include "port.h"

#define RX_RING_SIZE 256u /* power of two */

static volatile uint8_t rx_ring[RX_RING_SIZE];
static volatile uint32_t rx_head, rx_tail;

void port_uart_init(void)
{
	UART_BAUDDIV(UART0_BASE) = 16;
	UART_CTRL(UART0_BASE) = UART_CTRL_TXEN | UART_CTRL_RXEN | UART_CTRL_RXIRQEN;
	nvic_enable(UART0_RX_IRQn, IRQ_PRIO_UART_RX);
}

void port_uart_write(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len-- > 0) {
		while (UART_STATE(UART0_BASE) & UART_STATE_TXFULL) {
		}
		UART_DATA(UART0_BASE) = *p++;
	}
}

void UART0_RX_IRQHandler(void)
{
	UART_INTSTATUS(UART0_BASE) = UART_INT_RX;
	while (UART_STATE(UART0_BASE) & UART_STATE_RXFULL) {
		uint8_t byte = (uint8_t)UART_DATA(UART0_BASE);
		if (rx_head - rx_tail < RX_RING_SIZE) {
			rx_ring[rx_head % RX_RING_SIZE] = byte;
			rx_head++;
		}
	}
}

int port_uart_read(void)
{
	if (rx_tail == rx_head) {
		return -1;
	}
	int byte = rx_ring[rx_tail % RX_RING_SIZE];
	rx_tail++;
	return byte;
}
