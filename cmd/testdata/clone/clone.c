/* SPDX-License-Identifier: Apache-2.0 */
/* run_burst reads one field of the struct it is passed: GCC's IPA-SRA
 * passes that field instead, in a clone run_burst.isra.0. */
struct burst { int pad[3]; int n; };
volatile int sink;
static struct burst b = {{0, 0, 0}, 64};

static __attribute__((noinline)) int run_burst(const struct burst *p)
{
	int s = 0;
	for (int i = 0; i < p->n; i++)
		s += sink * i;
	return s;
}

int main(void)
{
	for (;;)
		sink = run_burst(&b);
}

void _start(void) { main(); }
