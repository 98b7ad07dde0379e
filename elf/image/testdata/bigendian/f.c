/* SPDX-License-Identifier: Apache-2.0 */
/* TestLoadErrors compiles this for a big-endian ARM, which Load refuses. */
int f(int x) { return x + 1; }
