/* SPDX-License-Identifier: Apache-2.0 */
/*
 * WORKLOAD=loops (issue 24): small tight loops that stay in the I-cache
 * beside straight-line code that misses on every pass. Six loops of a few
 * instructions run 200 times each per echo: many samples on few bytes, so
 * samples per byte ranks them first, yet in ITCM they gain nothing, as
 * they already hit. Six functions of 1 KB of straight-line code run once
 * per echo and are evicted between echoes by the rest of the echo's code
 * (more than the cache holds): every one of their 32 lines misses every
 * time, so they are what ITCM should take.
 */
	.syntax unified
	.thumb

#include "straight.inc"

	.macro LOOP_FN name
	FUNC \name
	movs	r2, #200
1:	eor.w	r0, r0, r1, ror #3
	adds	r1, r1, #1
	subs	r2, r2, #1
	bne	1b
	bx	lr
	.size \name, . - \name
	.endm

	.irp k, 0, 1, 2, 3, 4, 5
	LOOP_FN loop_k\k
	STRAIGHT_FN straight_k\k, add.w r0, r0, r1, ror #11
	.endr

/* void workload_loops(uint32_t seed): each loop, then each straight run. */
	FUNC workload_loops
	push	{r4, lr}
	mov	r1, r0
	.irp k, 0, 1, 2, 3, 4, 5
	bl	loop_k\k
	.endr
	.irp k, 0, 1, 2, 3, 4, 5
	bl	straight_k\k
	.endr
	pop	{r4, pc}
	.size workload_loops, . - workload_loops
