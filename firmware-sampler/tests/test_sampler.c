#include "check.h"
#include "fake_port.h"
const struct test_case sampler_tests[] = {
	{NULL, NULL},
};
