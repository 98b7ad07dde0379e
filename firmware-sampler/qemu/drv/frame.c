/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Frame copies and the Ethernet FCS on the bus of the controller model: the
 * hardware does them, so all of it is testbench code (port.h).
 */
#include <string.h>

#include "drv.h"
#include "port.h"

/* Slicing-by-4 tables: crc_table[k][b] is the CRC of byte b followed by k zero bytes. */
static uint32_t crc_table[4][256];
static bool crc_table_ready;

TESTBENCH static void crc_table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++) {
			c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
		}
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++) {
		for (unsigned k = 1; k < 4; k++) {
			uint32_t prev = crc_table[k - 1][i];
			crc_table[k][i] = (prev >> 8) ^ crc_table[0][prev & 0xFFu];
		}
	}
	crc_table_ready = true;
}

/* CRC-32 four bytes per step (slicing-by-4), as a MAC's software fallback does. */
TESTBENCH uint32_t frame_crc32(const uint8_t *data, size_t len)
{
	if (!crc_table_ready) {
		crc_table_init();
	}
	uint32_t c = 0xFFFFFFFFu;
	for (; len >= 4; data += 4, len -= 4) {
		c ^= (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
		     (uint32_t)data[3] << 24;
		c = crc_table[3][c & 0xFFu] ^ crc_table[2][(c >> 8) & 0xFFu] ^
		    crc_table[1][(c >> 16) & 0xFFu] ^ crc_table[0][c >> 24];
	}
	for (; len > 0; data++, len--) {
		c = crc_table[0][(c ^ *data) & 0xFFu] ^ (c >> 8);
	}
	return c ^ 0xFFFFFFFFu;
}

TESTBENCH size_t frame_append_fcs(uint8_t *frame, size_t len)
{
	uint32_t fcs = frame_crc32(frame, len);
	memcpy(frame + len, &fcs, 4);
	return len + 4;
}

TESTBENCH bool frame_check_fcs(const uint8_t *frame, size_t len_with_fcs)
{
	if (len_with_fcs < 4) {
		return false;
	}
	uint32_t fcs;
	memcpy(&fcs, frame + len_with_fcs - 4, 4);
	return frame_crc32(frame, len_with_fcs - 4) == fcs;
}

/*
 * The bus's DMA copy. A loop of its own rather than the firmware's memcpy:
 * the hardware's copies must not run (and be modelled as) firmware code.
 */
TESTBENCH size_t frame_copy(uint8_t *dst, size_t dst_size, const uint8_t *src, size_t len)
{
	if (len > dst_size) {
		len = dst_size;
	}
	for (size_t i = 0; i < len; i++) {
		dst[i] = src[i];
	}
	return len;
}
