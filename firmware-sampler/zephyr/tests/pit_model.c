/* SPDX-License-Identifier: Apache-2.0 */
#include "pit_model.h"

#include <stddef.h>
#include <string.h>

#include "tcmprof_pit.h"

struct pit_model pit_model;

/* Only the addresses of this block are used; the state lives in pit_model. */
static struct tcmp_pit_regs address_space;

struct tcmp_pit_regs *pit_model_base(void)
{
	return &address_space;
}

void pit_model_reset(void)
{
	memset(&pit_model, 0, sizeof(pit_model));
	/* Reset value of MCR: MDIS set, the module is off. */
	pit_model.mcr = TCMP_PIT_MCR_MDIS;
}

void pit_model_clock_on(void)
{
	pit_model.clock_on = true;
}

static uint32_t offset_of(volatile uint32_t *reg)
{
	return (uint32_t)((uintptr_t)reg - (uintptr_t)&address_space);
}

static void record(enum pit_op op, uint32_t offset, uint32_t value)
{
	if (pit_model.log_len < PIT_MODEL_LOG_MAX) {
		pit_model.log[pit_model.log_len++] = (struct pit_access){op, offset, value};
	}
}

void pit_model_write(volatile uint32_t *reg, uint32_t value)
{
	uint32_t off = offset_of(reg);

	record(PIT_OP_WRITE, off, value);
	if (!pit_model.clock_on) {
		pit_model.faults++;
		return;
	}
	if (off == 0x000) {
		pit_model.mcr = value & (TCMP_PIT_MCR_FRZ | TCMP_PIT_MCR_MDIS);
		return;
	}
	if (off >= 0x100 && off < 0x140) {
		struct pit_model_channel *ch = &pit_model.ch[(off - 0x100) / 0x10];

		switch (off & 0xF) {
		case 0x0:
			ch->ldval = value;
			return;
		case 0x8:
			if (!(ch->tctrl & TCMP_PIT_TCTRL_TEN) && (value & TCMP_PIT_TCTRL_TEN)) {
				ch->cval = ch->ldval;
			}
			ch->tctrl = value & 0x7u;
			return;
		case 0xC:
			if (value & TCMP_PIT_TFLG_TIF) {
				ch->tif = false;
			}
			return;
		}
	}
	/* CVAL, LTMR64H/L and the reserved space are not writable. */
	pit_model.faults++;
}

uint32_t pit_model_read(volatile uint32_t *reg)
{
	uint32_t off = offset_of(reg);
	uint32_t value = 0;

	if (!pit_model.clock_on) {
		pit_model.faults++;
	} else if (off == 0x000) {
		value = pit_model.mcr;
	} else if (off >= 0x100 && off < 0x140) {
		struct pit_model_channel *ch = &pit_model.ch[(off - 0x100) / 0x10];
		uint32_t regs[4] = {ch->ldval, ch->cval, ch->tctrl, ch->tif ? 1u : 0u};

		value = regs[(off & 0xF) / 4];
	} else {
		pit_model.faults++;
	}
	record(PIT_OP_READ, off, value);
	return value;
}

void pit_model_tick(void)
{
	if (!pit_model.clock_on || (pit_model.mcr & TCMP_PIT_MCR_MDIS)) {
		return;
	}
	for (int i = 0; i < 4; i++) {
		struct pit_model_channel *ch = &pit_model.ch[i];

		if (!(ch->tctrl & TCMP_PIT_TCTRL_TEN)) {
			continue;
		}
		if (ch->cval == 0) {
			ch->cval = ch->ldval;
			ch->tif = true;
		} else {
			ch->cval--;
		}
	}
}

bool pit_model_irq(void)
{
	for (int i = 0; i < 4; i++) {
		if (pit_model.ch[i].tif && (pit_model.ch[i].tctrl & TCMP_PIT_TCTRL_TIE)) {
			return true;
		}
	}
	return false;
}

uint32_t pit_model_ticks_to_irq(uint32_t limit)
{
	for (uint32_t t = 1; t <= limit; t++) {
		pit_model_tick();
		if (pit_model_irq()) {
			return t;
		}
	}
	return 0;
}
