/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdint.h>
#include <zephyr/device.h>
typedef void *clock_control_subsys_t;
int clock_control_on(const struct device *dev, clock_control_subsys_t sys);
int clock_control_get_rate(const struct device *dev, clock_control_subsys_t sys, uint32_t *rate);
