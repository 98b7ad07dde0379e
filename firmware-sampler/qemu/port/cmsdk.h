/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Registers of the mps2-an500 peripherals the QEMU port uses.
 *
 * Addresses and interrupt numbers are those QEMU 7.2 gives the mps2-an500
 * machine (hw/arm/mps2.c; `info mtree` in the QEMU monitor shows the same
 * map): CMSDK APB timers 0/1 at 0x40000000/0x40001000 on IRQ 8/9, the CMSDK
 * dual timer at 0x40002000 on IRQ 10, CMSDK UART 0 at 0x40004000 with its RX
 * interrupt on IRQ 0 and TX on IRQ 1. All of them run from the 25 MHz SYSCLK.
 */
#ifndef QEMU_PORT_CMSDK_H
#define QEMU_PORT_CMSDK_H

#include <stdint.h>

#define SYSCLK_HZ 25000000u

#define REG32(addr) (*(volatile uint32_t *)(addr))

/* CMSDK APB timer: counts VALUE down at SYSCLK, interrupts at 0 and reloads RELOAD. */
#define TIMER0_BASE 0x40000000u
#define TIMER1_BASE 0x40001000u
#define TIMER_CTRL(base) REG32((base) + 0x00)
#define TIMER_VALUE(base) REG32((base) + 0x04)
#define TIMER_RELOAD(base) REG32((base) + 0x08)
#define TIMER_INTCLEAR(base) REG32((base) + 0x0C)
#define TIMER_CTRL_EN (1u << 0)
#define TIMER_CTRL_IRQEN (1u << 3)
#define TIMER0_IRQn 8
#define TIMER1_IRQn 9

/* CMSDK APB dual timer, timer 1 used as a free-running 32-bit down counter. */
#define DUALTIMER_BASE 0x40002000u
#define DUALTIMER1_LOAD REG32(DUALTIMER_BASE + 0x00)
#define DUALTIMER1_VALUE REG32(DUALTIMER_BASE + 0x04)
#define DUALTIMER1_CTRL REG32(DUALTIMER_BASE + 0x08)
#define DUALTIMER_CTRL_EN (1u << 7)
#define DUALTIMER_CTRL_32BIT (1u << 1)

/* CMSDK APB UART. QEMU needs BAUDDIV >= 16 before it moves any byte. */
#define UART0_BASE 0x40004000u
#define UART_DATA(base) REG32((base) + 0x00)
#define UART_STATE(base) REG32((base) + 0x04)
#define UART_CTRL(base) REG32((base) + 0x08)
#define UART_INTSTATUS(base) REG32((base) + 0x0C)
#define UART_BAUDDIV(base) REG32((base) + 0x10)
#define UART_STATE_TXFULL (1u << 0)
#define UART_STATE_RXFULL (1u << 1)
#define UART_CTRL_TXEN (1u << 0)
#define UART_CTRL_RXEN (1u << 1)
#define UART_CTRL_RXIRQEN (1u << 3)
#define UART_INT_RX (1u << 1)
#define UART0_RX_IRQn 0

/* System control space. */
#define SCB_ICSR REG32(0xE000ED04u)
#define SCB_VTOR REG32(0xE000ED08u)
#define SCB_AIRCR REG32(0xE000ED0Cu)
#define SCB_SCR REG32(0xE000ED10u)
#define NVIC_ISER(n) REG32(0xE000E100u + 4u * (n))
#define NVIC_ICPR(n) REG32(0xE000E280u + 4u * (n))
#define NVIC_ISPR(n) REG32(0xE000E200u + 4u * (n))
#define NVIC_IPR8(irq) (*(volatile uint8_t *)(0xE000E400u + (irq)))

/*
 * Priorities, in the top bits so that any implemented priority width of 3 or
 * more bits keeps them apart. The sampling timer alone has 0; irq_lock()
 * raises BASEPRI to IRQ_PRIO_KERNEL, which masks everything but the sampler,
 * like Zephyr's zero-latency interrupts.
 */
#define IRQ_PRIO_SAMPLER 0x00u
#define IRQ_PRIO_KERNEL 0x20u
#define IRQ_PRIO_TICK 0x40u
#define IRQ_PRIO_UART_RX 0xC0u

static inline void nvic_enable(int irq, uint8_t prio)
{
	NVIC_IPR8(irq) = prio;
	NVIC_ICPR(irq >> 5) = 1u << (irq & 31);
	NVIC_ISER(irq >> 5) = 1u << (irq & 31);
}

#endif
