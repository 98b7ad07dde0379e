/* SPDX-License-Identifier: Apache-2.0 */
/* CRC, COBS, varint and zigzag against published and hand-checked values. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "wire.h"

static void test_crc32_known_answers(void)
{
	const uint8_t check[] = "123456789";
	CHECK_EQ_U(tcmp_crc32(0, check, 9), 0xCBF43926u); /* the catalogue check value */
	CHECK_EQ_U(tcmp_crc32(0, NULL, 0), 0);
	const uint8_t fox[] = "The quick brown fox jumps over the lazy dog";
	CHECK_EQ_U(tcmp_crc32(0, fox, sizeof fox - 1), 0x414FA339u);
	/* Chaining equals one pass. */
	CHECK_EQ_U(tcmp_crc32(tcmp_crc32(0, fox, 10), fox + 10, sizeof fox - 11), 0x414FA339u);
}

struct cobs_case {
	size_t n;
	uint8_t in[4];
	size_t en;
	uint8_t enc[6];
};

static void test_cobs_small_vectors(void)
{
	/* From Cheshire & Baker and the usual COBS examples. */
	static const struct cobs_case cases[] = {
		{0, {0}, 1, {0x01}},
		{1, {0x00}, 2, {0x01, 0x01}},
		{2, {0x00, 0x00}, 3, {0x01, 0x01, 0x01}},
		{4, {0x11, 0x22, 0x00, 0x33}, 5, {0x03, 0x11, 0x22, 0x02, 0x33}},
		{4, {0x11, 0x22, 0x33, 0x44}, 5, {0x05, 0x11, 0x22, 0x33, 0x44}},
		{4, {0x11, 0x00, 0x00, 0x00}, 5, {0x02, 0x11, 0x01, 0x01, 0x01}},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint8_t enc[8], dec[8];
		size_t n = tcmp_cobs_encode(cases[i].in, cases[i].n, enc);
		CHECK_EQ_U(n, cases[i].en);
		CHECK(memcmp(enc, cases[i].enc, cases[i].en) == 0);
		CHECK_EQ_U(tcmp_cobs_decode(cases[i].enc, cases[i].en, dec, sizeof dec), cases[i].n);
		CHECK(memcmp(dec, cases[i].in, cases[i].n) == 0);
	}
}

static void test_cobs_block_boundaries(void)
{
	uint8_t in[300], enc[310], dec[300];
	for (int i = 0; i < 255; i++)
		in[i] = (uint8_t)(i + 1);
	/* 254 non-zero bytes: one full block, no empty block after it. */
	size_t n = tcmp_cobs_encode(in, 254, enc);
	CHECK_EQ_U(n, 255);
	CHECK_EQ_U(enc[0], 0xFF);
	CHECK_EQ_U(tcmp_cobs_decode(enc, n, dec, sizeof dec), 254);
	CHECK(memcmp(dec, in, 254) == 0);
	/* ... and a decoder accepts the trailing empty block some encoders add. */
	enc[255] = 0x01;
	CHECK_EQ_U(tcmp_cobs_decode(enc, 256, dec, sizeof dec), 254);
	/* 255 non-zero bytes: FF + 254, then 02 + 1. */
	n = tcmp_cobs_encode(in, 255, enc);
	CHECK_EQ_U(n, 257);
	CHECK_EQ_U(enc[255], 0x02);
	CHECK_EQ_U(enc[256], 0xFF);
	/* A zero then 254 non-zero bytes. */
	uint8_t z[255];
	z[0] = 0;
	memcpy(&z[1], in, 254);
	n = tcmp_cobs_encode(z, 255, enc);
	CHECK_EQ_U(n, 256);
	CHECK_EQ_U(enc[0], 0x01);
	CHECK_EQ_U(enc[1], 0xFF);
	/* The largest payload stays within TCMP_MAX_ENCODED. */
	uint8_t big[TCMP_MAX_PAYLOAD], bigenc[TCMP_MAX_ENCODED + 4];
	memset(big, 0x5A, sizeof big);
	CHECK_EQ_U(tcmp_cobs_encode(big, sizeof big, bigenc), TCMP_MAX_ENCODED);
}

static void test_cobs_roundtrip_random(void)
{
	uint8_t in[TCMP_MAX_PAYLOAD], enc[TCMP_MAX_ENCODED + 4], dec[TCMP_MAX_PAYLOAD];
	srand(7);
	for (int iter = 0; iter < 3000; iter++) {
		size_t n = (size_t)rand() % (TCMP_MAX_PAYLOAD + 1);
		int zeros = rand() % 4; /* 0: none, else about 1 in 2^k bytes is zero */
		for (size_t i = 0; i < n; i++) {
			in[i] = (uint8_t)(rand() & 0xFF);
			if (zeros == 0 && in[i] == 0)
				in[i] = 1;
			if (zeros != 0 && (rand() & ((1 << zeros) - 1)) == 0)
				in[i] = 0;
		}
		size_t en = tcmp_cobs_encode(in, n, enc);
		CHECK(en <= n + n / 254 + 1);
		CHECK(memchr(enc, 0, en) == NULL);
		long dn = tcmp_cobs_decode(enc, en, dec, sizeof dec);
		CHECK_EQ_U(dn, n);
		CHECK(dn < 0 || memcmp(dec, in, n) == 0);
	}
}

static void test_cobs_rejects_invalid(void)
{
	uint8_t dec[16];
	const uint8_t past_end[] = {0x05, 0x11, 0x22};
	CHECK(tcmp_cobs_decode(past_end, sizeof past_end, dec, sizeof dec) < 0);
	const uint8_t zero_code[] = {0x02, 0x11, 0x00, 0x11};
	CHECK(tcmp_cobs_decode(zero_code, sizeof zero_code, dec, sizeof dec) < 0);
	const uint8_t zero_inside[] = {0x03, 0x11, 0x00};
	CHECK(tcmp_cobs_decode(zero_inside, sizeof zero_inside, dec, sizeof dec) < 0);
	const uint8_t too_long[] = {0x05, 1, 2, 3, 4, 0x02, 5};
	CHECK(tcmp_cobs_decode(too_long, sizeof too_long, dec, 5) < 0);
	CHECK_EQ_U(tcmp_cobs_decode(too_long, sizeof too_long, dec, 6), 6);
}

static void test_varint_and_zigzag(void)
{
	uint8_t b[5];
	CHECK_EQ_U(tcmp_put_varint(b, 0), 1);
	CHECK_EQ_U(b[0], 0);
	CHECK_EQ_U(tcmp_put_varint(b, 127), 1);
	CHECK_EQ_U(b[0], 0x7F);
	CHECK_EQ_U(tcmp_put_varint(b, 128), 2);
	CHECK(b[0] == 0x80 && b[1] == 0x01);
	CHECK_EQ_U(tcmp_put_varint(b, 300), 2);
	CHECK(b[0] == 0xAC && b[1] == 0x02);
	CHECK_EQ_U(tcmp_put_varint(b, 0xFFFFFFFFu), 5);
	CHECK(b[0] == 0xFF && b[1] == 0xFF && b[2] == 0xFF && b[3] == 0xFF && b[4] == 0x0F);
	CHECK_EQ_U(tcmp_zigzag(0), 0);
	CHECK_EQ_U(tcmp_zigzag((uint32_t)-1), 1);
	CHECK_EQ_U(tcmp_zigzag(1), 2);
	CHECK_EQ_U(tcmp_zigzag((uint32_t)-2), 3);
	CHECK_EQ_U(tcmp_zigzag(0x7FFFFFFFu), 0xFFFFFFFEu);
	CHECK_EQ_U(tcmp_zigzag(0x80000000u), 0xFFFFFFFFu);
}

const struct test_case wire_tests[] = {
	{"wire/crc32_known_answers", test_crc32_known_answers},
	{"wire/cobs_small_vectors", test_cobs_small_vectors},
	{"wire/cobs_block_boundaries", test_cobs_block_boundaries},
	{"wire/cobs_roundtrip_random", test_cobs_roundtrip_random},
	{"wire/cobs_rejects_invalid", test_cobs_rejects_invalid},
	{"wire/varint_and_zigzag", test_varint_and_zigzag},
	{NULL, NULL},
};
