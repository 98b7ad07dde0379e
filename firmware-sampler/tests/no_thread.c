/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The core built with TCMP_ENABLE_THREAD=0: the THREAD field is refused,
 * the port needs no thread hooks (this binary defines none), and the
 * 4-word layout (PC+LR+EXC) still works. Run by `make test`.
 */
#include <stdlib.h>

#include "check.h"
#include "fake_port.h"

#if TCMP_ENABLE_THREAD
#error "build this test with -DTCMP_ENABLE_THREAD=0"
#endif

int check_failures;

static int start_status(uint8_t fields)
{
	fake_start(10000, 0, fields, TCMP_MODE_SNAPSHOT, 10, 0);
	struct frame f[2];
	size_t n = fake_frames(f, 2, NULL, 1);
	CHECK(n == 1 && f[0].type == TCMP_FRAME_REPLY && f[0].p[1] == TCMP_CMD_START);
	return n == 1 ? f[0].p[2] : -1;
}

int main(void)
{
	fake_reset(NULL);
	CHECK_EQ_U(start_status(TCMP_FIELD_ALL), TCMP_ERR_BAD_ARG);
	CHECK_EQ_U(start_status(TCMP_FIELD_PC | TCMP_FIELD_LR | TCMP_FIELD_EXC), TCMP_OK);
	for (uint32_t i = 0; i < 10; i++)
		fake_sample(0x60000000u + 4 * i, 0xFFFFFFF9u, 0x01000000u | (16 + i));
	tcmp_poll();
	static const uint8_t all[8] = {0};
	fake_command(TCMP_CMD_DRAIN, all, sizeof all);
	static struct frame f[8];
	struct tcmp_record r[16];
	uint32_t first;
	size_t n = fake_frames(f, 8, NULL, 1);
	CHECK_EQ_U(n, 3); /* HEADER, DATA, END: no THREADS */
	if (n == 3) {
		size_t k = data_records(&f[1], TCMP_FIELD_PC | TCMP_FIELD_LR | TCMP_FIELD_EXC, &first, r, 16);
		CHECK_EQ_U(k, 10);
		for (uint32_t i = 0; i < k; i++) {
			CHECK_EQ_U(r[i].pc, 0x60000000u + 4 * i);
			CHECK_EQ_U(r[i].lr, 0xFFFFFFF9u);
			CHECK_EQ_U(r[i].exc, 16 + i);
		}
	}
	printf("%d passed, %d failed\n", check_failures == 0, check_failures != 0);
	return check_failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
