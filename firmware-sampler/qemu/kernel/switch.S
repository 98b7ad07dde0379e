/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cooperative context switch. Threads run in thread mode on PSP, so `sp`
 * here is the thread's stack; interrupts keep using MSP.
 */
	.syntax unified
	.thumb

/* void arch_switch(uint32_t *save_sp, uint32_t new_sp) */
	.section .text.arch_switch, "ax", %progbits
	.global arch_switch
	.type arch_switch, %function
arch_switch:
	push {r4-r11, lr}
	mov r2, sp
	str r2, [r0]
	mov sp, r1
	pop {r4-r11, pc}
	.size arch_switch, . - arch_switch

/*
 * void arch_start_first(uint32_t sp): moves thread mode to PSP, enables
 * interrupts (masked since reset) and runs the first thread.
 */
	.section .text.arch_start_first, "ax", %progbits
	.global arch_start_first
	.type arch_start_first, %function
arch_start_first:
	msr psp, r0
	movs r1, #2
	msr control, r1
	isb
	cpsie i
	pop {r4-r11, pc}
	.size arch_start_first, . - arch_start_first

/* First code of every thread: r4 = entry, r5 = argument (see k_thread_create). */
	.section .text.arch_thread_entry, "ax", %progbits
	.global arch_thread_entry
	.type arch_thread_entry, %function
arch_thread_entry:
	mov r0, r5
	blx r4
	bl k_thread_exit
	.size arch_thread_entry, . - arch_thread_entry
