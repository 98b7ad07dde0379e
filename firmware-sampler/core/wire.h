/*
 * Wire-level building blocks of docs/protocol.md: CRC-32/IEEE, COBS,
 * varint/zigzag, little-endian integers and the payload builder. Internal
 * to the core (and its host tests); thread context only, never the ISR.
 */
#ifndef TCMPROF_WIRE_H
#define TCMPROF_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "tcmprof_sampler.h"

/* CRC-32/IEEE (zlib, Go's crc32.ChecksumIEEE): update a running CRC that
 * starts at 0 and is returned finished, so calls can be chained. */
uint32_t tcmp_crc32(uint32_t crc, const uint8_t *data, size_t len);

/* COBS with blocks of at most 254 data bytes, no trailing empty block.
 * out needs len + len/254 + 1 bytes; returns the encoded length. */
size_t tcmp_cobs_encode(const uint8_t *in, size_t len, uint8_t *out);

/* Decodes one segment (no 0x00 inside) into out (cap bytes). Returns the
 * decoded length, or -1 when the segment is not valid COBS or would not
 * fit. Accepts a trailing empty block. */
long tcmp_cobs_decode(const uint8_t *in, size_t len, uint8_t *out, size_t cap);

/* Unsigned LEB128; writes at most 5 bytes, returns the count. */
size_t tcmp_put_varint(uint8_t *out, uint32_t v);

/* zigzag(d) = (d << 1) ^ (d >> 31) with an arithmetic shift. */
static inline uint32_t tcmp_zigzag(uint32_t d)
{
	return (d << 1) ^ (0u - (d >> 31));
}

static inline void tcmp_put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void tcmp_put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t tcmp_get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * A payload under construction: type, body, then tcmp_frame_seal() appends
 * the CRC and produces the bytes on the wire (0x00, COBS, 0x00).
 * Appends past TCMP_MAX_PAYLOAD - 4 are a programming error; the encoder
 * checks sizes before it appends.
 */
struct tcmp_frame {
	uint8_t payload[TCMP_MAX_PAYLOAD];
	size_t len;
};

void tcmp_frame_begin(struct tcmp_frame *f, uint8_t type);
/* Room left for body bytes, keeping 4 for the CRC. */
static inline size_t tcmp_frame_room(const struct tcmp_frame *f)
{
	return TCMP_MAX_PAYLOAD - 4u - f->len;
}
void tcmp_frame_u8(struct tcmp_frame *f, uint8_t v);
void tcmp_frame_u16(struct tcmp_frame *f, uint16_t v);
void tcmp_frame_u32(struct tcmp_frame *f, uint32_t v);
void tcmp_frame_bytes(struct tcmp_frame *f, const uint8_t *p, size_t n);
void tcmp_frame_varint(struct tcmp_frame *f, uint32_t v);

/* Appends the CRC and writes 0x00, COBS(payload), 0x00 into out (at least
 * TCMP_MAX_ENCODED + 2 bytes). Returns the number of bytes written. */
size_t tcmp_frame_seal(struct tcmp_frame *f, uint8_t *out);

#endif /* TCMPROF_WIRE_H */
