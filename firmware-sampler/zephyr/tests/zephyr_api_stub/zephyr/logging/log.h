/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#define LOG_MODULE_REGISTER(name, level) extern int log_##name
#define LOG_MODULE_DECLARE(name, level) extern int log_##name
void z_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define LOG_ERR(...) z_log(__VA_ARGS__)
#define LOG_WRN(...) z_log(__VA_ARGS__)
#define LOG_INF(...) z_log(__VA_ARGS__)
