/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <zephyr/kernel.h>
struct shell {
	int dummy;
};
typedef int (*shell_cmd_handler)(const struct shell *sh, size_t argc, char **argv);
struct shell_static_entry {
	const char *syntax;
	const char *help;
	const struct shell_static_entry *subcmd;
	shell_cmd_handler handler;
	int mandatory, optional;
};
void shell_print(const struct shell *sh, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void shell_error(const struct shell *sh, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
unsigned long shell_strtoul(const char *str, int base, int *err);
#define SHELL_CMD_ARG(syntax, subcmd, help, handler, mand, opt)                                \
	{#syntax, help, subcmd, handler, mand, opt}
#define SHELL_SUBCMD_SET_END {0}
union shell_cmd_entry {
	const struct shell_static_entry *entry;
};
#define SHELL_STATIC_SUBCMD_SET_CREATE(name, ...)                                              \
	static const struct shell_static_entry name##_raw[] = {__VA_ARGS__};                   \
	static const union shell_cmd_entry name = {name##_raw}
#define SHELL_CMD_REGISTER(syntax, subcmd, help, handler)                                      \
	const union shell_cmd_entry *const shell_cmd_##syntax = (subcmd)
