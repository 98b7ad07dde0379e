/* SPDX-License-Identifier: Apache-2.0 */
/* BL and BLX immediates over the whole ±16 MB range, both signs, to Thumb
 * and to ARM targets, with BLX at word-aligned and halfword-aligned
 * addresses (BLX computes its target from Align(PC, 4)). blx.ld places
 * .far_up ~15 MB above and .far_down ~16 MB below .text. */
	.syntax unified

	.section .far_down, "ax"
	.thumb
	.thumb_func
	.global down_thumb
	.type	down_thumb, %function
down_thumb:
	bx	lr
	.size	down_thumb, . - down_thumb
	.arm
	.align	2
	.global down_arm
	.type	down_arm, %function
down_arm:
	bx	lr

	.size	down_arm, . - down_arm
	.text
	.thumb
	.thumb_func
	.global	caller
	.type	caller, %function
caller:
	push	{r4, lr}
	bl	near_thumb
	nop
	bl	down_thumb
	blx	down_arm
	nop
	blx	down_arm
	bl	up_thumb
	blx	up_arm
	nop
	blx	up_arm
	blx	near_arm
	nop
	blx	near_arm
	ldr	r3, =near_thumb
	blx	r3
	mov	r4, r3
	blx	r4
	bl	caller
	pop	{r4, pc}
	.ltorg

	.thumb_func
	.size	caller, . - caller
	.type	near_thumb, %function
near_thumb:
	bx	lr
	.size	near_thumb, . - near_thumb
	.arm
	.align	2
	.type	near_arm, %function
near_arm:
	bx	lr

	.size	near_arm, . - near_arm
	.section .far_up, "ax"
	.thumb
	.thumb_func
	.global up_thumb
	.type	up_thumb, %function
up_thumb:
	bl	caller
	bx	lr
	.size	up_thumb, . - up_thumb
	.arm
	.align	2
	.global up_arm
	.type	up_arm, %function
up_arm:
	bx	lr

	.size	up_arm, . - up_arm