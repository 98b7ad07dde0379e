#pragma once
/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The generated <zephyr/version.h> (template version.h.in, read at commit
 * c50bd4a): ZEPHYR_VERSION(a, b, c) = (a << 16) + (b << 8) + c and
 * ZEPHYR_VERSION_CODE, here the version the stand-in build simulates
 * (standin_build.sh passes STANDIN_ZEPHYR_VERSION_CODE). The header is
 * <zephyr/version.h> since 3.7 (PR #63973 namespaced the generated headers).
 */
#define ZEPHYR_VERSION(a, b, c) (((a) << 16) + ((b) << 8) + (c))
#define ZEPHYR_VERSION_CODE STANDIN_ZEPHYR_VERSION_CODE
