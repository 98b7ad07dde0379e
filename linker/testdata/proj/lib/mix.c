/* SPDX-License-Identifier: Apache-2.0 */
/* Built without -ffunction-sections, like newlib's lib_a-memcpy.o: the
   object's plain .text is this one function, which ld can move alone by
   naming that object's .text. */
int plain_mix(int x) { return (x << 3) ^ (x >> 2) ^ 0x5a5a; }
