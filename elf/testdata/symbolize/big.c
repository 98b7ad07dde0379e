/* SPDX-License-Identifier: Apache-2.0 */
/* Newlib-heavy firmware for the symbolizer benchmark: full printf and
 * scanf (floating point), libm, strftime and qsort pull in tens of KB of
 * library code with DWARF. Linked with other.c and algo.cpp (their O2
 * objects), which provide other_entry, cpp_entry and the ITCM code. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint32_t other_entry(uint32_t x);
uint32_t cpp_entry(uint32_t x);

volatile uint32_t sink;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(void)
{
	char buf[128];
	double v[16];
	for (int i = 0; i < 16; i++)
		v[i] = sin(i * 0.3) * exp(i * 0.01) + pow(1.5, i) + log1p(i) + atan2(i, 3.0);
	qsort(v, 16, sizeof v[0], cmp_double);
	snprintf(buf, sizeof buf, "%.6g %e %lld %s", v[3], v[7], (long long)sink * 1000003, "x");
	double d;
	long long ll;
	sscanf(buf, "%lf %*e %lld", &d, &ll);
	time_t t = (time_t)sink;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S %A %B %j", &tm);
	sink = (uint32_t)d + (uint32_t)ll + (uint32_t)strlen(buf) + other_entry(sink) + cpp_entry(sink);
	printf("%s %f\n", buf, fmod(d, 7.0));
	return 0;
}

/* Full newlib's exit runs the fini array, which wants crti's _fini; we
 * link without start files. */
void _fini(void)
{
}

void _start(void)
{
	exit(main());
}
