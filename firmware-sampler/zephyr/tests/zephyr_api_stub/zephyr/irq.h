/* SPDX-License-Identifier: Apache-2.0 */
#include <zephyr/kernel.h>
