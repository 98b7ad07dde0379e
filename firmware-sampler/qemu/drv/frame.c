/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Frame copies and the Ethernet FCS on the bus of the controller model: the
 * hardware does them, so all of it is testbench code (port.h).
 */
#include <string.h>

#include "drv.h"
#include "port.h"

static uint32_t crc_table[256];
static bool crc_table_ready;

TESTBENCH static void crc_table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++) {
			c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
		}
		crc_table[i] = c;
	}
	crc_table_ready = true;
}

TESTBENCH uint32_t frame_crc32(const uint8_t *data, size_t len)
{
	if (!crc_table_ready) {
		crc_table_init();
	}
	uint32_t c = 0xFFFFFFFFu;
	for (size_t i = 0; i < len; i++) {
		c = crc_table[(c ^ data[i]) & 0xFFu] ^ (c >> 8);
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

TESTBENCH size_t frame_copy(uint8_t *dst, size_t dst_size, const uint8_t *src, size_t len)
{
	if (len > dst_size) {
		len = dst_size;
	}
	memcpy(dst, src, len);
	return len;
}
