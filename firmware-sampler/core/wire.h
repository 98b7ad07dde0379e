/* SPDX-License-Identifier: Apache-2.0 */
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

/* ---- Frame encoders (docs/protocol.md section 3) ---- */

/* HEADER from a status snapshot and the port's fixed facts. */
void tcmp_encode_header(struct tcmp_frame *f, const struct tcmp_status *st, uint32_t cpu_hz,
			uint32_t timer_hz, const uint8_t *build_id, uint8_t build_id_len);
void tcmp_encode_end(struct tcmp_frame *f, uint8_t reason, uint32_t first, uint32_t end,
		     uint32_t taken, uint32_t dropped, uint32_t stored);
void tcmp_encode_reply(struct tcmp_frame *f, uint8_t command, uint8_t status);

/*
 * One sample as the encoder sees it; exc is the stacked xPSR (only bits
 * 8:0 are sent) or the exception number itself. With the STACK field, sp
 * is the interrupted stack pointer and stack its first n words.
 */
struct tcmp_record {
	uint32_t pc, lr, exc, thread;
	uint32_t sp, n;
	const uint32_t *stack;
};

/* A stack an encoded record may refer to: an earlier record's. */
struct tcmp_stack_ref {
	uint32_t sp, n, thread;
	const uint32_t *words;
};

/*
 * The state of coding V14, which outlives a DATA frame (protocol.md §3,
 * coding 2): rings of the last PCs and literal stack words, the recent
 * threads, and the last stack of up to TCMP_V14_REFS threads and modes,
 * copied (a stream releases the records it sent). About 2.7 KB.
 */
#define TCMP_V14_PC_BITS 5u
#define TCMP_V14_LIT_BITS 3u
#define TCMP_V14_DICT_BITS 6u
#define TCMP_V14_MIN_RUN 2u
#define TCMP_V14_COUNT_BITS 7u
#define TCMP_V14_THREADS 8u
#define TCMP_V14_REFS 8u
struct tcmp_v14_stack {
	uint32_t thread, handler, lr, sp, n;
	uint32_t words[TCMP_STACK_WORDS_MAX];
};
/* The literal stack words: a ring of the last ones and a dictionary by
 * hash. The ring holds each word twice, at head and head + 8, so that the
 * newest ones are ring[head + 8 - m], in a row, without masking. */
struct tcmp_v14_literals {
	uint32_t ring[2u << TCMP_V14_LIT_BITS];
	uint32_t dict[1u << TCMP_V14_DICT_BITS];
	uint8_t head;
};
struct tcmp_v14 {
	uint32_t pcs[1u << TCMP_V14_PC_BITS];
	struct tcmp_v14_literals lits;
	uint8_t pc_head, n_threads, n_refs;
	uint32_t threads[TCMP_V14_THREADS];     /* the newest first */
	uint8_t ref_order[TCMP_V14_REFS];       /* indices into refs, the newest first */
	struct tcmp_v14_stack refs[TCMP_V14_REFS];
	struct tcmp_record prev;                /* pc, lr, exc, thread, sp of the last record */
};

/*
 * DATA: begin, then add records until tcmp_data_add() says the frame is
 * full, then finish (writes the record count). Each record is coded
 * against records before it (coding, TCMP_CODING_*): in V10 and V12 in the
 * same frame, a stack against one of the TCMP_STACK_REF_WINDOW before it,
 * in V12 the PC against one of the last TCMP_PC_SLOTS; in V14 against the
 * state v14, which a key frame (continues 0) clears and a continuing frame
 * takes as the frame before left it.
 */
#define TCMP_PC_SLOTS 4u
#define TCMP_SCRATCH_BYTES TCMP_MAX_STACK_RECORD_BYTES_V14
struct tcmp_data_enc {
	struct tcmp_frame *f;
	uint8_t fields, coding;
	uint16_t count;
	struct tcmp_record prev;
	uint32_t pcs[TCMP_PC_SLOTS]; /* the last PCs of the frame, the newest first */
	struct tcmp_stack_ref refs[TCMP_STACK_REF_WINDOW]; /* record count - r at [(count - r) % W] */
	struct tcmp_v14 *v14;
	/* V14, for the record being added: the place in ref_order of its
	 * reference (-1: none), found once for coding and keeping; whether
	 * each word equals the reference's at its address (same[n] is 0, the
	 * end of every run); and the undo log of its literals, so that a
	 * record that does not fit leaves the state as it was without a copy
	 * of the whole dictionary per record. */
	int ref_place;
	uint8_t same[TCMP_STACK_WORDS_MAX + 1u];
	uint32_t ring_saved[1u << TCMP_V14_LIT_BITS];
	uint8_t head_saved, n_undo;
	uint8_t undo_place[TCMP_STACK_WORDS_MAX + 1u]; /* the dictionary places written, in order */
	uint32_t undo_word[TCMP_STACK_WORDS_MAX + 1u]; /* and their words before */
	uint8_t scratch[TCMP_SCRATCH_BYTES];
};
void tcmp_data_begin(struct tcmp_data_enc *e, struct tcmp_frame *f, uint8_t fields, uint8_t coding,
		     uint32_t first, struct tcmp_v14 *v14, int continues);
/*
 * Adds r and returns 1 if the frame has room for it, else returns 0 and
 * leaves the frame (and the V14 state) as it was. The room rule
 * (protocol.md, DATA): in V10 and V12 without STACK a record is added
 * while one of the worst case (TCMP_MAX_RECORD_BYTES) still fits, whatever
 * r needs; with STACK, and in V14, while r itself fits.
 */
int tcmp_data_add(struct tcmp_data_enc *e, const struct tcmp_record *r);
void tcmp_data_finish(struct tcmp_data_enc *e);

/*
 * THREADS: begin, then for each thread: if !tcmp_threads_fits() seal and
 * send the frame and begin again; then add. Names longer than
 * TCMP_MAX_THREAD_NAME are cut.
 */
void tcmp_threads_begin(struct tcmp_frame *f);
int tcmp_threads_fits(const struct tcmp_frame *f, const char *name);
void tcmp_threads_add(struct tcmp_frame *f, uint32_t id, const char *name);

/*
 * STACK_TOP (1.3): thread id's stack top and the n words below it (n at
 * most TCMP_STACK_TOP_WORDS; words[0] at top - 4n), one frame a thread.
 */
void tcmp_encode_stack_top(struct tcmp_frame *f, uint32_t id, uint32_t top, const uint32_t *words,
			   uint8_t n);

#endif /* TCMPROF_WIRE_H */
