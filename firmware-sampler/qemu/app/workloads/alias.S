/* SPDX-License-Identifier: Apache-2.0 */
/*
 * WORKLOAD=alias (issue 24): a dozen hot functions of 1 KB of straight-line
 * code whose addresses alias in the I-cache, run round-robin on every
 * echo. The 32 KB 2-way cache maps addresses 16 KB apart to the same set,
 * so the block below lays the functions out in four rows 16 KB apart, three
 * groups to a row: each group's four members share 32 sets, and with two
 * ways every one of their lines misses on every call. Moving one member of
 * a group into ITCM leaves three lines per set, still thrashing; moving two
 * cures the group. A planner that scores functions one at a time sees
 * twelve equally dense functions and cannot tell the two apart.
 *
 * Each function and each gap is a section of its own, in this order in one
 * object, so GNU ld keeps the layout (and a plan can move any function);
 * the gaps are cold bytes that nothing runs, kept by alias_keep.
 */
	.syntax unified
	.thumb

#include "straight.inc"

	.macro ALIAS_FN name
	STRAIGHT_FN \name, eor.w r0, r0, r1, ror #7
	.endm

	/* A row: the three groups' members side by side (3 KB), then 13 KB of
	 * cold bytes up to the next row, 16 KB on. */
	.macro ALIAS_ROW r
	ALIAS_FN alias_g0_m\r
	ALIAS_FN alias_g1_m\r
	ALIAS_FN alias_g2_m\r
	.section .text.alias_gap\r, "ax", %progbits
	.balign 4
alias_gap\r:
	.space 13 * 1024
	.endm

	ALIAS_ROW 0
	ALIAS_ROW 1
	ALIAS_ROW 2
	ALIAS_ROW 3

/* The gaps are referenced from here, so that --gc-sections keeps them. */
	.section .rodata.alias_keep, "a", %progbits
	.balign 4
alias_keep:
	.word alias_gap0, alias_gap1, alias_gap2, alias_gap3

/* void workload_alias(uint32_t seed): every member of every group, group
 * by group within a row, row by row (G0M0 G1M0 G2M0 G0M1 ...). */
	FUNC workload_alias
	push	{r4, lr}
	mov	r1, r0
	ldr	r4, =alias_keep
	.irp m, 0, 1, 2, 3
	bl	alias_g0_m\m
	bl	alias_g1_m\m
	bl	alias_g2_m\m
	.endr
	ldr	r4, [r4]
	pop	{r4, pc}
	.ltorg
	.size workload_alias, . - workload_alias
