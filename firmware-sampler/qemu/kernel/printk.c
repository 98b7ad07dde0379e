/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Console formatting without newlib's stdio (which would pull in reentrancy
 * structures and malloc). Output goes to the board UART in one write per
 * call, so a line never splits around a sampler frame.
 */
#include <stdarg.h>
#include <string.h>

#include "kernel.h"
#include "port.h"

struct out {
	char *buf;
	size_t size, len;
};

static void out_char(struct out *o, char c)
{
	if (o->len + 1 < o->size) {
		o->buf[o->len] = c;
	}
	o->len++;
}

static void out_number(struct out *o, uint32_t v, unsigned base, unsigned width, char pad)
{
	char digits[12];
	unsigned n = 0;
	do {
		digits[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v != 0);
	while (width > n) {
		out_char(o, pad);
		width--;
	}
	while (n > 0) {
		out_char(o, digits[--n]);
	}
}

static size_t format(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = {buf, size, 0};
	for (const char *p = fmt; *p != '\0'; p++) {
		if (*p != '%') {
			if (*p == '\n') {
				out_char(&o, '\r');
			}
			out_char(&o, *p);
			continue;
		}
		p++;
		char pad = ' ';
		unsigned width = 0;
		if (*p == '0') {
			pad = '0';
			p++;
		}
		while (*p >= '0' && *p <= '9') {
			width = width * 10 + (unsigned)(*p++ - '0');
		}
		switch (*p) {
		case 'd': {
			int v = va_arg(ap, int);
			if (v < 0) {
				out_char(&o, '-');
				v = -v;
			}
			out_number(&o, (uint32_t)v, 10, width, pad);
			break;
		}
		case 'u':
			out_number(&o, va_arg(ap, unsigned), 10, width, pad);
			break;
		case 'x':
			out_number(&o, va_arg(ap, unsigned), 16, width, pad);
			break;
		case 'c':
			out_char(&o, (char)va_arg(ap, int));
			break;
		case 's': {
			const char *s = va_arg(ap, const char *);
			size_t n = strlen(s);
			for (size_t i = n; i < width; i++) {
				out_char(&o, pad);
			}
			for (size_t i = 0; i < n; i++) {
				out_char(&o, s[i]);
			}
			break;
		}
		case '\0':
			p--;
			break;
		default:
			out_char(&o, *p);
			break;
		}
	}
	if (size > 0) {
		buf[o.len < size ? o.len : size - 1] = '\0';
	}
	return o.len;
}

size_t snprintk(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t n = format(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

void printk(const char *fmt, ...)
{
	char line[160];
	va_list ap;
	va_start(ap, fmt);
	size_t n = format(line, sizeof(line), fmt, ap);
	va_end(ap);
	port_uart_write(line, n < sizeof(line) ? n : sizeof(line) - 1);
}
