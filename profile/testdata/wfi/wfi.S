/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TestAfterWaitForInterruptOnAssembledCode's six 4-byte cases: the bytes
 * before case i's end are code[4i:4i+4]. The first four end in a WFI or a
 * WFE (16- or 32-bit), the last two in neither.
 */
.syntax unified
.thumb
nop
wfi
nop
wfe
wfi.w
wfe.w
nop.w
nop
nop
