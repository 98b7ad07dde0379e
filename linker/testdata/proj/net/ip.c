/* SPDX-License-Identifier: Apache-2.0 */
/* Same static name as main.c and drv/ip.c; same object base name as drv/ip.c. */
__attribute__((noinline)) static int dup(int x) { return x * 5; }
int ip_input(int x) { return dup(x) + 1; }
