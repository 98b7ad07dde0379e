/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Deferred logging, as Zephyr's log subsystem does it: a LOG_*() call
 * checks the source's runtime level and queues the format and up to three
 * arguments with a timestamp; the console thread later formats the queued
 * messages into the RAM backend (a ring of text lines a debugger or a
 * retained-memory reader collects). A full queue drops the oldest message
 * and counts it.
 */
#include <string.h>

#include "kernel.h"

#define LOG_QUEUE 32u /* power of two */
#define LOG_RAM_BYTES 2048u

struct log_msg {
	uint32_t timestamp;
	const struct log_source *src;
	const char *fmt;
	uint32_t args[3];
	uint8_t level;
};

static struct log_msg queue[LOG_QUEUE];
static uint32_t q_head, q_tail;
static char ram_backend[LOG_RAM_BYTES];
static uint32_t ram_pos;
static struct log_stats stats;

static const char *const level_tags[] = {"", "err", "wrn", "inf", "dbg"};

void z_log_msg(struct log_source *src, uint8_t level, const char *fmt, uint32_t a0, uint32_t a1,
	       uint32_t a2)
{
	uint32_t key = irq_lock();
	if (q_head - q_tail == LOG_QUEUE) {
		q_tail++;
		stats.dropped++;
		src->dropped++;
	}
	struct log_msg *m = &queue[q_head % LOG_QUEUE];
	m->timestamp = k_uptime_ticks();
	m->src = src;
	m->fmt = fmt;
	m->args[0] = a0;
	m->args[1] = a1;
	m->args[2] = a2;
	m->level = level;
	q_head++;
	stats.queued++;
	src->messages++;
	irq_unlock(key);
}

/* Appends a line to the RAM ring, wrapping at its end (no line is split). */
static void ram_write(const char *line, size_t len)
{
	if (len >= LOG_RAM_BYTES) {
		len = LOG_RAM_BYTES - 1u;
	}
	if (ram_pos + len > LOG_RAM_BYTES) {
		memset(&ram_backend[ram_pos], 0, LOG_RAM_BYTES - ram_pos);
		ram_pos = 0;
		stats.wraps++;
	}
	memcpy(&ram_backend[ram_pos], line, len);
	ram_pos += (uint32_t)len;
}

static bool dequeue(struct log_msg *out)
{
	uint32_t key = irq_lock();
	bool got = q_head != q_tail;
	if (got) {
		*out = queue[q_tail % LOG_QUEUE];
		q_tail++;
	}
	irq_unlock(key);
	return got;
}

unsigned log_process(void)
{
	struct log_msg m;
	unsigned n = 0;
	while (dequeue(&m)) {
		char line[96];
		size_t len = snprintk(line, sizeof(line), "[%08u] <%s> %s: ", (unsigned)m.timestamp,
				      level_tags[m.level <= LOG_LEVEL_DBG ? m.level : 0], m.src->name);
		if (len < sizeof(line)) {
			len += snprintk(line + len, sizeof(line) - len, m.fmt, (unsigned)m.args[0],
					(unsigned)m.args[1], (unsigned)m.args[2]);
		}
		if (len >= sizeof(line)) {
			len = sizeof(line) - 2u;
		}
		line[len++] = '\n';
		ram_write(line, len);
		stats.processed++;
		n++;
	}
	return n;
}

void log_get_stats(struct log_stats *out)
{
	uint32_t key = irq_lock();
	*out = stats;
	irq_unlock(key);
}
