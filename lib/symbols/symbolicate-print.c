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

/* One more than each byte's value as a hexadecimal digit, 0 for the others. */
static const uint8_t hex_plus_one[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,  ['6'] = 7,  ['7'] = 8,
    ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

/*
 * A hexadecimal digit's value, or -1: a table, not a ctype call or
 * branches per digit (this runs for every digit of every address, and
 * digits and letters come in no order a branch predictor could learn).
 */
static int hex_digit(char c)
{
	return (int)hex_plus_one[(unsigned char)c] - 1;
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

size_t sw_symbolicate_scan_line(const char *text, const char *end, uint64_t *ret)
{
	const char *p = text;
	if (end - p >= 2 && p[0] == '0' && (p[1] | 0x20) == 'x')
		p += 2;
	const char *digits = p, *last = end - p > 16 ? p + 16 : end;
	uint64_t v = 0;
	int d;
	for (; p < last && (d = hex_digit(*p)) >= 0; p++)
		v = v << 4 | (unsigned)d;
	if (p == digits || p == end || *p != '\n')
		return 0;
	*ret = v;
	return (size_t)(p + 1 - text);
}

/* Where at most n more bytes go, or NULL. */
static char *room(struct sw_buf *out, size_t n)
{
	return sw_buf_reserve(out, n) < 0 ? NULL : (char *)out->data + out->len;
}

/*
 * ":N" without printf or a call to memcpy: this runs twice for every
 * frame of every address.
 */
static char *put_number(char *p, uint32_t v)
{
	unsigned digits = 1;
	for (uint32_t x = v; x >= 10; x /= 10)
		digits++;
	*p = ':';
	char *end = p + 1 + digits;
	for (char *q = end; q > p + 1; v /= 10)
		*--q = (char)('0' + v % 10);
	return end;
}

/*
 * Copies the string s to p, stopping at end: the end of the copy, or NULL
 * when s does not fit.  One byte loop that finds the end as it copies:
 * libc's strlen and memcpy took 13 ns each on a 22-byte file name here,
 * this 10 for the pair.
 */
static char *put_str(char *p, const char *s, const char *end)
{
	for (; *s; p++, s++) {
		if (p >= end)
			return NULL;
		*p = *s;
	}
	return p;
}

/* A room most frames fit, and what it keeps for the offset, the numbers and newlines. */
#define FRAME_ROOM 512
#define FRAME_TAIL 64

/*
 * Appends a frame's two lines within a room of size bytes: 1, or 0 when
 * the room could not be had or the names do not fit it.
 */
static inline __attribute__((always_inline)) int frame_in_room(const struct sw_frame *f,
							       const char *name, const char *file,
							       size_t size, struct sw_buf *out)
{
	char *start = room(out, size);
	if (!start)
		return 0;
	const char *lim = start + size - FRAME_TAIL;
	char *p = put_str(start, name, lim);
	if (p && (f->flags & SW_FRAME_SYMBOL) && f->offset)
		p += sprintf(p, " + 0x%" PRIx64, f->offset);
	if (p) {
		*p++ = '\n';
		p = put_str(p, file, lim);
	}
	if (!p)
		return 0;
	p = put_number(p, f->line);
	p = put_number(p, f->column);
	*p++ = '\n';
	out->len += (size_t)(p - start);
	return 1;
}

/* One frame's two lines: copied into a room reserved once, else measured first. */
static int print_frame(const struct sw_frame *f, struct sw_buf *out)
{
	const char *name = f->function ? f->function : "??";
	const char *file = f->file ? f->file : "??";
	if (frame_in_room(f, name, file, FRAME_ROOM, out))
		return 0;
	/* the tail twice: once for the offset and newline after the name */
	size_t size = strlen(name) + strlen(file) + 2 * FRAME_TAIL;
	return frame_in_room(f, name, file, size, out) ? 0 : -E2BIG;
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
