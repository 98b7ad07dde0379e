/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>

#include "check.h"

int check_failures;

int main(void)
{
	const struct test_case *suites[] = {wire_tests, golden_tests, sampler_tests, stack_tests};
	int passed = 0, failed = 0;
	for (size_t s = 0; s < sizeof suites / sizeof suites[0]; s++) {
		for (const struct test_case *t = suites[s]; t->name != NULL; t++) {
			check_failures = 0;
			t->fn();
			if (check_failures == 0) {
				passed++;
				printf("ok   %s\n", t->name);
			} else {
				failed++;
				printf("FAIL %s (%d checks)\n", t->name, check_failures);
			}
		}
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
