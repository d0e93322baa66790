/*
 * Printing frames for `stallwatch symbolicate`: the text form is shaped
 * like llvm-symbolizer's default output (a name line and a
 * file:line:column line per frame, innermost first, then a blank line) so
 * the two can be diffed; the JSON form is one NDJSON object per address.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "symbolicate.h"

/* isspace() of the C locale, without a call per byte. */
static bool is_space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/* A hexadecimal digit's value, or -1: no ctype call per digit (this runs for every address). */
static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	unsigned lower = (unsigned char)c | 0x20;
	return lower >= 'a' && lower <= 'f' ? (int)(lower - 'a' + 10) : -1;
}

int sw_symbolicate_parse_addr(const char *text, uint64_t *ret)
{
	const char *p = text;
	while (is_space(*p))
		p++;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	uint64_t v = 0;
	int digits = 0, d;
	for (; (d = hex_digit(*p)) >= 0; p++, digits++) {
		if (v >> 60)
			return -ERANGE;
		v = v << 4 | (unsigned)d;
	}
	while (is_space(*p))
		p++;
	if (!digits || *p)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* Where at most n more bytes go, or NULL. */
static char *room(struct sw_buf *out, size_t n)
{
	return sw_buf_reserve(out, n) < 0 ? NULL : (char *)out->data + out->len;
}

/* ":N" without printf: this runs for every frame of every address. */
static char *put_number(char *p, uint32_t v)
{
	char tmp[12];
	size_t i = sizeof(tmp);
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	tmp[--i] = ':';
	memcpy(p, tmp + i, sizeof(tmp) - i);
	return p + sizeof(tmp) - i;
}

/* One frame: the room for both lines is reserved once (this runs for every frame). */
static int print_frame(const struct sw_frame *f, struct sw_buf *out)
{
	const char *name = f->function ? f->function : "??";
	const char *file = f->file ? f->file : "??";
	size_t nlen = strlen(name), flen = strlen(file);
	char *p = room(out, nlen + flen + 64);
	if (!p)
		return -E2BIG;
	char *start = p;
	memcpy(p, name, nlen);
	p += nlen;
	if ((f->flags & SW_FRAME_SYMBOL) && f->offset)
		p += sprintf(p, " + 0x%" PRIx64, f->offset);
	*p++ = '\n';
	memcpy(p, file, flen);
	p += flen;
	p = put_number(p, f->line);
	p = put_number(p, f->column);
	*p++ = '\n';
	out->len += (size_t)(p - start);
	return 0;
}

int sw_symbolicate_print_text(const struct sw_frame *frames, size_t n, struct sw_buf *out)
{
	int r = 0;
	for (size_t i = 0; i < n && r >= 0; i++)
		r = print_frame(&frames[i], out);
	return r < 0 ? r : sw_buf_putc(out, '\n');
}

static int json_string(struct sw_buf *out, const char *s)
{
	if (!s)
		return sw_buf_puts(out, "null");
	int r = sw_buf_putc(out, '"');
	for (; *s && r >= 0; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			r = sw_buf_printf(out, "\\%c", c);
		else if (c < 0x20)
			r = sw_buf_printf(out, "\\u%04x", c);
		else
			r = sw_buf_putc(out, (char)c);
	}
	return r < 0 ? r : sw_buf_putc(out, '"');
}

int sw_symbolicate_print_json(uint64_t addr, const struct sw_frame *frames, size_t n,
			      struct sw_buf *out)
{
	int r = sw_buf_printf(
	    out, "{\"schema\":1,\"type\":\"address\",\"address\":\"0x%" PRIx64 "\",\"frames\":[",
	    addr);
	for (size_t i = 0; i < n && r >= 0; i++) {
		const struct sw_frame *f = &frames[i];
		r = sw_buf_puts(out, i ? ",{\"function\":" : "{\"function\":");
		if (r >= 0)
			r = json_string(out, f->function);
		if (r >= 0)
			r = sw_buf_puts(out, ",\"file\":");
		if (r >= 0)
			r = json_string(out, f->file);
		if (r >= 0)
			r = sw_buf_printf(
			    out, ",\"line\":%" PRIu32 ",\"column\":%" PRIu32 ",\"inlined\":%s",
			    f->line, f->column, (f->flags & SW_FRAME_INLINED) ? "true" : "false");
		if (r >= 0 && (f->flags & SW_FRAME_SYMBOL))
			r = sw_buf_printf(
			    out, ",\"symbol_address\":\"0x%" PRIx64 "\",\"offset\":%" PRIu64,
			    f->symbol_addr, f->offset);
		if (r >= 0)
			r = sw_buf_putc(out, '}');
	}
	return r < 0 ? r : sw_buf_puts(out, "]}\n");
}
