/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A minimal test runner for the host tests of the sampler core: each test
 * is a void function; CHECK records a failure and lets the test go on;
 * main() prints "N passed, M failed" last and exits non-zero on failure.
 */
#ifndef TCMP_TEST_CHECK_H
#define TCMP_TEST_CHECK_H

#include <stdio.h>

extern int check_failures; /* failed checks in the running test */

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			check_failures++;                                        \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__,   \
				__LINE__, #cond);                                \
		}                                                                \
	} while (0)

#define CHECK_EQ_U(got, want)                                                    \
	do {                                                                     \
		unsigned long long got_ = (unsigned long long)(got);             \
		unsigned long long want_ = (unsigned long long)(want);           \
		if (got_ != want_) {                                             \
			check_failures++;                                        \
			fprintf(stderr, "%s:%d: %s = %llu (0x%llx), want %llu (0x%llx)\n", \
				__FILE__, __LINE__, #got, got_, got_, want_, want_); \
		}                                                                \
	} while (0)

typedef void (*test_fn)(void);
struct test_case {
	const char *name;
	test_fn fn;
};

/* Each suite file defines a NULL-terminated table. */
extern const struct test_case wire_tests[];
extern const struct test_case golden_tests[];
extern const struct test_case sampler_tests[];
extern const struct test_case stack_tests[];

#endif
