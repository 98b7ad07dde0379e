/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Two functions without CFI (no .cfi_* directives): copy_words touches
 * neither SP nor LR, like newlib's Cortex-M memcpy, so its return address
 * stays in LR; pushing_sum saves LR on the stack, where nothing says.
 */
	.syntax unified
	.thumb
	.text

	.global copy_words
	.type copy_words, %function
	.thumb_func
copy_words:
1:	cbz	r2, 2f
	ldr	r3, [r1], #4
	str	r3, [r0], #4
	subs	r2, #1
	b	1b
2:	bx	lr
	.size copy_words, .-copy_words

	.global pushing_sum
	.type pushing_sum, %function
	.thumb_func
pushing_sum:
	push	{r4, lr}
	movs	r4, #0
1:	cbz	r1, 2f
	ldr	r3, [r0], #4
	add	r4, r3
	subs	r1, #1
	b	1b
2:	mov	r0, r4
	pop	{r4, pc}
	.size pushing_sum, .-pushing_sum
