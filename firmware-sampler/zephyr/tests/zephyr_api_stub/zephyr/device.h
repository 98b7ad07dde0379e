/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <zephyr/devicetree.h>
struct device {
	const char *name;
};
bool device_is_ready(const struct device *dev);
#define DEVICE_DT_GET(node) (&DT_CAT(node, _DEVICE))
