/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tcmprof firmware sampler: the portable core.
 *
 * A timer interrupt takes one sample of the interrupted context (PC, and
 * optionally LR, the active exception number, the current thread and a
 * bounded copy of the interrupted stack) and stores it in a buffer meant
 * for DTCM. Thread context speaks the wire
 * protocol of docs/protocol.md with the host: it parses commands, drains the
 * buffer as DATA frames and answers STATUS.
 *
 * The core is split by where the code runs:
 *   - the sample path (tcmp_sample_isr -> tcmp_on_sample -> the timer-ack and
 *     current-thread port hooks) runs in the timer interrupt, must be placed
 *     in ITCM (TCMP_ITCM_FUNC) and touches only DTCM (TCMP_DTCM_BSS); it does
 *     no division, no CRC, never blocks and calls nothing in flash;
 *   - everything else (tcmp_init, tcmp_rx*, tcmp_poll, tcmp_start/stop, the
 *     encoder) runs in one thread and may live in flash.
 *
 * A port provides the hooks declared under "Port interface" below, calls
 * tcmp_init() once, installs the sample entry on a timer interrupt, and from
 * one thread feeds received bytes to tcmp_rx_byte()/tcmp_rx() and calls
 * tcmp_poll() regularly. See docs/core.md.
 */
#ifndef TCMPROF_SAMPLER_H
#define TCMPROF_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

/*
 * A port may pass -DTCMP_PORT_CONFIG_HEADER='"my_port_config.h"' to set the
 * build options below (section macros, buffer size, inline ISR hooks) in
 * one place before their defaults apply.
 */
#ifdef TCMP_PORT_CONFIG_HEADER
#include TCMP_PORT_CONFIG_HEADER
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Build options                                                             */
/* ------------------------------------------------------------------------ */

/*
 * TCMP_ITCM_FUNC marks code the sample path executes; TCMP_DTCM_BSS marks
 * every object the sample path reads or writes (zero-initialised). The
 * defaults fit the QEMU/GCC linker script (.itcm_text.* / .dtcm_bss.*); the
 * Zephyr port maps them to __itcm_section / __dtcm_bss_section. Host builds
 * (no ARM target) leave them empty.
 */
#ifndef TCMP_ITCM_FUNC
#if defined(__arm__)
#define TCMP_ITCM_FUNC __attribute__((section(".itcm_text.tcmp"), noinline))
#else
#define TCMP_ITCM_FUNC
#endif
#endif

#ifndef TCMP_DTCM_BSS
#if defined(__arm__)
#define TCMP_DTCM_BSS __attribute__((section(".dtcm_bss.tcmp")))
#else
#define TCMP_DTCM_BSS
#endif
#endif

/*
 * Size of the sample buffer in 32-bit words; a power of two, at least 64.
 * Default 16384 words = 64 KB = 16384 PC-only records. A record takes
 * 1 word (PC), 2 words (PC+LR or PC+EXC) or 4 words (PC+LR+EXC, or any set
 * with THREAD), so capacity in records = TCMP_BUFFER_WORDS / words. A
 * record with the STACK field takes 6 + K words (K = the run's stack
 * words): capacity = TCMP_BUFFER_WORDS / (6 + K), 431 at the default K 32.
 */
#ifndef TCMP_BUFFER_WORDS
#define TCMP_BUFFER_WORDS 16384u
#endif

/*
 * TCMP_ENABLE_THREAD (default 1): compile in the THREAD field. With 0 the
 * sample path never asks for the current thread, START with the THREAD
 * field is answered BAD_ARG, and tcmp_port_current_thread() /
 * tcmp_port_list_threads() need not exist.
 */
#ifndef TCMP_ENABLE_THREAD
#define TCMP_ENABLE_THREAD 1
#endif

/*
 * TCMP_ENABLE_STACK (default 1): compile in the STACK field (a copy of up to
 * K words of the interrupted stack per sample). With 0 the sample path
 * never reads the stack, START with the STACK field is answered BAD_ARG and
 * tcmp_port_stack_room() need not exist.
 */
#ifndef TCMP_ENABLE_STACK
#define TCMP_ENABLE_STACK 1
#endif

/* Largest jitter a START may ask for, percent (the interval stays > 0). */
#ifndef TCMP_MAX_JITTER_PCT
#define TCMP_MAX_JITTER_PCT 50u
#endif

/*
 * Stream mode sends DATA frames once this many records are waiting, at
 * most a quarter of the ring (and everything that is left when the run
 * ends). Larger = less framing overhead, more latency: 256 fills a frame
 * of PC records (about 230 at 2.2 bytes).
 */
#ifndef TCMP_STREAM_BATCH
#define TCMP_STREAM_BATCH 256u
#endif

/* ------------------------------------------------------------------------ */
/* Protocol constants (docs/protocol.md)                                     */
/* ------------------------------------------------------------------------ */

#define TCMP_PROTO_MAJOR 1u
#define TCMP_PROTO_MINOR 4u
#define TCMP_SAMPLER_VERSION_MAJOR 0u
#define TCMP_SAMPLER_VERSION_MINOR 2u
#define TCMP_SAMPLER_VERSION_PATCH 0u

#define TCMP_MAX_PAYLOAD 512u      /* type + body + crc */
#define TCMP_MAX_ENCODED 515u      /* COBS form of a maximal payload */
#define TCMP_MAX_RECORD_BYTES 17u  /* worst-case encoded record without STACK */
#define TCMP_MAX_BUILD_ID 32u
#define TCMP_MAX_THREAD_NAME 31u

/* Record fields (bit set). */
#define TCMP_FIELD_PC 0x01u
#define TCMP_FIELD_LR 0x02u
#define TCMP_FIELD_EXC 0x04u
#define TCMP_FIELD_THREAD 0x08u
#define TCMP_FIELD_STACK 0x10u /* needs LR; implies the 6 + K word record */
#define TCMP_FIELD_ALL 0x1Fu

/* Stack words per record (K) a START may ask for with the STACK field. */
#define TCMP_STACK_WORDS_MIN 8u
#define TCMP_STACK_WORDS_MAX 64u
#define TCMP_STACK_WORDS_DEFAULT 32u
/* Words below a thread's stack top sent once per thread in STACK_TOP (1.3):
 * enough for the frames that live as long as the thread (its entry
 * function's saved registers and return, the kernel's entry trampoline),
 * which a K-word copy from SP never reaches below a large entry frame. */
#define TCMP_STACK_TOP_WORDS 32u
/* Record codings of DATA (protocol.md §3): what START asks for and HEADER
 * reports. V10: every field against the record before, a stack against the
 * earlier record that codes it shortest (protocols 1.0 and 1.1). V12: the
 * PC against the nearest of the last four, a stack against its thread's
 * last record (1.2). */
#define TCMP_CODING_V10 0u
#define TCMP_CODING_V12 1u
/* V14 (1.4): the coding state runs on from one DATA frame to the next until
 * a key frame starts it again, every TCMP_V14_KEY_INTERVAL-th frame; the PC
 * against the nearest of the last 32, the thread by its place among the
 * last 8, a stack in runs against its thread's last one, literal words
 * against the nearest of 64 candidates. */
#define TCMP_CODING_V14 2u
#define TCMP_V14_KEY_INTERVAL 32u
/* Worst-case V14 record: PC 6, LR 5, EXC 2, THREAD 6; with STACK also SP
 * and the word count 6, one run pair 2 and 64 literals of 6 bytes. */
#define TCMP_MAX_RECORD_BYTES_V14 19u
#define TCMP_MAX_STACK_RECORD_BYTES_V14 411u
/* How far back (in records of the same DATA frame) a stack may refer. */
#define TCMP_STACK_REF_WINDOW 16u
/* Worst-case encoded record with STACK: the other fields (17), SP (5), the
 * word count and the reference (1 each), one run pair (2) and K literal
 * words of 5 bytes each at the largest K: 17 + 5 + 1 + 1 + 2 + 5 * 64. */
#define TCMP_MAX_STACK_RECORD_BYTES 346u

/* Device -> host frame types. */
#define TCMP_FRAME_HEADER 0x01u
#define TCMP_FRAME_DATA 0x02u
#define TCMP_FRAME_END 0x03u
#define TCMP_FRAME_REPLY 0x04u
#define TCMP_FRAME_THREADS 0x05u
#define TCMP_FRAME_STACK_TOP 0x06u /* 1.3 */

/* Host -> device commands. */
#define TCMP_CMD_START 0x81u
#define TCMP_CMD_STOP 0x82u
#define TCMP_CMD_STATUS 0x83u
#define TCMP_CMD_DRAIN 0x84u
#define TCMP_CMD_DONE 0x85u

/* REPLY status. */
#define TCMP_OK 0u
#define TCMP_ERR_UNKNOWN 1u
#define TCMP_ERR_BAD_ARG 2u
#define TCMP_ERR_BUSY 3u
#define TCMP_ERR_UNAVAILABLE 4u
#define TCMP_ERR_MALFORMED 5u

/* END reason. */
#define TCMP_END_DRAINED 0u
#define TCMP_END_STREAM_STOPPED 1u

/* State and mode as the HEADER reports them. */
#define TCMP_STATE_IDLE 0u
#define TCMP_STATE_RUNNING 1u
#define TCMP_STATE_HOLDING 2u
#define TCMP_MODE_SNAPSHOT 0u
#define TCMP_MODE_STREAM 1u

/* ------------------------------------------------------------------------ */
/* Core API                                                                  */
/* ------------------------------------------------------------------------ */

/* What the port tells the core once, at tcmp_init(). */
struct tcmp_port_config {
	uint32_t cpu_hz;             /* reported in HEADER */
	uint32_t timer_hz;           /* sampling-timer clock */
	uint32_t min_interval_ticks; /* shortest interval the port allows (bounds ISR load), >= 1 */
	uint32_t max_interval_ticks; /* longest interval the timer can count */
	uint32_t default_rate_hz;    /* used when START asks for rate 0 */
	uint32_t seed;               /* jitter PRNG seed; 0 picks a fixed nonzero seed */
	const uint8_t *build_id;     /* GNU build-id of the image, or NULL */
	uint8_t build_id_len;        /* 0..TCMP_MAX_BUILD_ID (longer is truncated) */
};

/* Parameters of a run, as in the START command. */
struct tcmp_start_args {
	uint32_t rate_hz;     /* 0 = port default */
	uint8_t jitter_pct;   /* 0..TCMP_MAX_JITTER_PCT */
	uint8_t fields;       /* TCMP_FIELD_*, must include PC */
	uint8_t mode;         /* TCMP_MODE_* */
	uint32_t count;       /* samples to take, 0 = until full (snapshot) or STOP */
	uint32_t duration_ms; /* 0 = none; else stop after duration_ms*rate/1000 samples */
	uint8_t stack_words;  /* with TCMP_FIELD_STACK: K, 8..64; 0 = the default 32 */
	uint8_t coding;       /* TCMP_CODING_*; one the core does not know is V10 */
};

/* A consistent view of the sampler (for a port's shell, and tests). */
struct tcmp_status {
	uint8_t state, mode, fields, jitter_pct;
	uint8_t stack_words; /* K of a run with the STACK field, else 0 */
	uint8_t coding;      /* TCMP_CODING_* of the run's DATA records */
	uint32_t mean_interval_ticks;
	uint32_t capacity; /* records */
	uint32_t taken, dropped, stored;
	uint32_t held_from;
	uint8_t sending; /* a frame to the host is waiting in tcmp_port_write */
};

/*
 * Resets the core to IDLE with the port's parameters. Call once before the
 * timer interrupt is enabled. Thread context.
 *
 * All thread-context functions below (tcmp_init, tcmp_rx*, tcmp_poll,
 * tcmp_start, tcmp_stop, tcmp_done, tcmp_get_status) share state without
 * locks: call them from one thread, or serialise them (e.g. a shell thread
 * taking the same mutex as the sampler thread; tcmp_port_write says when
 * that mutex may be released).
 */
void tcmp_init(const struct tcmp_port_config *cfg);

/*
 * Feed bytes received from the host. When a 0x00 completes a command frame
 * the command is executed and answered (through tcmp_port_write) before the
 * call returns. Call from the same thread as tcmp_poll(), never from an ISR
 * (a port with an RX interrupt queues bytes and feeds them from its thread).
 */
void tcmp_rx_byte(uint8_t byte);
void tcmp_rx(const uint8_t *data, size_t len);

/*
 * Housekeeping; call often from the sampler thread (every few ms while a
 * stream runs). Notices a run that ended in the ISR (count, duration,
 * snapshot buffer full) and stops the timer; in stream mode sends pending
 * records and, at the end, THREADS and END.
 */
void tcmp_poll(void);

/*
 * Local control, as the START, STOP and DONE commands (for a port's shell or
 * a self-test). Return a TCMP_OK / TCMP_ERR_* status. Thread context.
 *
 * None of them sends anything, so a port may call them from a second thread
 * while the first waits in tcmp_port_write (see there):
 *   - tcmp_start: TCMP_ERR_BUSY unless idle, and while a frame is being sent;
 *   - tcmp_stop: stops the timer; a snapshot is held at once, a stream's last
 *     records, THREADS and END go out with the next tcmp_poll();
 *   - tcmp_done: releases held records (state IDLE); TCMP_ERR_BUSY while a
 *     run is active or a frame is being sent;
 *   - tcmp_get_status: always.
 */
uint8_t tcmp_start(const struct tcmp_start_args *args);
uint8_t tcmp_stop(void);
uint8_t tcmp_done(void);
void tcmp_get_status(struct tcmp_status *out);

/*
 * The descriptor of a GNU build-id ELF note (what ld --build-id writes into
 * .note.gnu.build-id: namesz, descsz, type 3, "GNU", the id) at note, size
 * bytes, for tcmp_port_config.build_id; NULL and *len = 0 when the bytes are
 * not one (no note linked in, a foreign note, an id over TCMP_MAX_BUILD_ID).
 */
const uint8_t *tcmp_gnu_build_id(const uint8_t *note, size_t size, uint8_t *len);

/*
 * The sample itself, in plain C so host tests can call it with synthetic
 * frames. frame points at the hardware-stacked exception frame of the
 * interrupted context (r0, r1, r2, r3, r12, lr, pc, xpsr: LR at +0x14, PC at
 * +0x18, xPSR at +0x1C in both the basic and the FP-extended frame);
 * exc_return is the EXC_RETURN value the exception entry put in LR.
 * Stores a record if a run is active, then acknowledges the timer and
 * programs the next jittered interval (a tail call into the port's hook).
 * ITCM, interrupt context.
 */
TCMP_ITCM_FUNC void tcmp_on_sample(const uint32_t *frame, uint32_t exc_return);

#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__) || defined(__ARM_ARCH_8M_MAIN__)
/*
 * The timer interrupt entry on Cortex-M (ARMv7-M / ARMv8-M Mainline). A
 * naked function: it must be entered straight from the exception entry
 * (installed as the vector itself, e.g. Zephyr's
 * IRQ_DIRECT_CONNECT(irq, prio, tcmp_sample_isr, IRQ_ZERO_LATENCY) without
 * ISR_DIRECT_DECLARE, or the QEMU port's vector table), because it reads
 * EXC_RETURN from LR, picks MSP or PSP by EXC_RETURN bit 2, and tail-calls
 * tcmp_on_sample(frame, exc_return), whose return is the exception return.
 * A compiler-generated ISR prologue would have moved SP and LR first.
 */
TCMP_ITCM_FUNC void tcmp_sample_isr(void);
#endif

/* ------------------------------------------------------------------------ */
/* Port interface: functions each port defines                               */
/* ------------------------------------------------------------------------ */

/*
 * Sample path (interrupt context, must be TCMP_ITCM_FUNC, touch only DTCM or
 * peripheral registers, be short).
 *
 * tcmp_port_timer_ack_next: clear the sampling timer's interrupt flag and
 * make a later interval last next_ticks timer ticks (>= 1). It is called
 * exactly once per timer interrupt, as the last thing tcmp_on_sample does
 * (a tail call), even when no run is active.
 * With an auto-reload timer (RT1062 PIT: write TFLG=1 then LDVAL=ticks-1)
 * the new value applies to the interval after the one that began at this
 * expiry; that lag keeps the intervals independent and uniform. A timer
 * whose reload write also restarts the count (the CMSDK timer of the QEMU
 * port) starts the new interval at the write instead, which lengthens each
 * interval by the ISR's latency (docs/qemu.md). Make sure the flag-clear write has completed
 * before the exception returns (the later register write, or a DSB, does
 * it), or the interrupt fires again at once.
 * A port may instead define the macro TCMP_PORT_TIMER_ACK_NEXT(ticks) in its
 * TCMP_PORT_CONFIG_HEADER as inline register writes to save the call.
 *
 * tcmp_port_current_thread: id of the thread that was interrupted (e.g.
 * (uint32_t)_current in Zephyr), 0 when unknown. Only with
 * TCMP_ENABLE_THREAD; may be a macro TCMP_PORT_CURRENT_THREAD() instead.
 *
 * tcmp_port_stack_room: the bytes from sp (the interrupted context's stack
 * pointer, just above its hardware-stacked frame) up to the top of the
 * stack sp lies in, i.e. how much of it the sample may copy; 0 when sp is
 * not inside that stack. exc_return says which stack it is: bit 2 set, the
 * process stack (PSP: the current thread's stack, Zephyr's
 * _current->stack_info), clear, the main stack (MSP: the interrupt stack).
 * Only with TCMP_ENABLE_STACK; may be a macro TCMP_PORT_STACK_ROOM(er, sp)
 * instead. It must not fault: compare addresses, read nothing at sp.
 */
TCMP_ITCM_FUNC void tcmp_port_timer_ack_next(uint32_t next_ticks);
#if TCMP_ENABLE_THREAD
TCMP_ITCM_FUNC uint32_t tcmp_port_current_thread(void);
#endif
#if TCMP_ENABLE_STACK
TCMP_ITCM_FUNC uint32_t tcmp_port_stack_room(uint32_t exc_return, const uint32_t *sp);
#endif

/*
 * Thread context (may live in flash).
 *
 * tcmp_port_timer_start: program the first interval (first_ticks) and enable
 * the timer and its interrupt. tcmp_port_timer_stop: disable the timer
 * interrupt; a sample already pending may still arrive and is ignored.
 */
void tcmp_port_timer_start(uint32_t first_ticks);
void tcmp_port_timer_stop(void);

/*
 * tcmp_port_write: send len bytes to the host, in order, blocking until they
 * are queued. Only called from tcmp_rx* and tcmp_poll, i.e. by the thread
 * that owns the transport. A port that serialises the core with a lock
 * should not hold it while the write waits for the host: it may release it
 * for the wait and take it back before returning. Another thread may then
 * call only tcmp_start/tcmp_stop/tcmp_done/tcmp_get_status, which the core
 * keeps safe against the output in progress.
 */
void tcmp_port_write(const uint8_t *data, size_t len);

#if TCMP_ENABLE_THREAD
/*
 * tcmp_port_list_threads: call emit(ctx, id, name) once per live thread
 * (id as tcmp_port_current_thread reports it; name NUL-terminated, may be
 * NULL or empty; longer than TCMP_MAX_THREAD_NAME bytes is truncated).
 * Maps onto Zephyr's k_thread_foreach(). A port without threads does
 * nothing.
 */
typedef void (*tcmp_thread_emit_fn)(void *ctx, uint32_t id, const char *name);
void tcmp_port_list_threads(tcmp_thread_emit_fn emit, void *ctx);

#if TCMP_ENABLE_STACK
/*
 * tcmp_port_thread_stack_top: the top of thread id's stack (the address
 * just above it, the bound tcmp_port_stack_room measures PSP samples
 * against) and in *size its bytes; NULL when the port does not know the
 * thread (it exited) or its stack. Called in thread context from inside
 * tcmp_port_list_threads's emit, for the id just emitted; the core then
 * reads up to TCMP_STACK_TOP_WORDS words below the top, so the bytes
 * [top - size, top) must be readable while the thread lives.
 */
const uint32_t *tcmp_port_thread_stack_top(uint32_t id, uint32_t *size);
#endif
#endif

#ifdef __cplusplus
}
#endif

#endif /* TCMPROF_SAMPLER_H */
