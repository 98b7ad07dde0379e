/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/*
 * include/zephyr/sys/ring_buffer.h: RING_BUF_DECLARE(name, size8) and
 *   uint32_t ring_buf_put(struct ring_buf *buf, const uint8_t *data, uint32_t size);
 *   uint32_t ring_buf_get(struct ring_buf *buf, uint8_t *data, uint32_t size);
 *   uint32_t ring_buf_peek(struct ring_buf *buf, uint8_t *data, uint32_t size);
 * (ring_buf_get accepts data == NULL to discard). The fields are the host
 * fake's (fake_zephyr.c), not Zephyr's.
 */
#include <stdint.h>
struct ring_buf {
	uint8_t *buffer;
	uint32_t size;
	uint32_t head, tail; /* bytes put and taken, modulo 2^32 */
};
#define RING_BUF_DECLARE(name, size8)                                                          \
	static uint8_t name##_storage[size8];                                                  \
	struct ring_buf name = {name##_storage, size8, 0, 0}
uint32_t ring_buf_put(struct ring_buf *buf, const uint8_t *data, uint32_t size);
uint32_t ring_buf_get(struct ring_buf *buf, uint8_t *data, uint32_t size);
uint32_t ring_buf_peek(struct ring_buf *buf, uint8_t *data, uint32_t size);
