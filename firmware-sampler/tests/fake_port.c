/* SPDX-License-Identifier: Apache-2.0 */
#include "fake_port.h"

#include <string.h>

#include "check.h"

struct fake_port port;

const struct tcmp_port_config fake_config = {
	.cpu_hz = 600000000u,
	.timer_hz = 24000000u,
	.min_interval_ticks = 240u, /* 100 kHz at most */
	.max_interval_ticks = 0xFFFFFFFFu,
	.default_rate_hz = 10000u,
	.seed = 12345u,
	.build_id = NULL,
	.build_id_len = 0,
};

void tcmp_port_timer_ack_next(uint32_t next_ticks)
{
	port.acks++;
	port.last_ticks = next_ticks;
}

#if TCMP_ENABLE_THREAD
uint32_t tcmp_port_current_thread(void)
{
	return port.current_thread;
}
#endif

#if TCMP_ENABLE_STACK
uint32_t tcmp_port_stack_room(uint32_t exc_return, const uint32_t *sp)
{
	port.stack_exc_return = exc_return;
	if (port.stack_lo == NULL || sp < port.stack_lo || sp > port.stack_hi)
		return 0;
	return (uint32_t)(port.stack_hi - sp) * 4u;
}
#endif

void tcmp_port_timer_start(uint32_t first_ticks)
{
	port.timer_running = 1;
	port.timer_starts++;
	port.first_ticks = first_ticks;
}

void tcmp_port_timer_stop(void)
{
	port.timer_running = 0;
	port.timer_stops++;
}

void tcmp_port_write(const uint8_t *data, size_t len)
{
	/* Only the transport's own thread sends, one frame at a time. */
	CHECK_EQ_U(port.writing, 0);
	port.writing++;
	CHECK(port.out_len + len <= sizeof port.out);
	if (port.out_len + len <= sizeof port.out) {
		memcpy(&port.out[port.out_len], data, len);
		port.out_len += len;
	}
	if (port.during_write != NULL)
		port.during_write();
	port.writing--;
}

#if TCMP_ENABLE_THREAD
void tcmp_port_list_threads(tcmp_thread_emit_fn emit, void *ctx)
{
	for (size_t i = 0; i < port.nthreads; i++)
		emit(ctx, port.threads[i].id, port.threads[i].name);
}

#if TCMP_ENABLE_STACK
const uint32_t *tcmp_port_thread_stack_top(uint32_t id, uint32_t *size)
{
	for (size_t i = 0; i < port.nthreads; i++) {
		const struct fake_thread *t = &port.threads[i];
		if (t->id == id && t->stack != NULL) {
			*size = t->stack_words * 4u;
			return t->stack + t->stack_words;
		}
	}
	return NULL;
}
#endif
#endif

void fake_reset(const struct tcmp_port_config *cfg)
{
	memset(&port, 0, sizeof port);
	tcmp_init(cfg != NULL ? cfg : &fake_config);
}

void fake_sample(uint32_t pc, uint32_t lr, uint32_t xpsr)
{
	uint32_t frame[8] = {0xA0, 0xA1, 0xA2, 0xA3, 0xAC, lr, pc, xpsr};
	tcmp_on_sample(frame, 0xFFFFFFFDu);
}

void fake_sample_frame(const uint32_t *frame, uint32_t exc_return)
{
	tcmp_on_sample(frame, exc_return);
}

/* Bitwise CRC-32/IEEE, independent of the core's table. */
static uint32_t crc32_bitwise(const uint8_t *p, size_t n)
{
	uint32_t crc = 0xFFFFFFFFu;
	for (size_t i = 0; i < n; i++) {
		crc ^= p[i];
		for (int b = 0; b < 8; b++)
			crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
	}
	return ~crc;
}

uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void fake_command(uint8_t type, const uint8_t *body, size_t len)
{
	uint8_t p[600], enc[620];
	p[0] = type;
	if (len != 0)
		memcpy(&p[1], body, len);
	uint32_t crc = crc32_bitwise(p, len + 1);
	for (int i = 0; i < 4; i++)
		p[len + 1 + i] = (uint8_t)(crc >> (8 * i));
	/* COBS by the book: a code byte per run of non-zero bytes. */
	size_t n = len + 5, o = 0;
	enc[o++] = 0;
	size_t code_at = o++;
	uint8_t code = 1;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == 0) {
			enc[code_at] = code;
			code_at = o++;
			code = 1;
		} else {
			enc[o++] = p[i];
			if (++code == 0xFF) {
				enc[code_at] = code;
				code_at = o++;
				code = 1;
			}
		}
	}
	enc[code_at] = code;
	enc[o++] = 0;
	tcmp_rx(enc, o);
}

void fake_start(uint32_t rate, uint8_t jitter, uint8_t fields, uint8_t mode, uint32_t count,
		uint32_t duration_ms)
{
	uint8_t b[16] = {0};
	for (int i = 0; i < 4; i++) {
		b[i] = (uint8_t)(rate >> (8 * i));
		b[8 + i] = (uint8_t)(count >> (8 * i));
		b[12 + i] = (uint8_t)(duration_ms >> (8 * i));
	}
	b[4] = jitter;
	b[5] = fields;
	b[6] = mode;
	fake_command(TCMP_CMD_START, b, sizeof b);
}

void fake_start_stack(uint32_t rate, uint8_t fields, uint8_t mode, uint32_t count, uint8_t stack_words)
{
	uint8_t b[17] = {0};
	for (int i = 0; i < 4; i++) {
		b[i] = (uint8_t)(rate >> (8 * i));
		b[8 + i] = (uint8_t)(count >> (8 * i));
	}
	b[5] = fields;
	b[6] = mode;
	b[16] = stack_words;
	fake_command(TCMP_CMD_START, b, sizeof b);
}

static int uncobs(const uint8_t *in, size_t n, uint8_t *out, size_t *outn)
{
	size_t i = 0, o = 0;
	while (i < n) {
		size_t code = in[i++];
		if (code == 0 || i + code - 1 > n)
			return -1;
		for (size_t k = 1; k < code; k++) {
			if (o >= TCMP_MAX_PAYLOAD)
				return -1;
			out[o++] = in[i++];
		}
		if (code < 0xFF && i < n) {
			if (o >= TCMP_MAX_PAYLOAD)
				return -1;
			out[o++] = 0;
		}
	}
	*outn = o;
	return 0;
}

size_t fake_frames(struct frame *out, size_t max, size_t *bad, int consume)
{
	size_t nf = 0, nbad = 0, start = 0;
	for (size_t i = 0; i <= port.out_len; i++) {
		if (i < port.out_len && port.out[i] != 0)
			continue;
		size_t seg = i - start;
		if (seg != 0) {
			uint8_t p[TCMP_MAX_PAYLOAD];
			size_t n = 0;
			if (i == port.out_len || uncobs(&port.out[start], seg, p, &n) != 0 || n < 5 ||
			    crc32_bitwise(p, n - 4) != le32(&p[n - 4])) {
				nbad++;
			} else if (nf < max) {
				out[nf].type = p[0];
				memcpy(out[nf].p, p, n - 4);
				out[nf].len = n - 4;
				out[nf].wire_len = seg;
				nf++;
			}
		}
		start = i + 1;
	}
	if (bad != NULL)
		*bad = nbad;
	if (consume)
		port.out_len = 0;
	return nf;
}

static uint32_t uvarint(const uint8_t *p, size_t *at, size_t end)
{
	uint32_t v = 0;
	for (int shift = 0; shift < 35 && *at < end; shift += 7) {
		uint8_t b = p[(*at)++];
		v |= (uint32_t)(b & 0x7F) << shift;
		if ((b & 0x80) == 0)
			return v;
	}
	CHECK(!"truncated varint");
	return v;
}

static uint32_t unzigzag(uint32_t z)
{
	return (z >> 1) ^ (0u - (z & 1u));
}

size_t data_records(const struct frame *f, uint8_t fields, uint32_t *first, struct tcmp_record *recs,
		    size_t max)
{
	CHECK(f->type == TCMP_FRAME_DATA);
	*first = le32(&f->p[1]);
	size_t k = (size_t)f->p[5] | (size_t)f->p[6] << 8, at = 7;
	struct tcmp_record prev = {0};
	CHECK(k >= 1 && k <= max);
	for (size_t i = 0; i < k && i < max; i++) {
		struct tcmp_record r = {0};
		r.pc = prev.pc + (unzigzag(uvarint(f->p, &at, f->len)) << 1);
		if (fields & TCMP_FIELD_LR)
			r.lr = prev.lr + unzigzag(uvarint(f->p, &at, f->len));
		if (fields & TCMP_FIELD_EXC)
			r.exc = uvarint(f->p, &at, f->len);
		if (fields & TCMP_FIELD_THREAD)
			r.thread = prev.thread + unzigzag(uvarint(f->p, &at, f->len));
		recs[i] = r;
		prev = r;
	}
	CHECK(at == f->len);
	return k;
}

/* The reference's word at addr, when it covers it. */
static int covered(const struct fake_stack_record *ref, uint32_t addr, uint32_t *word)
{
	if (ref == NULL || addr < ref->r.sp || addr >= ref->r.sp + 4u * ref->r.n)
		return 0;
	*word = ref->words[(addr - ref->r.sp) / 4u];
	return 1;
}

size_t data_stack_records(const struct frame *f, uint8_t fields, uint32_t *first,
			  struct fake_stack_record *recs, size_t max)
{
	CHECK(f->type == TCMP_FRAME_DATA && (fields & TCMP_FIELD_STACK));
	*first = le32(&f->p[1]);
	size_t k = (size_t)f->p[5] | (size_t)f->p[6] << 8, at = 7;
	CHECK(k >= 1 && k <= max);
	uint32_t prev_pc = 0, prev_lr = 0, prev_thread = 0, prev_sp = 0;
	for (size_t i = 0; i < k && i < max; i++) {
		struct fake_stack_record *out = &recs[i];
		memset(out, 0, sizeof *out);
		struct tcmp_record *r = &out->r;
		r->pc = prev_pc = prev_pc + (unzigzag(uvarint(f->p, &at, f->len)) << 1);
		r->lr = prev_lr = prev_lr + unzigzag(uvarint(f->p, &at, f->len));
		if (fields & TCMP_FIELD_EXC)
			r->exc = uvarint(f->p, &at, f->len);
		if (fields & TCMP_FIELD_THREAD)
			r->thread = prev_thread = prev_thread + unzigzag(uvarint(f->p, &at, f->len));
		r->sp = prev_sp = prev_sp + unzigzag(uvarint(f->p, &at, f->len));
		r->n = uvarint(f->p, &at, f->len);
		r->stack = out->words;
		CHECK(r->n <= TCMP_STACK_WORDS_MAX);
		if (r->n == 0 || r->n > TCMP_STACK_WORDS_MAX)
			continue;
		out->ref = uvarint(f->p, &at, f->len);
		CHECK(out->ref <= i && out->ref <= TCMP_STACK_REF_WINDOW);
		const struct fake_stack_record *ref = (out->ref != 0 && out->ref <= i) ? &recs[i - out->ref] : NULL;
		for (uint32_t w = 0; w < r->n;) {
			uint32_t same = uvarint(f->p, &at, f->len), diff = uvarint(f->p, &at, f->len);
			CHECK(same + diff >= 1 && w + same + diff <= r->n);
			if (same + diff == 0 || w + same + diff > r->n)
				break;
			for (uint32_t j = 0; j < same; j++, w++)
				CHECK(covered(ref, r->sp + 4u * w, &out->words[w]));
			for (uint32_t j = 0; j < diff; j++, w++) {
				uint32_t base = 0;
				covered(ref, r->sp + 4u * w, &base);
				out->words[w] = base + unzigzag(uvarint(f->p, &at, f->len));
			}
		}
	}
	CHECK(at == f->len);
	return k;
}
