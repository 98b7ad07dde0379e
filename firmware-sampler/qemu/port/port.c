/* SPDX-License-Identifier: Apache-2.0 */
/* Board bring-up for the mps2-an500 stand-in of the Teensy 4.1. */
#include <string.h>

#include "cmsdk.h"
#include "port.h"

void port_uart_init(void);
void kernel_tick(void);

void port_init(void)
{
	port_uart_init();
	/* Free-running timestamp counter: dual timer 1, 32-bit, wraps at 0. */
	DUALTIMER1_LOAD = 0xFFFFFFFFu;
	DUALTIMER1_CTRL = DUALTIMER_CTRL_EN | DUALTIMER_CTRL_32BIT;
}

uint32_t port_cycles(void)
{
	return ~DUALTIMER1_VALUE;
}

void port_tick_start(void)
{
	TIMER_RELOAD(TIMER1_BASE) = SYSCLK_HZ / 1000u - 1u;
	TIMER_VALUE(TIMER1_BASE) = SYSCLK_HZ / 1000u - 1u;
	TIMER_CTRL(TIMER1_BASE) = TIMER_CTRL_EN | TIMER_CTRL_IRQEN;
	nvic_enable(TIMER1_IRQn, IRQ_PRIO_TICK);
}

void Tick_IRQHandler(void)
{
	TIMER_INTCLEAR(TIMER1_BASE) = 1;
	kernel_tick();
}

static void put_hex(char *out, uint32_t v)
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 7; i >= 0; i--) {
		out[i] = digits[v & 0xFu];
		v >>= 4;
	}
}

void port_panic(const char *what, uint32_t exc, uint32_t pc, uint32_t lr, uint32_t exc_return)
{
	char line[] = "\r\n*** PANIC exc=xxxxxxxx pc=xxxxxxxx lr=xxxxxxxx excret=xxxxxxxx: ";
	__asm volatile("cpsid i" ::: "memory");
	put_hex(strchr(line, '=') + 1, exc);
	put_hex(strstr(line, "pc=") + 3, pc);
	put_hex(strstr(line, "lr=") + 3, lr);
	put_hex(strstr(line, "excret=") + 7, exc_return);
	port_uart_write(line, strlen(line));
	port_uart_write(what, strlen(what));
	port_uart_write("\r\n", 2);
	for (;;) {
		__asm volatile("wfi");
	}
}
