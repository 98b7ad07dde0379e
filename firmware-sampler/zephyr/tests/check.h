/* SPDX-License-Identifier: Apache-2.0 */
/* A minimal test harness: each test is a function; a failed CHECK marks it failed. */
#ifndef CHECK_H
#define CHECK_H

#include <stdio.h>

static int check_current_failed;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			check_current_failed = 1;                              \
			printf("  %s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__);                                   \
			printf("\n");                                          \
		}                                                              \
	} while (0)

struct check_test {
	const char *name;
	void (*fn)(void);
};

/* Runs the tests, prints "N passed, M failed"; returns the exit status. */
static inline int check_run(const char *suite, const struct check_test *tests, int n)
{
	int passed = 0, failed = 0;

	for (int i = 0; i < n; i++) {
		check_current_failed = 0;
		tests[i].fn();
		if (check_current_failed) {
			printf("FAIL %s/%s\n", suite, tests[i].name);
			failed++;
		} else {
			printf("ok   %s/%s\n", suite, tests[i].name);
			passed++;
		}
	}
	printf("%s: %d passed, %d failed\n", suite, passed, failed);
	return failed ? 1 : 0;
}

#endif
