/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The wire below the commands: CRC, COBS, frames and the three record
 * codings (protocol.md §3). Some 700 lines because the codings share one
 * coder state and its helpers (varints, zigzag, the thread table); split,
 * each file would export them to the others.
 */
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

/* Unsigned LEB128 of up to 64 bits: the codes of coding 1's PCs (33 bits)
 * and of coding 2 (up to 39). */
static size_t put_varint_long(uint8_t *out, uint64_t v)
{
	size_t n = 0;
	while (v > 0xFFFFFFFFu) {
		out[n++] = (uint8_t)(v | 0x80u);
		v >>= 7;
	}
	/* The rest in 32 bits: a 64-bit shift is a call or three
	 * instructions on the M7, and most codes fit 32 bits. */
	uint32_t w = (uint32_t)v;
	while (w >= 0x80u) {
		out[n++] = (uint8_t)(w | 0x80u);
		w >>= 7;
	}
	out[n++] = (uint8_t)w;
	return n;
}

/* put_varint_long with the one-byte case inline: most of coding 2's
 * codes (dictionary hits, run lengths, thread places) are one byte. */
static inline __attribute__((always_inline)) size_t put_varint64(uint8_t *out, uint64_t v)
{
	if (v < 0x80u) {
		*out = (uint8_t)v;
		return 1;
	}
	return put_varint_long(out, v);
}

size_t tcmp_put_varint(uint8_t *out, uint32_t v)
{
	return put_varint_long(out, v);
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

void tcmp_encode_header(struct tcmp_frame *f, const struct tcmp_status *st, uint32_t cpu_hz,
			uint32_t timer_hz, const uint8_t *build_id, uint8_t build_id_len)
{
	tcmp_frame_begin(f, TCMP_FRAME_HEADER);
	tcmp_frame_u8(f, TCMP_PROTO_MAJOR);
	tcmp_frame_u8(f, TCMP_PROTO_MINOR);
	tcmp_frame_u8(f, TCMP_SAMPLER_VERSION_MAJOR);
	tcmp_frame_u8(f, TCMP_SAMPLER_VERSION_MINOR);
	tcmp_frame_u8(f, TCMP_SAMPLER_VERSION_PATCH);
	tcmp_frame_u8(f, st->state);
	tcmp_frame_u8(f, st->mode);
	tcmp_frame_u8(f, st->fields);
	tcmp_frame_u8(f, st->jitter_pct);
	tcmp_frame_u8(f, st->coding); /* reserved (0) before 1.2 */
	tcmp_frame_u32(f, cpu_hz);
	tcmp_frame_u32(f, timer_hz);
	tcmp_frame_u32(f, st->mean_interval_ticks);
	tcmp_frame_u32(f, st->capacity);
	tcmp_frame_u32(f, st->taken);
	tcmp_frame_u32(f, st->dropped);
	tcmp_frame_u32(f, st->stored);
	tcmp_frame_u32(f, st->held_from);
	if (build_id == NULL || build_id_len > TCMP_MAX_BUILD_ID)
		build_id_len = build_id == NULL ? 0 : TCMP_MAX_BUILD_ID;
	tcmp_frame_u8(f, build_id_len);
	tcmp_frame_bytes(f, build_id, build_id_len);
	tcmp_frame_u8(f, st->stack_words); /* appended in 1.1 */
}

void tcmp_encode_end(struct tcmp_frame *f, uint8_t reason, uint32_t first, uint32_t end,
		     uint32_t taken, uint32_t dropped, uint32_t stored)
{
	tcmp_frame_begin(f, TCMP_FRAME_END);
	tcmp_frame_u8(f, reason);
	tcmp_frame_u32(f, first);
	tcmp_frame_u32(f, end);
	tcmp_frame_u32(f, taken);
	tcmp_frame_u32(f, dropped);
	tcmp_frame_u32(f, stored);
}

void tcmp_encode_reply(struct tcmp_frame *f, uint8_t command, uint8_t status)
{
	tcmp_frame_begin(f, TCMP_FRAME_REPLY);
	tcmp_frame_u8(f, command);
	tcmp_frame_u8(f, status);
}

/* Offset of the u16 record count in a DATA payload (after type, first). */
#define DATA_COUNT_AT 5u

void tcmp_data_begin(struct tcmp_data_enc *e, struct tcmp_frame *f, uint8_t fields, uint8_t coding,
		     uint32_t first, struct tcmp_v14 *v14, int continues)
{
	e->f = f;
	e->fields = fields;
	e->coding = coding;
	e->count = 0;
	e->prev = (struct tcmp_record){0};
	memset(e->pcs, 0, sizeof e->pcs);
	e->v14 = v14;
	tcmp_frame_begin(f, TCMP_FRAME_DATA);
	tcmp_frame_u32(f, first);
	tcmp_frame_u16(f, 0);
	if (coding == TCMP_CODING_V14) {
		if (!continues)
			memset(v14, 0, sizeof *v14);
		tcmp_frame_u8(f, continues ? 1u : 0u);
	}
}

/* zigzag(halfword delta) of two PCs, the code of every PC distance: the
 * halfword delta of d = pc - prev is d shifted right arithmetically, and
 * its zigzag (that << 1, xor the sign) is d without bit 0, xor the sign:
 * two instructions instead of six. */
static uint32_t pc_distance(uint32_t pc, uint32_t prev)
{
	const uint32_t d = pc - prev;
	return (d & ~1u) ^ (0u - (d >> 31));
}

static size_t varint_len(uint32_t v)
{
	size_t n = 1;
	while (v >= 0x80u) {
		v >>= 7;
		n++;
	}
	return n;
}

/* The V12 PC code: zigzag(halfword delta from the nearest of the last
 * TCMP_PC_SLOTS PCs) above the slot's number in two bits; the nearest is
 * the one with the smallest zigzag value, the newest of equals. Up to 33
 * bits, so a 64-bit varint (still at most 5 bytes). */
static size_t put_nearest_pc(uint8_t *out, const struct tcmp_data_enc *e, uint32_t pc)
{
	uint32_t best = 0xFFFFFFFFu, slot = 0;
	for (uint32_t j = 0; j < TCMP_PC_SLOTS; j++) {
		uint32_t v = pc_distance(pc, e->pcs[j]);
		if (v < best) {
			best = v;
			slot = j;
		}
	}
	return put_varint64(out, (uint64_t)best << 2 | slot);
}

/* Writes varint(v) at out + at when out is not NULL; returns its length. */
static size_t emit_varint(uint8_t *out, size_t at, uint32_t v)
{
	return out != NULL ? tcmp_put_varint(out + at, v) : varint_len(v);
}

/* The word of ref at address addr, when ref covers it. */
static int ref_word(const struct tcmp_stack_ref *ref, uint32_t addr, uint32_t *word)
{
	if (ref == NULL)
		return 0;
	uint32_t off = addr - ref->sp; /* wraps to a large value below sp */
	if (off >= 4u * ref->n)
		return 0;
	*word = ref->words[off / 4u];
	return 1;
}

/* Word i of r equals the reference's word at the same address. */
static int same_word(const struct tcmp_record *r, uint32_t i, const struct tcmp_stack_ref *ref)
{
	uint32_t w;
	return ref_word(ref, r->sp + 4u * i, &w) && w == r->stack[i];
}

/*
 * The runs of r's stack words against ref (protocol.md, STACK): pairs of
 * varint(same), varint(diff) and diff literal words, each
 * varint(zigzag(word - the reference's word at its address, or 0)).
 * Writes them at out (when not NULL) and returns their length.
 */
static size_t code_stack_words(uint8_t *out, const struct tcmp_record *r, const struct tcmp_stack_ref *ref)
{
	size_t len = 0;
	uint32_t i = 0;
	while (i < r->n) {
		uint32_t same = 0, diff = 0;
		while (i + same < r->n && same_word(r, i + same, ref))
			same++;
		while (i + same + diff < r->n && !same_word(r, i + same + diff, ref))
			diff++;
		len += emit_varint(out, len, same);
		len += emit_varint(out, len, diff);
		for (uint32_t k = i + same; k < i + same + diff; k++) {
			uint32_t base = 0;
			ref_word(ref, r->sp + 4u * k, &base);
			len += emit_varint(out, len, tcmp_zigzag(r->stack[k] - base));
		}
		i += same + diff;
	}
	return len;
}

/* Appends r's STACK part: SP, word count and, with words, the reference
 * that codes them shortest (none first, then the nearest) and the runs. */
static size_t code_stack(uint8_t *out, const struct tcmp_data_enc *e, const struct tcmp_record *r)
{
	size_t len = tcmp_put_varint(out, tcmp_zigzag(r->sp - e->prev.sp));
	len += tcmp_put_varint(out + len, r->n);
	if (r->n == 0)
		return len;
	uint32_t best_ref = 0;
	size_t best = code_stack_words(NULL, r, NULL);
	uint32_t window = e->count < TCMP_STACK_REF_WINDOW ? e->count : TCMP_STACK_REF_WINDOW;
	for (uint32_t back = 1; back <= window; back++) {
		const struct tcmp_stack_ref *ref = &e->refs[(e->count - back) % TCMP_STACK_REF_WINDOW];
		/* A stack it does not overlap codes as long as none: skip it. */
		if (ref->n == 0 || (ref->sp - r->sp >= 4u * r->n && r->sp - ref->sp >= 4u * ref->n))
			continue;
		size_t n = code_stack_words(NULL, r, ref);
		if (n < best) {
			best = n;
			best_ref = back;
		}
	}
	len += tcmp_put_varint(out + len, best_ref);
	const struct tcmp_stack_ref *ref =
		best_ref != 0 ? &e->refs[(e->count - best_ref) % TCMP_STACK_REF_WINDOW] : NULL;
	return len + code_stack_words(out + len, r, ref);
}

/* r's thread as the run sends it: the ISR stores the current thread in
 * every STACK record, but without the THREAD field the host sees 0. */
static uint32_t record_thread(const struct tcmp_data_enc *e, const struct tcmp_record *r)
{
	return (e->fields & TCMP_FIELD_THREAD) ? r->thread : 0u;
}

/*
 * V12's reference of r: the nearest of the TCMP_STACK_REF_WINDOW records
 * before it of the same thread whose words overlap r's (without the THREAD
 * field every thread is 0), or NULL. Overlap keeps a thread's handler-mode
 * samples (interrupt stack) apart from its own stack's.
 */
static const struct tcmp_stack_ref *thread_ref(const struct tcmp_data_enc *e, const struct tcmp_record *r)
{
	uint32_t window = e->count < TCMP_STACK_REF_WINDOW ? e->count : TCMP_STACK_REF_WINDOW;
	for (uint32_t back = 1; back <= window; back++) {
		const struct tcmp_stack_ref *ref = &e->refs[(e->count - back) % TCMP_STACK_REF_WINDOW];
		if (ref->thread == record_thread(e, r) && (uint64_t)ref->sp < (uint64_t)r->sp + 4u * r->n &&
		    (uint64_t)r->sp < (uint64_t)ref->sp + 4u * ref->n)
			return ref;
	}
	return NULL;
}

/*
 * V12's STACK part (protocol.md): SP and n as in V10, then with words
 * varint(common) and the literals. `below` are r's words under the
 * reference's top, `common` how many of them, down from the highest, equal
 * the reference's words at their addresses; every other word is a literal
 * against the reference's word at its address (0 where it has none).
 */
static size_t code_thread_stack(uint8_t *out, const struct tcmp_data_enc *e, const struct tcmp_record *r)
{
	size_t len = tcmp_put_varint(out, tcmp_zigzag(r->sp - e->prev.sp));
	len += tcmp_put_varint(out + len, r->n);
	if (r->n == 0)
		return len;
	const struct tcmp_stack_ref *ref = thread_ref(e, r);
	uint32_t below = 0, common = 0, w;
	if (ref != NULL) {
		int64_t top = (int64_t)ref->sp + 4 * (int64_t)ref->n;
		int64_t b = (top - (int64_t)r->sp) / 4;
		below = b < 0 ? 0 : b > (int64_t)r->n ? r->n : (uint32_t)b;
		while (common < below && ref_word(ref, r->sp + 4u * (below - common - 1u), &w) &&
		       w == r->stack[below - common - 1u])
			common++;
	}
	len += tcmp_put_varint(out + len, common);
	for (uint32_t i = 0; i < r->n; i++) {
		if (i >= below - common && i < below)
			continue;
		uint32_t base = 0;
		ref_word(ref, r->sp + 4u * i, &base);
		len += tcmp_put_varint(out + len, tcmp_zigzag(r->stack[i] - base));
	}
	return len;
}

/* ---- Coding V14 (protocol.md §3, coding 2) ---- */

/* V14's PC code: zigzag(halfword delta) from the nearest of the last 32
 * PCs (the smallest, the newest of equals) above that PC's slot. The ring
 * is walked newest first in its two straight pieces, so no index is
 * masked; only a smaller value replaces the best, which keeps the newest
 * of equals. */
static uint64_t v14_pc_code(const struct tcmp_v14 *s, uint32_t pc)
{
	const uint32_t size = 1u << TCMP_V14_PC_BITS, head = s->pc_head;
	uint32_t best = UINT32_MAX, slot = 0;
	for (uint32_t j = 0; j <= head; j++) {
		uint32_t zz = pc_distance(pc, s->pcs[head - j]);
		if (zz < best) {
			best = zz;
			slot = j;
		}
	}
	for (uint32_t j = head + 1u; j < size; j++) {
		uint32_t zz = pc_distance(pc, s->pcs[size + head - j]);
		if (zz < best) {
			best = zz;
			slot = j;
		}
	}
	return (uint64_t)best << TCMP_V14_PC_BITS | slot;
}

/* Candidate j of a literal, when its zigzag distance to w is below *best
 * (so the lowest-numbered of equals stays): the new best and slot. */
static inline __attribute__((always_inline)) void v14_nearer(uint32_t w, uint32_t c, uint32_t j, uint32_t *best,
							     uint32_t *slot)
{
	const uint32_t zz = tcmp_zigzag(w - c);
	if (zz < *best) {
		*best = zz;
		*slot = j;
	}
}

/* V14's code of literal w against its near candidates: zigzag(w - c) of
 * the nearest, c0 (the reference's word), c1 (the word before) or the
 * last 6 literals, the lowest-numbered of equals, above its number.
 * Unrolled: the eight candidates are a fixed set of loads. */
static uint64_t v14_near_code(const struct tcmp_v14_literals *l, uint32_t w, uint32_t c0, uint32_t c1)
{
	const uint32_t *newest = &l->ring[l->head + (1u << TCMP_V14_LIT_BITS)];
	uint32_t best = tcmp_zigzag(w - c0), slot = 0;
	/* Nothing beats an exact match. */
	if (best == 0)
		return 0;
	v14_nearer(w, c1, 1, &best, &slot);
	v14_nearer(w, newest[0], 2, &best, &slot);
	v14_nearer(w, newest[-1], 3, &best, &slot);
	v14_nearer(w, newest[-2], 4, &best, &slot);
	v14_nearer(w, newest[-3], 5, &best, &slot);
	v14_nearer(w, newest[-4], 6, &best, &slot);
	v14_nearer(w, newest[-5], 7, &best, &slot);
	return (uint64_t)best << TCMP_V14_LIT_BITS | slot;
}

/* r's thread and mode as V14 keeps stacks: the thread (0 without THREAD)
 * and handler mode (never without EXC). */
static uint32_t v14_thread(const struct tcmp_data_enc *e, const struct tcmp_record *r)
{
	return (e->fields & TCMP_FIELD_THREAD) ? r->thread : 0u;
}

static uint32_t v14_handler(const struct tcmp_data_enc *e, const struct tcmp_record *r)
{
	return (e->fields & TCMP_FIELD_EXC) && (r->exc & 0x1FFu) != 0;
}

/* The places (in ref_order) of the newest kept stack of r's thread and
 * mode (*last) and of the newest of those whose words overlap r's
 * (*overlap), -1 where there is none: one pass over the kept stacks. */
static void v14_kept(const struct tcmp_data_enc *e, const struct tcmp_record *r, int *last, int *overlap)
{
	const struct tcmp_v14 *s = e->v14;
	const uint32_t thread = v14_thread(e, r), handler = v14_handler(e, r);
	*last = *overlap = -1;
	for (int i = 0; i < s->n_refs; i++) {
		const struct tcmp_v14_stack *k = &s->refs[s->ref_order[i]];
		if (k->thread != thread || k->handler != handler)
			continue;
		if (*last < 0)
			*last = i;
		if ((uint64_t)k->sp < (uint64_t)r->sp + 4u * r->n && (uint64_t)r->sp < (uint64_t)k->sp + 4u * k->n) {
			*overlap = i;
			return;
		}
	}
}

static const struct tcmp_v14_stack *v14_ref(const struct tcmp_v14 *s, int place)
{
	return place < 0 ? NULL : &s->refs[s->ref_order[place]];
}

/* The word of ref at address addr, when ref covers it. */
static int v14_word(const struct tcmp_v14_stack *ref, uint32_t addr, uint32_t *word)
{
	if (ref == NULL)
		return 0;
	uint32_t off = addr - ref->sp;
	if (off >= 4u * ref->n)
		return 0;
	*word = ref->words[off / 4u];
	return 1;
}

/* e->same[i] = word i of r equals ref's at the same address, for every
 * word; e->same[r->n] = 0. The words ref covers are one range of r's: from
 * the first at or above ref's SP (offsets wrap as addresses do) while the
 * offset stays under ref's 4 n. Found first, so that the loop over them
 * compares words and nothing else. */
static void v14_mark_same(struct tcmp_data_enc *e, const struct tcmp_record *r, const struct tcmp_v14_stack *ref)
{
	const uint32_t n = r->n, end = ref != NULL ? 4u * ref->n : 0u;
	uint32_t off = ref != NULL ? r->sp - ref->sp : 0u, lo = 0, hi = 0;
	if (off >= end) {
		/* r starts below ref (or above its top: no word is covered). */
		const uint32_t below = 0u - off;
		lo = below > 4u * n ? n : (below + 3u) / 4u;
		off += 4u * lo;
	}
	if (lo < n && off < end) {
		hi = lo + (end - off + 3u) / 4u;
		if (hi > n)
			hi = n;
	} else {
		lo = n;
	}
	uint8_t *same = e->same;
	const uint32_t *stack = r->stack;
	uint32_t i = 0;
	for (; i < lo; i++)
		same[i] = 0;
	if (i < hi) {
		const uint32_t *words = &ref->words[off / 4u];
		for (; i < hi; i++)
			same[i] = words[i - lo] == stack[i];
	}
	for (; i <= n; i++)
		same[i] = 0;
}

/* A literal's place in the dictionary: the top bits of a multiplicative
 * hash. */
static uint32_t v14_dict_place(uint32_t w)
{
	return (w * 0x9E3779B1u) >> (32u - TCMP_V14_DICT_BITS);
}

/* Makes w the dictionary's word at place, logging the word it replaces
 * (v14_add undoes the record's changes when it does not fit). */
static inline __attribute__((always_inline)) void v14_dict_set(struct tcmp_data_enc *e, uint32_t place, uint32_t w)
{
	uint32_t *slot = &e->v14->lits.dict[place];
	if (*slot == w)
		return;
	e->undo_place[e->n_undo] = (uint8_t)place;
	e->undo_word[e->n_undo] = *slot;
	e->n_undo++;
	*slot = w;
}

/* Word k of r as a literal: its dictionary place above a 1 when the
 * dictionary holds it there, else the code of the nearest of its
 * candidates (ref's word at its address or 0, the word before or 0, the
 * last 6 literals) above a 0. Then it is the newest literal and its
 * place's word. */
static uint64_t v14_literal(struct tcmp_data_enc *e, const struct tcmp_record *r, uint32_t k,
			    const struct tcmp_v14_stack *ref)
{
	struct tcmp_v14_literals *l = &e->v14->lits;
	const uint32_t w = r->stack[k], place = v14_dict_place(w);
	uint64_t code = (uint64_t)place << 1 | 1u;
	if (l->dict[place] != w) {
		uint32_t c0 = 0;
		v14_word(ref, r->sp + 4u * k, &c0);
		code = v14_near_code(l, w, c0, k != 0 ? r->stack[k - 1] : 0u) << 1;
		v14_dict_set(e, place, w);
	}
	l->head = (uint8_t)((l->head + 1u) & ((1u << TCMP_V14_LIT_BITS) - 1u));
	l->ring[l->head] = l->ring[l->head + (1u << TCMP_V14_LIT_BITS)] = w;
	return code;
}

/* V14's LR code in a run with STACK: its dictionary place above a 1 when
 * the dictionary holds it (a return address a stack held before), else
 * zigzag(lr - base) above a 0; then LR is its place's word. */
static uint64_t v14_lr_code(struct tcmp_data_enc *e, uint32_t lr, uint32_t base)
{
	const uint32_t place = v14_dict_place(lr);
	if (e->v14->lits.dict[place] == lr)
		return (uint64_t)place << 1 | 1u;
	v14_dict_set(e, place, lr);
	return (uint64_t)tcmp_zigzag(lr - base) << 1;
}

/* 1 + the place of thread among the recent threads, 0 when it is not. */
static uint32_t v14_thread_place(const struct tcmp_v14 *s, uint32_t thread)
{
	for (uint32_t i = 0; i < s->n_threads; i++)
		if (s->threads[i] == thread)
			return i + 1u;
	return 0;
}

/* The STACK part: SP against last's above n, then runs against the
 * overlapping reference (same runs of at least TCMP_V14_MIN_RUN words),
 * each literal as v14_literal codes it (which changes the literal state).
 * A same run starts where two words in a row equal the reference's (the
 * minimum run, 2) and takes all equal words from there; the literals run
 * up to the next such pair. */
static __attribute__((noinline)) size_t v14_stack(uint8_t *out, struct tcmp_data_enc *e, const struct tcmp_record *r,
			const struct tcmp_v14_stack *last, const struct tcmp_v14_stack *ref)
{
	struct tcmp_v14 *s = e->v14;
	const uint8_t *same_at = e->same;
	size_t len = put_varint64(out, (uint64_t)tcmp_zigzag(r->sp - (last != NULL ? last->sp : s->prev.sp))
						 << TCMP_V14_COUNT_BITS | r->n);
	v14_mark_same(e, r, ref);
	uint32_t i = 0;
	while (i < r->n) {
		uint32_t j = i;
		if (same_at[j] && same_at[j + 1u])
			while (same_at[j])
				j++;
		const uint32_t lits = j;
		while (j < r->n && !(same_at[j] && same_at[j + 1u]))
			j++;
		len += put_varint64(out + len, lits - i);
		len += put_varint64(out + len, j - lits);
		for (uint32_t k = lits; k < j; k++)
			len += put_varint64(out + len, v14_literal(e, r, k, ref));
		i = j;
	}
	return len;
}

/* r in V14: PC, EXC, THREAD, LR, STACK (protocol.md §3, coding 2).
 * Changes only the literal state (the ring and the dictionary, logged for
 * v14_add) and e->ref_place. */
static size_t v14_code(uint8_t *out, struct tcmp_data_enc *e, const struct tcmp_record *r)
{
	struct tcmp_v14 *s = e->v14;
	size_t len = put_varint64(out, v14_pc_code(s, r->pc));
	const uint32_t exc = r->exc & 0x1FFu;
	/* With THREAD too, the thread's place code says whether EXC is 0. */
	const int exc_in_thread = (e->fields & TCMP_FIELD_EXC) && (e->fields & TCMP_FIELD_THREAD);
	if ((e->fields & TCMP_FIELD_EXC) && !exc_in_thread)
		len += tcmp_put_varint(out + len, exc);
	if (e->fields & TCMP_FIELD_THREAD) {
		uint32_t place = v14_thread_place(s, r->thread);
		len += tcmp_put_varint(out + len, exc_in_thread ? place << 1 | (exc != 0) : place);
		if (place == 0)
			len += tcmp_put_varint(out + len, tcmp_zigzag(r->thread - s->prev.thread));
		if (exc_in_thread && exc != 0)
			len += tcmp_put_varint(out + len, exc);
	}
	const struct tcmp_v14_stack *last = NULL;
	if (e->fields & TCMP_FIELD_STACK) {
		int last_place;
		v14_kept(e, r, &last_place, &e->ref_place);
		last = v14_ref(s, last_place);
	}
	if (e->fields & TCMP_FIELD_LR) {
		const uint32_t base = last != NULL ? last->lr : s->prev.lr;
		len += (e->fields & TCMP_FIELD_STACK) ? put_varint64(out + len, v14_lr_code(e, r->lr, base))
						       : tcmp_put_varint(out + len, tcmp_zigzag(r->lr - base));
	}
	if (e->fields & TCMP_FIELD_STACK)
		len += v14_stack(out + len, e, r, last, v14_ref(s, e->ref_place));
	return len;
}

/* After r went into the frame: its thread the newest, its stack kept in
 * place of its reference (or of the oldest), its PC on the ring. */
static void v14_commit(struct tcmp_data_enc *e, const struct tcmp_record *r)
{
	struct tcmp_v14 *s = e->v14;
	if (e->fields & TCMP_FIELD_THREAD) {
		uint32_t i = v14_thread_place(s, r->thread);
		if (i == 0) {
			i = s->n_threads < TCMP_V14_THREADS ? s->n_threads + 1u : TCMP_V14_THREADS;
			if (s->n_threads < TCMP_V14_THREADS)
				s->n_threads++;
		}
		memmove(&s->threads[1], &s->threads[0], (i - 1u) * sizeof s->threads[0]);
		s->threads[0] = r->thread;
	}
	if (e->fields & TCMP_FIELD_STACK) {
		int place = e->ref_place;
		if (place < 0) {
			if (s->n_refs < TCMP_V14_REFS) {
				s->ref_order[s->n_refs] = s->n_refs;
				s->n_refs++;
			}
			place = s->n_refs - 1;
		}
		uint8_t slot = s->ref_order[place];
		memmove(&s->ref_order[1], &s->ref_order[0], (size_t)place);
		s->ref_order[0] = slot;
		struct tcmp_v14_stack *k = &s->refs[slot];
		k->thread = v14_thread(e, r);
		k->handler = v14_handler(e, r);
		k->lr = r->lr;
		k->sp = r->sp;
		k->n = r->n;
		if (r->n != 0)
			memcpy(k->words, r->stack, r->n * sizeof k->words[0]);
	}
	s->pc_head = (uint8_t)((s->pc_head + 1u) & ((1u << TCMP_V14_PC_BITS) - 1u));
	s->pcs[s->pc_head] = r->pc;
	s->prev = *r;
}

/* V14's tcmp_data_add: the record if it fits, and the state after it. */
static int v14_add(struct tcmp_data_enc *e, const struct tcmp_record *r)
{
	struct tcmp_v14_literals *l = &e->v14->lits;
	const int stack = (e->fields & TCMP_FIELD_STACK) != 0;
	if (stack) {
		memcpy(e->ring_saved, l->ring, sizeof e->ring_saved);
		e->head_saved = l->head;
		e->n_undo = 0;
	}
	size_t len = v14_code(e->scratch, e, r);
	if (len > tcmp_frame_room(e->f)) {
		if (stack) {
			memcpy(l->ring, e->ring_saved, sizeof e->ring_saved);
			memcpy(&l->ring[1u << TCMP_V14_LIT_BITS], e->ring_saved, sizeof e->ring_saved);
			l->head = e->head_saved;
			while (e->n_undo > 0) {
				e->n_undo--;
				l->dict[e->undo_place[e->n_undo]] = e->undo_word[e->n_undo];
			}
		}
		return 0;
	}
	tcmp_frame_bytes(e->f, e->scratch, len);
	v14_commit(e, r);
	e->count++;
	return 1;
}

int tcmp_data_add(struct tcmp_data_enc *e, const struct tcmp_record *r)
{
	struct tcmp_frame *f = e->f;
	const int stack = (e->fields & TCMP_FIELD_STACK) != 0;
	if (e->coding == TCMP_CODING_V14)
		return v14_add(e, r);
	if (!stack && tcmp_frame_room(f) < TCMP_MAX_RECORD_BYTES)
		return 0;
	uint8_t *out = e->scratch;
	const int v12 = e->coding == TCMP_CODING_V12;
	size_t len = v12 ? put_nearest_pc(out, e, r->pc)
			 : tcmp_put_varint(out, pc_distance(r->pc, e->prev.pc));
	if (e->fields & TCMP_FIELD_LR)
		len += tcmp_put_varint(out + len, tcmp_zigzag(r->lr - e->prev.lr));
	if (e->fields & TCMP_FIELD_EXC)
		len += tcmp_put_varint(out + len, r->exc & 0x1FFu);
	if (e->fields & TCMP_FIELD_THREAD)
		len += tcmp_put_varint(out + len, tcmp_zigzag(r->thread - e->prev.thread));
	if (stack) {
		len += v12 ? code_thread_stack(out + len, e, r) : code_stack(out + len, e, r);
		if (len > tcmp_frame_room(f))
			return 0;
		e->refs[e->count % TCMP_STACK_REF_WINDOW] =
			(struct tcmp_stack_ref){r->sp, r->n, record_thread(e, r), r->stack};
	}
	tcmp_frame_bytes(f, out, len);
	e->prev = *r;
	memmove(&e->pcs[1], &e->pcs[0], sizeof e->pcs - sizeof e->pcs[0]);
	e->pcs[0] = r->pc;
	e->count++;
	return 1;
}

void tcmp_data_finish(struct tcmp_data_enc *e)
{
	tcmp_put_u16(&e->f->payload[DATA_COUNT_AT], e->count);
}

static size_t thread_name_len(const char *name)
{
	size_t len = 0;
	if (name != NULL)
		while (len < TCMP_MAX_THREAD_NAME && name[len] != '\0')
			len++;
	return len;
}

void tcmp_threads_begin(struct tcmp_frame *f)
{
	tcmp_frame_begin(f, TCMP_FRAME_THREADS);
	tcmp_frame_u8(f, 0);
}

int tcmp_threads_fits(const struct tcmp_frame *f, const char *name)
{
	return f->payload[1] < 255u && tcmp_frame_room(f) >= 5u + thread_name_len(name);
}

void tcmp_threads_add(struct tcmp_frame *f, uint32_t id, const char *name)
{
	size_t len = thread_name_len(name);
	tcmp_frame_u32(f, id);
	tcmp_frame_u8(f, (uint8_t)len);
	tcmp_frame_bytes(f, (const uint8_t *)name, len);
	f->payload[1]++;
}

void tcmp_encode_stack_top(struct tcmp_frame *f, uint32_t id, uint32_t top, const uint32_t *words,
			   uint8_t n)
{
	tcmp_frame_begin(f, TCMP_FRAME_STACK_TOP);
	tcmp_frame_u32(f, id);
	tcmp_frame_u32(f, top);
	tcmp_frame_u8(f, n);
	for (uint8_t i = 0; i < n; i++)
		tcmp_frame_u32(f, words[i]);
}
