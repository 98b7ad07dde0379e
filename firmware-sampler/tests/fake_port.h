/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The port hooks for host tests: a transport that records every byte, a
 * timer that records every programmed interval, a settable current thread
 * and thread table. Plus a device-output decoder written apart from the
 * core's wire.c (its own COBS and bitwise CRC), used to check behaviour.
 */
#ifndef TCMP_TEST_FAKE_PORT_H
#define TCMP_TEST_FAKE_PORT_H

#include <stddef.h>
#include <stdint.h>

#include "tcmprof_sampler.h"
#include "wire.h"

#define FAKE_OUT_MAX (4u << 20)

/* The fields of the 4-word record: all but STACK. */
#define FIELDS_4WORD (TCMP_FIELD_PC | TCMP_FIELD_LR | TCMP_FIELD_EXC | TCMP_FIELD_THREAD)

struct fake_thread {
	uint32_t id;
	const char *name;
	/* The thread's stack, [stack, stack + stack_words); NULL: the port
	 * does not know it (tcmp_port_thread_stack_top gives NULL). */
	const uint32_t *stack;
	uint32_t stack_words;
};

struct fake_port {
	uint8_t out[FAKE_OUT_MAX];
	size_t out_len;
	int timer_running;
	uint32_t timer_starts, timer_stops;
	uint32_t first_ticks;
	uint32_t acks;
	uint32_t last_ticks;
	uint32_t current_thread;
	const struct fake_thread *threads;
	size_t nthreads;
	/* The stack the sample path may copy from: [stack_lo, stack_hi). */
	const uint32_t *stack_lo, *stack_hi;
	uint32_t stack_exc_return; /* what the last tcmp_port_stack_room call got */
	/* Called inside every tcmp_port_write, after the bytes are taken: where
	 * a port that waits for the host lets other threads into the core. */
	void (*during_write)(void);
	int writing; /* tcmp_port_write calls in progress (nested ones fail) */
};
extern struct fake_port port;

/* The test configuration: 600 MHz CPU, 24 MHz timer, 10 kHz default. */
extern const struct tcmp_port_config fake_config;

/* Clears the port and calls tcmp_init(cfg, or fake_config when NULL). */
void fake_reset(const struct tcmp_port_config *cfg);

/* One timer interrupt interrupting pc/lr/xpsr (thread from port). */
void fake_sample(uint32_t pc, uint32_t lr, uint32_t xpsr);

/* One timer interrupt whose stacked frame is at frame (r0..xPSR, and for
 * an FP-extended frame the FP words after it), entered with exc_return. */
void fake_sample_frame(const uint32_t *frame, uint32_t exc_return);

/* Sends a host command frame (type, body) to the device. */
void fake_command(uint8_t type, const uint8_t *body, size_t len);
void fake_start(uint32_t rate, uint8_t jitter, uint8_t fields, uint8_t mode, uint32_t count,
		uint32_t duration_ms);
/* START with the 17-byte body of protocol 1.1 (stack_words at offset 16). */
void fake_start_stack(uint32_t rate, uint8_t fields, uint8_t mode, uint32_t count, uint8_t stack_words);

/* ---- decoding what the device sent ---- */
struct frame {
	uint8_t type;
	uint8_t p[TCMP_MAX_PAYLOAD]; /* payload without the CRC */
	size_t len;                  /* of p, type included */
	size_t wire_len;             /* COBS bytes, without the delimiters */
};

/* Splits port.out into frames (at most max); garbage segments counted in
 * *bad. Returns the number of frames. Clears port.out when consume. */
size_t fake_frames(struct frame *out, size_t max, size_t *bad, int consume);

/* The records of a DATA frame: fields decides the layout; returns count. */
size_t data_records(const struct frame *f, uint8_t fields, uint32_t *first, struct tcmp_record *recs,
		    size_t max);

/* A decoded record of a STACK run: its words live in the struct. */
struct fake_stack_record {
	struct tcmp_record r; /* r.stack points at words */
	uint32_t words[TCMP_STACK_WORDS_MAX];
	uint32_t ref;         /* the reference the encoder chose (0 = none) */
};

/* The records of a DATA frame of a STACK run, decoded from protocol.md
 * apart from the core's encoder; returns the count. */
size_t data_stack_records(const struct frame *f, uint8_t fields, uint32_t *first,
			  struct fake_stack_record *recs, size_t max);

uint32_t le32(const uint8_t *p);

#endif
