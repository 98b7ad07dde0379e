/* SPDX-License-Identifier: Apache-2.0 */
/* Same object base name (ip.o) and static name as net/ip.c. */
__attribute__((noinline)) static int dup(int x) { return x * 7 + 3; }
int drv_poll(int x) { return dup(x) - 1; }
