/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sampler core: the interrupt-time sample path (top of the file, ITCM +
 * DTCM) and the thread-context command handling, draining and streaming.
 * docs/core.md explains the design; docs/protocol.md defines the bytes.
 * One file of some 800 lines on purpose: the ISR and the command handling
 * share the core's static state (ring, run counters, stream cursor), and
 * keeping them in one translation unit keeps that state static, with no
 * cross-file symbols for a port to collide with or the linker to place.
 */
#include "tcmprof_sampler.h"

#include <string.h>

#include "wire.h"

#if (TCMP_BUFFER_WORDS & (TCMP_BUFFER_WORDS - 1u)) != 0 || TCMP_BUFFER_WORDS < 64u
#error "TCMP_BUFFER_WORDS must be a power of two, at least 64"
#endif
#if TCMP_MAX_JITTER_PCT >= 100u
#error "TCMP_MAX_JITTER_PCT must stay below 100 so every interval is positive"
#endif

#ifdef TCMP_PORT_TIMER_ACK_NEXT
#define TIMER_ACK_NEXT(ticks) TCMP_PORT_TIMER_ACK_NEXT(ticks)
#else
#define TIMER_ACK_NEXT(ticks) tcmp_port_timer_ack_next(ticks)
#endif

#if TCMP_ENABLE_THREAD
#ifdef TCMP_PORT_CURRENT_THREAD
#define CURRENT_THREAD() TCMP_PORT_CURRENT_THREAD()
#else
#define CURRENT_THREAD() tcmp_port_current_thread()
#endif
#else
#define CURRENT_THREAD() 0u
#endif

#if TCMP_ENABLE_STACK
#ifdef TCMP_PORT_STACK_ROOM
#define STACK_ROOM(exc_return, sp) TCMP_PORT_STACK_ROOM(exc_return, sp)
#else
#define STACK_ROOM(exc_return, sp) tcmp_port_stack_room(exc_return, sp)
#endif
#endif

/* Word indices into the hardware-stacked exception frame. */
#define FRAME_LR 5
#define FRAME_PC 6
#define FRAME_XPSR 7

/*
 * The frame's size in words, by EXC_RETURN bit 4: 8 for the basic frame
 * (r0-r3, r12, lr, pc, xPSR), 26 when it is clear and the frame is the
 * FP-extended one (s0-s15, FPSCR and a reserved word follow). xPSR bit 9
 * says the core inserted one more word to align the frame to 8 bytes.
 */
#define EXC_RETURN_BASIC_FRAME 0x10u
#define FRAME_WORDS 8u
#define FRAME_WORDS_FP 26u
#define XPSR_ALIGNER_BIT 9

/* Words of a record with the STACK field before its K stack words:
 * lr, pc, xpsr, thread, sp, n (the stack words copied). */
#define STACK_RECORD_HEAD 6u
/* words_shift of a STACK run; see isr_state. */
#define STACK_RUN_SHIFT 31u
/* Where the records of a STACK run start: buffer[0] takes the ISR's
 * throw-away PC store (see isr_state), buffer[1] keeps 8-byte alignment. */
#define STACK_RING_START 2u

/*
 * Everything the sample path reads or writes. The thread side prepares it
 * at START (while `running` is 0 and the timer is off) so the ISR only
 * loads precomputed values: no division, no branching on the field set
 * beyond the record size.
 *
 * Records live at buffer[(index << words_shift) & mask]. A record is
 * 1 << words_shift words: [pc], [pc, second] or [pc, lr, xpsr, thread],
 * where `second` is the frame word at `second_word` (LR or xPSR). Record
 * sizes are powers of two, so a record never straddles the end of the ring.
 *
 * A run with the STACK field has records of 6 + K words, [lr, pc, xpsr,
 * thread, sp, n, K stack words], which are no power of two; rounding them
 * up would waste a third of the buffer. store_stack writes them at
 * `stack_slot`, which steps by `stack_record` words and wraps at
 * `stack_end` (the end of the last whole record that fits), so record i
 * lives at buffer[STACK_RING_START + (i % capacity) * stack_record]. Its
 * words_shift, STACK_RUN_SHIFT (31), sends the ISR there from the branch
 * that tells 4-word records from the rest, so the PC-only and 2-word paths
 * pay nothing for it: (stored << 31) & mask is always 0, so the PC store
 * common to all paths lands in buffer[0], which a STACK run leaves unused.
 *
 * `stored` counts the records stored since START; the ISR stores while
 * stored != full_at, which the thread side sets to released + capacity
 * (the stream advances it as frames go out; a snapshot never releases).
 * `left` counts down the samples still to take; the run ends when it
 * reaches 0 (starting from 0 that is after 2^32 samples), so
 * taken = limit - left and dropped = taken - stored need no ISR work.
 */
struct isr_state {
	volatile uint32_t running;
	volatile uint32_t stored;
	volatile uint32_t full_at;
	volatile uint32_t left;
	uint32_t words_shift;    /* log2(words per record); STACK_RUN_SHIFT with STACK */
	uint32_t second_word;    /* frame word stored second in 2-word records */
	uint32_t rng;            /* xorshift32 state, never 0 */
	uint32_t interval_base;  /* mean - half-width, ticks */
	uint32_t interval_span;  /* 2 * half-width + 1: draws are base + mulhi(rng, span) */
#if TCMP_ENABLE_STACK
	uint32_t *stack_slot;    /* where the next STACK record goes */
	uint32_t *stack_end;     /* where stack_slot wraps to stack_start */
	uint32_t *stack_start;   /* &buffer[STACK_RING_START] */
	uint32_t stack_record;   /* words per STACK record: 6 + stack_words */
	uint32_t stack_words;    /* K */
#endif
};

TCMP_DTCM_BSS static struct isr_state isr;
TCMP_DTCM_BSS static uint32_t buffer[TCMP_BUFFER_WORDS] __attribute__((aligned(16)));

/*
 * The sample path's helpers. always_inline, because GCC honours it at every
 * optimisation level (-O0 included), where plain `static inline` functions
 * with two call sites become out-of-line functions in flash .text that the
 * ITCM code reaches through a long-branch veneer.
 */
#define SAMPLE_PATH_INLINE static inline __attribute__((always_inline))

SAMPLE_PATH_INLINE uint32_t next_random(uint32_t r)
{
	r ^= r << 13;
	r ^= r >> 17;
	r ^= r << 5;
	return r;
}

/* Uniform integer in [base, base + span - 1] by a multiply-high. */
SAMPLE_PATH_INLINE uint32_t draw_interval(uint32_t r, uint32_t base, uint32_t span)
{
	return base + (uint32_t)(((uint64_t)r * span) >> 32);
}

#if TCMP_ENABLE_STACK
/*
 * Writes a STACK record at slot: the three frame words from lr (LR, PC,
 * xPSR, consecutive in the stacked frame), thread, sp, n, then the n words
 * at sp. On the M7 in assembly, because every instruction here runs on
 * every sample: one LDM and one STM for the head, then n / 8 blocks of
 * eight words as LDM/STM pairs entered by a computed jump into eight
 * unrolled pairs (no loop counting), then the last n % 8 words in blocks
 * of 4, 2 and 1. GCC writes 4 instructions per word for the loop and at
 * -O2 turns it into a call of memcpy in flash. The operands sit in fixed
 * registers because LDM/STM lists name registers; r7 stays untouched (the
 * frame pointer at -O0). n is at most 64.
 */
SAMPLE_PATH_INLINE void write_stack_record(uint32_t *slot, const uint32_t *lr, uint32_t thread,
					   const uint32_t *sp, uint32_t n)
{
#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__) || defined(__ARM_ARCH_8M_MAIN__)
	register const uint32_t *r_lr __asm__("r0") = lr;
	register uint32_t *r_dst __asm__("r1") = slot;
	register uint32_t r_thread __asm__("r8") = thread;
	register const uint32_t *r_src __asm__("r9") = sp;
	register uint32_t r_n __asm__("r10") = n;
	__asm volatile(
		"ldmia  r0, {r4, r5, r6}\n\t"
		"stmia  r1!, {r4, r5, r6, r8, r9, r10}\n\t"
		"lsrs   r2, r10, #3\n\t"
		"rsb    r2, r2, #8\n\t"
		"lsls   r2, r2, #3\n\t"   /* 8 bytes per block to skip */
		"add    pc, r2\n\t"       /* PC reads as this instruction + 4 */
		"nop\n\t"
		".rept  8\n\t"
		"ldmia.w r9!, {r0, r3, r4, r5, r6, r8, r11, r12}\n\t"
		"stmia.w r1!, {r0, r3, r4, r5, r6, r8, r11, r12}\n\t"
		".endr\n\t"
		/* n % 8 words: bits 2, 1, 0 of n go to bits 31, 30, 29. */
		"lsls   r2, r10, #29\n\t"
		"beq    1f\n\t"
		"lsls   r2, r2, #1\n\t"   /* C = bit 2, N = bit 1 */
		"itt    cs\n\t"
		"ldmiacs r9!, {r3, r4, r5, r6}\n\t"
		"stmiacs r1!, {r3, r4, r5, r6}\n\t"
		"itt    mi\n\t"
		"ldmiami r9!, {r3, r4}\n\t"
		"stmiami r1!, {r3, r4}\n\t"
		"lsls   r2, r2, #1\n\t"   /* N = bit 0 */
		"itt    mi\n\t"
		"ldrmi  r3, [r9]\n\t"
		"strmi  r3, [r1]\n"
		"1:\n"
		: "+r"(r_lr), "+r"(r_dst), "+r"(r_thread), "+r"(r_src), "+r"(r_n)
		:
		: "r2", "r3", "r4", "r5", "r6", "r11", "r12", "cc", "memory");
#else
	slot[0] = lr[0];
	slot[1] = lr[1];
	slot[2] = lr[2];
	slot[3] = thread;
	slot[4] = (uint32_t)(uintptr_t)sp;
	slot[5] = n;
	for (uint32_t i = 0; i < n; i++)
		slot[STACK_RECORD_HEAD + i] = sp[i];
#endif
}

/*
 * The record of a STACK run (see isr_state): the interrupted context's
 * stack pointer is just above the hardware-stacked frame, FP-extended and
 * aligner word included; at most K words are copied from there, never
 * past the top of the stack the port reports. A function of its own, so
 * that only this path saves the registers the copy uses.
 */
static TCMP_ITCM_FUNC void store_stack(const uint32_t *frame, uint32_t exc_return)
{
	uint32_t xpsr = frame[FRAME_XPSR];
	const uint32_t *sp = frame + FRAME_WORDS + ((xpsr >> XPSR_ALIGNER_BIT) & 1u);
	if ((exc_return & EXC_RETURN_BASIC_FRAME) == 0)
		sp += FRAME_WORDS_FP - FRAME_WORDS;
	uint32_t n = STACK_ROOM(exc_return, sp) >> 2;
	if (n > isr.stack_words)
		n = isr.stack_words;
	uint32_t *slot = isr.stack_slot;
	write_stack_record(slot, &frame[FRAME_LR], CURRENT_THREAD(), sp, n);
	slot += isr.stack_record;
	if (slot == isr.stack_end)
		slot = isr.stack_start;
	isr.stack_slot = slot;
}
#endif

/*
 * The record is stored first and the timer acknowledged last, so that the
 * acknowledge is a tail call: no call frame, only a few scratch registers
 * saved (docs/core.md has the instruction counts).
 * The order does not move the next interrupt: the reload value applies to
 * the interval after the running one either way.
 */
TCMP_ITCM_FUNC void tcmp_on_sample(const uint32_t *frame, uint32_t exc_return)
{
	(void)exc_return; /* the entry used it to pick the stack */
	if (isr.running) {
		uint32_t stored = isr.stored;
		if (stored != isr.full_at) {
			uint32_t shift = isr.words_shift;
			uint32_t *slot = &buffer[(stored << shift) & (TCMP_BUFFER_WORDS - 1u)];
			slot[0] = frame[FRAME_PC];
			if (shift != 0) {
				if (shift == 1u) {
					slot[1] = frame[isr.second_word];
				} else if (shift == 2u) {
					slot[1] = frame[FRAME_LR];
					slot[2] = frame[FRAME_XPSR];
					slot[3] = CURRENT_THREAD();
				}
#if TCMP_ENABLE_STACK
				else {
					store_stack(frame, exc_return);
				}
#endif
			}
			isr.stored = stored + 1u;
		}
		uint32_t left = isr.left - 1u;
		isr.left = left;
		if (left == 0)
			isr.running = 0;
	}
	uint32_t r = next_random(isr.rng);
	isr.rng = r;
	TIMER_ACK_NEXT(draw_interval(r, isr.interval_base, isr.interval_span));
}

#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__) || defined(__ARM_ARCH_8M_MAIN__)
/* EXC_RETURN bit 2: 0 = the frame is on MSP, 1 = on PSP. The C code keeps
 * EXC_RETURN in LR (restoring it before its tail call), so the final
 * `bx lr` of the port's ack hook is the exception return. */
TCMP_ITCM_FUNC __attribute__((naked)) void tcmp_sample_isr(void)
{
	__asm volatile(
		"tst   lr, #4\n\t"
		"ite   eq\n\t"
		"mrseq r0, msp\n\t"
		"mrsne r0, psp\n\t"
		"mov   r1, lr\n\t"
		"b     tcmp_on_sample\n\t");
}
#endif

/* ------------------------------------------------------------------------ */
/* Thread context                                                            */
/* ------------------------------------------------------------------------ */

#define DEFAULT_SEED 0x2545F491u

static struct {
	struct tcmp_port_config cfg;
	uint8_t state, mode, fields, jitter_pct;
	uint8_t stack_words; /* K of a STACK run */
	uint8_t coding;      /* TCMP_CODING_* of the run's DATA records */
	/* Nonzero while tcmp_port_write runs: a port may let another thread
	 * call the local-control functions meanwhile (see send()). */
	uint8_t sending;
	uint32_t mean_ticks;
	uint32_t capacity; /* records */
	uint32_t limit;    /* samples the run takes; 0 = 2^32 */
	uint32_t released; /* records below this index are sent (stream) */
	uint32_t stream_batch; /* a stream sends once this many records wait */
	/* Received bytes of the current segment; overflow marks a segment
	 * too long to be a command, answered when its 0x00 arrives. */
	uint8_t rx[TCMP_MAX_ENCODED];
	size_t rx_len;
	int rx_overflow;
	uint8_t cmd[TCMP_MAX_PAYLOAD];
	struct tcmp_frame out;
	struct tcmp_data_enc enc;
	/* Coding V14's chain: its state, the index after the last DATA frame's
	 * records, and the frames sent since the chain's key frame (0: the
	 * next frame is a key). */
	struct tcmp_v14 v14;
	uint32_t chain_next;
	uint32_t chain_frames;
	uint8_t wire[TCMP_MAX_ENCODED + 2u];
} core;

static uint32_t words_shift_for(uint8_t fields)
{
	if (fields & TCMP_FIELD_STACK)
		return STACK_RUN_SHIFT;
	if (fields == TCMP_FIELD_PC)
		return 0;
	if ((fields & TCMP_FIELD_THREAD) == 0 &&
	    (fields & (TCMP_FIELD_LR | TCMP_FIELD_EXC)) != (TCMP_FIELD_LR | TCMP_FIELD_EXC))
		return 1;
	return 2;
}

/* Timer ticks per sample at rate_hz, rounded to nearest; 0 for rate 0. */
static uint32_t mean_interval(uint32_t rate_hz)
{
	if (rate_hz == 0)
		return 0;
	return (uint32_t)(((uint64_t)core.cfg.timer_hz + rate_hz / 2u) / rate_hz);
}

void tcmp_init(const struct tcmp_port_config *cfg)
{
	memset(&isr, 0, sizeof isr);
	memset(&core, 0, sizeof core);
	core.cfg = *cfg;
	isr.rng = cfg->seed != 0 ? cfg->seed : DEFAULT_SEED;
	core.state = TCMP_STATE_IDLE;
	core.fields = TCMP_FIELD_PC;
	core.mean_ticks = mean_interval(cfg->default_rate_hz);
	core.capacity = TCMP_BUFFER_WORDS;
	/* A stray interrupt before the first START still gets a valid interval. */
	isr.interval_base = cfg->max_interval_ticks != 0 ? cfg->max_interval_ticks : 1u;
	isr.interval_span = 1;
}

/*
 * Writes the frame in core.out. A port whose write can wait for the host
 * may let another thread into the local-control functions meanwhile
 * (tcmp_port_write in tcmprof_sampler.h): those never send and, while
 * `sending` is set, change nothing that the output still in progress
 * reads (the frame in core.wire, the records being drained or streamed).
 */
static void send(void)
{
	size_t n = tcmp_frame_seal(&core.out, core.wire);
	core.sending = 1;
	tcmp_port_write(core.wire, n);
	core.sending = 0;
}

/* ELF note: namesz, descsz, type, then name and descriptor, each padded to 4. */
#define NOTE_HEADER_BYTES 12u
#define NT_GNU_BUILD_ID 3u

const uint8_t *tcmp_gnu_build_id(const uint8_t *note, size_t size, uint8_t *len)
{
	*len = 0;
	if (note == NULL || size < NOTE_HEADER_BYTES)
		return NULL;
	uint32_t namesz = tcmp_get_u32(note), descsz = tcmp_get_u32(note + 4);
	size_t desc_at = NOTE_HEADER_BYTES + (((size_t)namesz + 3u) & ~(size_t)3u);
	if (tcmp_get_u32(note + 8) != NT_GNU_BUILD_ID || namesz > size || desc_at > size ||
	    descsz > size - desc_at || descsz == 0 || descsz > TCMP_MAX_BUILD_ID)
		return NULL;
	*len = (uint8_t)descsz;
	return note + desc_at;
}

static void send_reply(uint8_t command, uint8_t status)
{
	tcmp_encode_reply(&core.out, command, status);
	send();
}

void tcmp_get_status(struct tcmp_status *out)
{
	uint32_t left, stored;
	/* The ISR may run between the loads; retry until `left` is stable so
	 * the pair belongs to one moment. */
	do {
		left = isr.left;
		stored = isr.stored;
	} while (left != isr.left);
	uint32_t taken = core.limit - left;
	out->state = core.state;
	out->mode = core.mode;
	out->fields = core.fields;
	out->jitter_pct = core.jitter_pct;
	out->stack_words = core.stack_words;
	out->coding = core.coding;
	out->mean_interval_ticks = core.mean_ticks;
	out->capacity = core.capacity;
	out->taken = taken;
	out->stored = stored;
	out->dropped = taken - stored;
	if (core.state == TCMP_STATE_IDLE)
		out->held_from = stored;
	else
		out->held_from = core.released;
	out->sending = core.sending;
}

static void send_header(void)
{
	struct tcmp_status st;
	tcmp_get_status(&st);
	tcmp_encode_header(&core.out, &st, core.cfg.cpu_hz, core.cfg.timer_hz, core.cfg.build_id,
			   core.cfg.build_id_len);
	send();
}

/* Record i of the run as the encoder sees it. */
static struct tcmp_record record_at(uint32_t i)
{
	const uint32_t shift = words_shift_for(core.fields);
	const uint32_t *w;
	struct tcmp_record r = {0};
	if (shift == STACK_RUN_SHIFT) {
		w = &buffer[STACK_RING_START + (i % core.capacity) * (STACK_RECORD_HEAD + core.stack_words)];
		r.lr = w[0];
		r.pc = w[1];
		r.exc = w[2];
		r.thread = w[3];
		r.sp = w[4];
		r.n = w[5];
		r.stack = &w[STACK_RECORD_HEAD];
		return r;
	}
	w = &buffer[(i << shift) & (TCMP_BUFFER_WORDS - 1u)];
	r.pc = w[0];
	if (shift == 1) {
		if (core.fields & TCMP_FIELD_LR)
			r.lr = w[1];
		else
			r.exc = w[1];
	} else if (shift == 2) {
		r.lr = w[1];
		r.exc = w[2];
		r.thread = w[3];
	}
	return r;
}

/*
 * Encodes records [first, end) into one DATA frame, as many as the room
 * rule lets in (tcmp_data_add), and sends it. Returns the number sent. In
 * coding V14 the frame continues the chain of the frame before when it
 * takes the records after it, but every TCMP_V14_KEY_INTERVAL-th is a key
 * frame, so that a frame the transport loses costs at most the frames up
 * to the next key.
 */
static uint32_t send_data(uint32_t first, uint32_t end)
{
	struct tcmp_data_enc *e = &core.enc;
	uint32_t i = first;
	int continues = core.chain_frames != 0 && core.chain_frames < TCMP_V14_KEY_INTERVAL &&
			first == core.chain_next;

	tcmp_data_begin(e, &core.out, core.fields, core.coding, first, &core.v14, continues);
	for (; i != end; i++) {
		struct tcmp_record r = record_at(i);
		if (!tcmp_data_add(e, &r))
			break;
	}
	tcmp_data_finish(e);
	core.chain_next = i;
	core.chain_frames = continues ? core.chain_frames + 1u : 1u;
	send();
	return i - first;
}

static void send_end(uint8_t reason, uint32_t first, uint32_t end)
{
	struct tcmp_status st;
	tcmp_get_status(&st);
	tcmp_encode_end(&core.out, reason, first, end, st.taken, st.dropped, st.stored);
	send();
}

#if TCMP_ENABLE_THREAD
/* One thread of the port's list: into the THREADS frame, sending the frame
 * first when the entry would not fit. */
static void emit_thread(void *ctx, uint32_t id, const char *name)
{
	(void)ctx;
	if (!tcmp_threads_fits(&core.out, name)) {
		send();
		tcmp_threads_begin(&core.out);
	}
	tcmp_threads_add(&core.out, id, name);
}
#endif

#if TCMP_ENABLE_THREAD && TCMP_ENABLE_STACK
/*
 * One thread's STACK_TOP frame: the words below the top of its stack, read
 * here in thread context (the sample path never could: it may touch only
 * DTCM, and a K-word copy from SP stops far below the top of a thread whose
 * entry function keeps a large frame). They hold the frames that live as
 * long as the thread, so one reading serves every sample of it.
 */
static void emit_stack_top(void *ctx, uint32_t id, const char *name)
{
	(void)ctx;
	(void)name;
	uint32_t size = 0;
	const uint32_t *top = tcmp_port_thread_stack_top(id, &size);
	if (top == NULL)
		return;
	uint32_t n = size / 4u < TCMP_STACK_TOP_WORDS ? size / 4u : TCMP_STACK_TOP_WORDS;
	tcmp_encode_stack_top(&core.out, id, (uint32_t)(uintptr_t)top, top - n, (uint8_t)n);
	send();
}
#endif

/* The thread table of a run with the THREAD field: at least one frame;
 * with STACK too, then each thread's stack top (1.3). */
static void send_threads(void)
{
#if TCMP_ENABLE_THREAD
	if ((core.fields & TCMP_FIELD_THREAD) == 0)
		return;
	tcmp_threads_begin(&core.out);
	tcmp_port_list_threads(emit_thread, NULL);
	send();
#if TCMP_ENABLE_STACK
	if (core.fields & TCMP_FIELD_STACK)
		tcmp_port_list_threads(emit_stack_top, NULL);
#endif
#endif
}

/*
 * Sends the stream records stored before the call, [released, stored), in
 * full frames while at least `min` of them wait; releases each frame's
 * records once written. Records that arrive meanwhile wait for the next
 * call, so a transport slower than the sample rate cannot keep the thread
 * here (the ring then fills and the ISR counts drops).
 */
static void stream_out(uint32_t min)
{
	const uint32_t end = isr.stored;
	while (end != core.released && end - core.released >= min) {
		core.released += send_data(core.released, end);
		isr.full_at = core.released + core.capacity;
	}
}

/* Timer off, ISR idle; afterwards the ISR leaves the buffer alone. */
static void halt(void)
{
	isr.running = 0;
	tcmp_port_timer_stop();
}

/* After halt(): a snapshot holds its records, a stream sends the rest. */
static void finish_run(void)
{
	if (core.mode == TCMP_MODE_SNAPSHOT) {
		core.state = TCMP_STATE_HOLDING;
		return;
	}
	stream_out(1);
	send_threads();
	core.state = TCMP_STATE_IDLE;
	send_end(TCMP_END_STREAM_STOPPED, 0, isr.stored);
}

static uint32_t min_nonzero(uint32_t a, uint32_t b)
{
	if (a == 0)
		return b;
	if (b == 0)
		return a;
	return a < b ? a : b;
}

uint8_t tcmp_start(const struct tcmp_start_args *a)
{
	/* While sending, a new run would overwrite records still being sent. */
	if (core.state != TCMP_STATE_IDLE || core.sending)
		return TCMP_ERR_BUSY;
	if ((a->fields & TCMP_FIELD_PC) == 0 || (a->fields & ~TCMP_FIELD_ALL) != 0)
		return TCMP_ERR_BAD_ARG;
	if (!TCMP_ENABLE_THREAD && (a->fields & TCMP_FIELD_THREAD))
		return TCMP_ERR_BAD_ARG;
	uint32_t stack_words = 0;
	if (a->fields & TCMP_FIELD_STACK) {
		/* The host unwinds from PC, SP and LR: STACK needs LR. */
		stack_words = a->stack_words != 0 ? a->stack_words : TCMP_STACK_WORDS_DEFAULT;
		if (!TCMP_ENABLE_STACK || (a->fields & TCMP_FIELD_LR) == 0 ||
		    stack_words < TCMP_STACK_WORDS_MIN || stack_words > TCMP_STACK_WORDS_MAX)
			return TCMP_ERR_BAD_ARG;
	}
	if (a->mode > TCMP_MODE_STREAM || a->jitter_pct > TCMP_MAX_JITTER_PCT)
		return TCMP_ERR_BAD_ARG;
	uint32_t rate = a->rate_hz != 0 ? a->rate_hz : core.cfg.default_rate_hz;
	if (rate == 0 || rate > core.cfg.timer_hz)
		return TCMP_ERR_BAD_ARG;
	uint32_t mean = mean_interval(rate);
	uint32_t half = (uint32_t)((uint64_t)mean * a->jitter_pct / 100u);
	if (mean - half < core.cfg.min_interval_ticks || mean - half == 0 ||
	    (uint64_t)mean + half > core.cfg.max_interval_ticks)
		return TCMP_ERR_BAD_ARG;
	uint32_t limit = a->count;
	if (a->duration_ms != 0) {
		uint64_t n = (uint64_t)a->duration_ms * rate / 1000u;
		if (n == 0)
			return TCMP_ERR_BAD_ARG; /* shorter than one sample */
		limit = min_nonzero(limit, n > UINT32_MAX ? UINT32_MAX : (uint32_t)n);
	}
	uint32_t shift = words_shift_for(a->fields);
	uint32_t capacity = TCMP_BUFFER_WORDS >> shift;
	if (stack_words != 0)
		capacity = (TCMP_BUFFER_WORDS - STACK_RING_START) / (STACK_RECORD_HEAD + stack_words);
	if (a->mode == TCMP_MODE_SNAPSHOT)
		limit = min_nonzero(limit, capacity);

	isr.running = 0;
	isr.interval_base = mean - half;
	isr.interval_span = 2u * half + 1u;
	isr.stored = 0;
	isr.full_at = capacity;
	isr.left = limit;
	isr.words_shift = shift;
	isr.second_word = (a->fields & TCMP_FIELD_LR) ? FRAME_LR : FRAME_XPSR;
#if TCMP_ENABLE_STACK
	if (stack_words != 0) {
		isr.stack_words = stack_words;
		isr.stack_record = STACK_RECORD_HEAD + stack_words;
		isr.stack_start = &buffer[STACK_RING_START];
		isr.stack_slot = isr.stack_start;
		isr.stack_end = &buffer[STACK_RING_START + capacity * isr.stack_record];
	}
#endif
	core.mode = a->mode;
	core.fields = a->fields;
	core.jitter_pct = a->jitter_pct;
	core.stack_words = (uint8_t)stack_words;
	/* A coding this core does not know is the 1.0 one, as a 1.1 core
	 * ignores the byte; HEADER tells the host which. */
	core.coding = a->coding == TCMP_CODING_V12 || a->coding == TCMP_CODING_V14 ? a->coding : TCMP_CODING_V10;
	core.chain_frames = 0;
	core.mean_ticks = mean;
	core.capacity = capacity;
	core.limit = limit;
	core.released = 0;
	/* A quarter of the ring at most, so that a STACK run's small ring has
	 * room while a batch goes out. */
	core.stream_batch = capacity / 4u < TCMP_STREAM_BATCH ? capacity / 4u + 1u : TCMP_STREAM_BATCH;
	core.state = TCMP_STATE_RUNNING;

	isr.rng = next_random(isr.rng);
	uint32_t first = draw_interval(isr.rng, isr.interval_base, isr.interval_span);
	isr.running = 1;
	tcmp_port_timer_start(first);
	return TCMP_OK;
}

/*
 * A snapshot is held at once. A stream's remaining records, THREADS and END
 * are sent by the next tcmp_poll, in the thread that owns the transport:
 * this may be called while that thread waits in tcmp_port_write.
 */
uint8_t tcmp_stop(void)
{
	if (core.state == TCMP_STATE_RUNNING) {
		halt();
		if (core.mode == TCMP_MODE_SNAPSHOT)
			finish_run();
	}
	return TCMP_OK;
}

uint8_t tcmp_done(void)
{
	/* Not while a DRAIN may still be sending the held records. */
	if (core.state == TCMP_STATE_RUNNING || core.sending)
		return TCMP_ERR_BUSY;
	core.state = TCMP_STATE_IDLE;
	return TCMP_OK;
}

void tcmp_poll(void)
{
	if (core.state != TCMP_STATE_RUNNING)
		return;
	if (!isr.running) {
		/* The ISR ended the run (count, duration, snapshot full). */
		halt();
		finish_run();
		return;
	}
	if (core.mode == TCMP_MODE_STREAM)
		stream_out(core.stream_batch);
}

static void handle_drain(const uint8_t *body, size_t len)
{
	if (len < 8) {
		send_reply(TCMP_CMD_DRAIN, TCMP_ERR_MALFORMED);
		return;
	}
	if (core.state == TCMP_STATE_RUNNING) {
		send_reply(TCMP_CMD_DRAIN, TCMP_ERR_BUSY);
		return;
	}
	uint32_t from = tcmp_get_u32(body), count = tcmp_get_u32(body + 4);
	uint32_t stored = isr.stored;
	uint32_t end = count != 0 ? from + count : stored;
	if (core.state != TCMP_STATE_HOLDING || from > stored || end < from || end > stored) {
		send_reply(TCMP_CMD_DRAIN, TCMP_ERR_UNAVAILABLE);
		return;
	}
	send_header();
	core.chain_frames = 0; /* a DRAIN answer starts with a key frame */
	for (uint32_t i = from; i != end;)
		i += send_data(i, end);
	send_threads();
	send_end(TCMP_END_DRAINED, from, end);
}

/* Executes one decoded, CRC-checked payload. */
static void handle_command(const uint8_t *p, size_t len)
{
	uint8_t type = p[0];
	const uint8_t *body = p + 1;
	size_t body_len = len - 5;

	switch (type) {
	case TCMP_CMD_START: {
		if (body_len < 16) {
			send_reply(type, TCMP_ERR_MALFORMED);
			return;
		}
		struct tcmp_start_args a = {
			.rate_hz = tcmp_get_u32(body),
			.jitter_pct = body[4],
			.fields = body[5],
			.mode = body[6],
			/* Reserved (0) before protocol 1.2. */
			.coding = body[7],
			.count = tcmp_get_u32(body + 8),
			.duration_ms = tcmp_get_u32(body + 12),
			/* Appended in protocol 1.1; a 1.0 host's START has none. */
			.stack_words = body_len > 16 ? body[16] : 0,
		};
		send_reply(type, tcmp_start(&a));
		return;
	}
	case TCMP_CMD_STOP:
		if (core.state == TCMP_STATE_RUNNING) {
			halt();
			send_reply(type, TCMP_OK);
			finish_run();
		} else {
			send_reply(type, TCMP_OK);
		}
		return;
	case TCMP_CMD_STATUS:
		send_header();
		return;
	case TCMP_CMD_DRAIN:
		handle_drain(body, body_len);
		return;
	case TCMP_CMD_DONE:
		send_reply(type, tcmp_done());
		return;
	default:
		send_reply(type, TCMP_ERR_UNKNOWN);
		return;
	}
}

/* A segment between two 0x00 bytes: a command frame, or garbage that is
 * answered with REPLY(0, MALFORMED). */
static void handle_segment(void)
{
	long n = tcmp_cobs_decode(core.rx, core.rx_len, core.cmd, sizeof core.cmd);
	if (n < 5 || tcmp_crc32(0, core.cmd, (size_t)n - 4) != tcmp_get_u32(&core.cmd[n - 4])) {
		send_reply(0, TCMP_ERR_MALFORMED);
		return;
	}
	handle_command(core.cmd, (size_t)n);
}

void tcmp_rx_byte(uint8_t byte)
{
	if (byte != 0) {
		if (core.rx_len < sizeof core.rx)
			core.rx[core.rx_len++] = byte;
		else
			core.rx_overflow = 1;
		return;
	}
	if (core.rx_overflow)
		send_reply(0, TCMP_ERR_MALFORMED);
	else if (core.rx_len != 0)
		handle_segment();
	core.rx_len = 0;
	core.rx_overflow = 0;
}

void tcmp_rx(const uint8_t *data, size_t len)
{
	for (size_t i = 0; i < len; i++)
		tcmp_rx_byte(data[i]);
}
