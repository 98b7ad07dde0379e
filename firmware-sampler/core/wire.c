#include "wire.h"

#include <string.h>

/* CRC of each 4-bit value, reflected polynomial 0xEDB88320: a 64-byte
 * table instead of 1 KB, enough for thread-context framing. */
static const uint32_t crc_nibble[16] = {
	0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu,
	0x76DC4190u, 0x6B6B51F4u, 0x4DB26158u, 0x5005713Cu,
	0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu,
	0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu,
};

uint32_t tcmp_crc32(uint32_t crc, const uint8_t *data, size_t len)
{
	crc = ~crc;
	for (size_t i = 0; i < len; i++) {
		crc ^= data[i];
		crc = crc_nibble[crc & 0xFu] ^ (crc >> 4);
		crc = crc_nibble[crc & 0xFu] ^ (crc >> 4);
	}
	return ~crc;
}

size_t tcmp_cobs_encode(const uint8_t *in, size_t len, uint8_t *out)
{
	size_t code_at = 0, o = 1;
	uint8_t code = 1;
	for (size_t i = 0; i < len; i++) {
		if (in[i] != 0) {
			out[o++] = in[i];
			code++;
		}
		if (in[i] == 0 || code == 0xFF) {
			out[code_at] = code;
			code = 1;
			code_at = o;
			/* A full block at the very end needs no empty block after it. */
			if (in[i] == 0 || i + 1 < len)
				o++;
		}
	}
	if (code_at < o)
		out[code_at] = code;
	return o;
}

long tcmp_cobs_decode(const uint8_t *in, size_t len, uint8_t *out, size_t cap)
{
	size_t i = 0, o = 0;
	while (i < len) {
		uint8_t code = in[i++];
		if (code == 0 || (size_t)(code - 1) > len - i)
			return -1;
		for (uint8_t k = 1; k < code; k++) {
			if (in[i] == 0 || o >= cap)
				return -1;
			out[o++] = in[i++];
		}
		if (code != 0xFF && i < len) {
			if (o >= cap)
				return -1;
			out[o++] = 0;
		}
	}
	return (long)o;
}

size_t tcmp_put_varint(uint8_t *out, uint32_t v)
{
	size_t n = 0;
	while (v >= 0x80u) {
		out[n++] = (uint8_t)(v | 0x80u);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

void tcmp_frame_begin(struct tcmp_frame *f, uint8_t type)
{
	f->payload[0] = type;
	f->len = 1;
}

void tcmp_frame_u8(struct tcmp_frame *f, uint8_t v)
{
	f->payload[f->len++] = v;
}

void tcmp_frame_u16(struct tcmp_frame *f, uint16_t v)
{
	tcmp_put_u16(&f->payload[f->len], v);
	f->len += 2;
}

void tcmp_frame_u32(struct tcmp_frame *f, uint32_t v)
{
	tcmp_put_u32(&f->payload[f->len], v);
	f->len += 4;
}

void tcmp_frame_bytes(struct tcmp_frame *f, const uint8_t *p, size_t n)
{
	if (n != 0)
		memcpy(&f->payload[f->len], p, n);
	f->len += n;
}

void tcmp_frame_varint(struct tcmp_frame *f, uint32_t v)
{
	f->len += tcmp_put_varint(&f->payload[f->len], v);
}

size_t tcmp_frame_seal(struct tcmp_frame *f, uint8_t *out)
{
	tcmp_frame_u32(f, tcmp_crc32(0, f->payload, f->len));
	out[0] = 0;
	size_t n = 1 + tcmp_cobs_encode(f->payload, f->len, &out[1]);
	out[n++] = 0;
	return n;
}
