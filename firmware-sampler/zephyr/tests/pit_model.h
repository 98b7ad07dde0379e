/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A behavioural model of the i.MX RT10xx PIT for host tests, per the
 * reference manual's description as summarised in NXP's PERI_PIT.h and
 * fsl_pit.c: a channel counts LDVAL down to 0, then reloads from the current
 * LDVAL and sets TIF; TEN 0 -> 1 loads LDVAL; TFLG is write-1-to-clear; the
 * interrupt line is TIF & TIE. Every access is logged in order, and an
 * access while the clock gate is off (a bus fault on the chip) or to a
 * read-only register counts as a fault.
 *
 * Included with -include before the backend, so TCMP_PIT_WRITE/READ and
 * TCMP_PIT_BASE route the backend's accesses here.
 */
#ifndef PIT_MODEL_H
#define PIT_MODEL_H

#include <stdbool.h>
#include <stdint.h>

struct tcmp_pit_regs;

enum pit_op { PIT_OP_WRITE, PIT_OP_READ };

struct pit_access {
	enum pit_op op;
	uint32_t offset; /* from the PIT base */
	uint32_t value;  /* written, or returned */
};

#define PIT_MODEL_LOG_MAX 4096

struct pit_model_channel {
	uint32_t ldval, cval, tctrl;
	bool tif;
};

struct pit_model {
	bool clock_on;
	uint32_t mcr;
	struct pit_model_channel ch[4];
	struct pit_access log[PIT_MODEL_LOG_MAX];
	unsigned log_len;
	unsigned faults;
};

extern struct pit_model pit_model;

/* The register block the backend sees; its addresses only locate registers. */
struct tcmp_pit_regs *pit_model_base(void);

void pit_model_reset(void);
void pit_model_clock_on(void);
void pit_model_write(volatile uint32_t *reg, uint32_t value);
uint32_t pit_model_read(volatile uint32_t *reg);
/* Advances the PIT clock by one tick. */
void pit_model_tick(void);
/* The PIT interrupt request to the NVIC (any channel). */
bool pit_model_irq(void);
/* Ticks the clock until the PIT requests an interrupt and returns how many
 * ticks that took (the first tick is 1); 0 if none within limit. */
uint32_t pit_model_ticks_to_irq(uint32_t limit);

#define TCMP_PIT_BASE pit_model_base()
#define TCMP_PIT_WRITE(reg, value) pit_model_write(&(reg), (value))
#define TCMP_PIT_READ(reg) pit_model_read(&(reg))

#endif
