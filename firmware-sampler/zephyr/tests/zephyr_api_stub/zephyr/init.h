/* SPDX-License-Identifier: Apache-2.0 */
#include <zephyr/kernel.h>
#define SYS_INIT(fn, level, prio) int (*const fn##_init)(void) = (fn)
