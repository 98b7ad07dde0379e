/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Boot of the Teensy-shaped QEMU image: a two-word stub at 0x0 (ITCM), the
 * real vector table and the reset path in "flash" at 0x60000000.
 *
 * The order follows Zephyr on the i.MX RT (z_arm_reset -> z_prep_c ->
 * arch_data_copy, z_bss_zero): point VTOR at the flash vector table, copy
 * the ITCM code and the initialised data from their load addresses in
 * flash, zero the bss sections, then enter main. Everything here runs
 * before ITCM holds any code, so Reset_Handler and boot_copy must stay in
 * flash: a placement plan that moves them into ITCM makes the image
 * unbootable, just as on the board.
 */
#include <stdint.h>

#include "cmsdk.h"
#include "port.h"
#include "tcmprof_sampler.h"

extern uint32_t __stack_top[];
extern const uint32_t __vector_table[];
extern uint32_t __itcm_start[], __itcm_end[];
extern const uint32_t __itcm_load_start[];
extern uint32_t __data_start[], __data_end[];
extern const uint32_t __data_load_start[];
extern uint32_t __bss_start[], __bss_end[];
extern uint32_t __dtcm_bss_start[], __dtcm_bss_end[];

int main(void);
void Reset_Handler(void);

/*
 * What the core fetches at reset: the initial SP and the reset vector. On
 * the board the boot ROM finds the flash image; in QEMU the core resets with
 * VTOR = 0, so these two words are the only thing that must be at 0x0 before
 * the copy.
 */
__attribute__((section(".boot_stub"), used)) const void *const boot_stub[2] = {
	__stack_top,
	Reset_Handler,
};

/*
 * Plain word loops rather than memcpy/memset: the copy must not depend on
 * library code that a placement plan could move into the ITCM it fills. The
 * optimize attribute keeps GCC from turning the loops back into those calls.
 */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) void boot_copy(
	uint32_t *dst, const uint32_t *src, const uint32_t *dst_end)
{
	while (dst < dst_end) {
		*dst++ = *src++;
	}
}

__attribute__((optimize("no-tree-loop-distribute-patterns"))) void boot_zero(
	uint32_t *dst, const uint32_t *dst_end)
{
	while (dst < dst_end) {
		*dst++ = 0;
	}
}

__attribute__((noreturn)) void Reset_Handler(void)
{
	__asm volatile("cpsid i" ::: "memory");
	SCB_VTOR = (uint32_t)__vector_table;
	boot_copy(__itcm_start, __itcm_load_start, __itcm_end);
	boot_copy(__data_start, __data_load_start, __data_end);
	boot_zero(__bss_start, __bss_end);
	boot_zero(__dtcm_bss_start, __dtcm_bss_end);
	/* The copied code must be visible to instruction fetch before it runs. */
	__asm volatile("dsb\n\tisb" ::: "memory");
	main();
	for (;;) {
		__asm volatile("wfi");
	}
}

/* A fault prints where it happened so a broken image fails loudly in tests. */
__attribute__((used)) void fault_report(const uint32_t *frame, uint32_t exc_return)
{
	uint32_t ipsr;
	__asm volatile("mrs %0, ipsr" : "=r"(ipsr));
	port_panic("fault", ipsr & 0x1FFu, frame[6], frame[5], exc_return);
}

__attribute__((naked)) void Fault_Handler(void)
{
	__asm volatile("tst lr, #4\n\t"
		       "ite eq\n\t"
		       "mrseq r0, msp\n\t"
		       "mrsne r0, psp\n\t"
		       "mov r1, lr\n\t"
		       "b fault_report\n\t");
}

void Unused_Handler(void)
{
	uint32_t ipsr;
	__asm volatile("mrs %0, ipsr" : "=r"(ipsr));
	port_panic("unexpected exception", ipsr & 0x1FFu, 0, 0, 0);
}

void PendSV_Handler(void) __attribute__((weak, alias("Unused_Handler")));
void SVC_Handler(void) __attribute__((weak, alias("Unused_Handler")));
void SysTick_Handler(void) __attribute__((weak, alias("Unused_Handler")));
void Tick_IRQHandler(void) __attribute__((weak, alias("Unused_Handler")));
void UART0_RX_IRQHandler(void) __attribute__((weak, alias("Unused_Handler")));
/* The demo's USB controller model, pended by software (drv/ehci.c). */
#define EHCI_IRQn 31
void EHCI_IRQHandler(void) __attribute__((weak, alias("Unused_Handler")));

#define VECTOR_COUNT (16 + 32)

/* The vector table VTOR points at; 256-byte aligned because it has 48 entries. */
__attribute__((section(".vectors"), used, aligned(256))) const void *const __vector_table_entries[VECTOR_COUNT] = {
	[0] = __stack_top,
	[1] = Reset_Handler,
	[2] = Fault_Handler, /* NMI */
	[3] = Fault_Handler, /* HardFault */
	[4] = Fault_Handler, /* MemManage */
	[5] = Fault_Handler, /* BusFault */
	[6] = Fault_Handler, /* UsageFault */
	[7 ... 10] = Unused_Handler,
	[11] = SVC_Handler,
	[12 ... 13] = Unused_Handler,
	[14] = PendSV_Handler,
	[15] = SysTick_Handler,
	[16 + UART0_RX_IRQn] = UART0_RX_IRQHandler,
	[16 + 1 ... 16 + 7] = Unused_Handler,
	/* The sampler's naked entry in ITCM, straight from the vector. */
	[16 + TIMER0_IRQn] = tcmp_sample_isr,
	[16 + TIMER1_IRQn] = Tick_IRQHandler,
	[16 + 10 ... 16 + 30] = Unused_Handler,
	[16 + EHCI_IRQn] = EHCI_IRQHandler,
};
