/*
 * Printing frames for `stallwatch symbolicate`: the text form is shaped
 * like llvm-symbolizer's default output (a name line and a
 * file:line:column line per frame, innermost first, then a blank line) so
 * the two can be diffed; the JSON form is one NDJSON object per address.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
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

/* ":N" without printf or a call: this runs twice for every frame of every address. */
static char *put_number(char *p, uint32_t v)
{
	*p++ = ':';
	char *end = p + sw_decimal_digits(v);
	sw_decimal_write(end, v);
	return end;
}

/*
 * The sixteen-byte copy reads up to 15 bytes past a string's end, within
 * its page: harmless, but AddressSanitizer rightly reports it when the
 * string ends a heap block, so sanitized builds copy byte by byte.
 */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SW_NO_OVERREAD 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define SW_NO_OVERREAD 1
#endif

#if defined(__SSE2__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && !defined(SW_NO_OVERREAD)
#include <emmintrin.h>

/*
 * Copies the string s to p, stopping at end: the end of the copy, or NULL
 * when s does not fit.  Sixteen bytes a load and a store, the NUL found
 * among them as they go: names are 20 to 60 bytes, and a byte loop took
 * 10 ns for each.  A load never crosses into the next page (the bytes
 * before a page's end go one by one), so it reads no page the string does
 * not reach; a store may write up to 15 bytes past end, within the room's
 * FRAME_TAIL.
 */
static char *put_str(char *p, const char *s, const char *end)
{
	const __m128i zero = _mm_setzero_si128();
	for (;;) {
		if (p > end)
			return NULL;
		if (((uintptr_t)s & 4095) > 4096 - 16) {
			/* to the page's end one byte at a time */
			for (size_t left = 4096 - ((uintptr_t)s & 4095); left; left--, p++, s++) {
				if (!*s)
					return p <= end ? p : NULL;
				*p = *s;
			}
			continue;
		}
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)s);
		_mm_storeu_si128((__m128i *)(void *)p, v);
		unsigned nul = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, zero));
		if (nul) {
			p += __builtin_ctz(nul);
			return p <= end ? p : NULL;
		}
		p += 16;
		s += 16;
	}
}
#else
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
#endif

/* A room most frames fit, and what it keeps for the offset, the numbers and newlines. */
#define FRAME_ROOM 512
#define FRAME_TAIL 64

/*
 * Writes a frame's two lines at p, the names ending before lim (FRAME_TAIL
 * bytes before the room's end): the end of the text, or NULL when the
 * names do not fit.
 */
static inline __attribute__((always_inline)) char *frame_text(const struct sw_frame *f, char *p,
							      const char *lim)
{
	p = put_str(p, f->function ? f->function : "??", lim);
	if (p && (f->flags & SW_FRAME_SYMBOL) && f->offset)
		p += sprintf(p, " + 0x%" PRIx64, f->offset);
	if (p) {
		*p++ = '\n';
		p = put_str(p, f->file ? f->file : "??", lim);
	}
	if (!p)
		return NULL;
	p = put_number(p, f->line);
	p = put_number(p, f->column);
	*p++ = '\n';
	return p;
}

/* One frame with long names: measured first, then given the room they need. */
static int print_long_frame(const struct sw_frame *f, struct sw_buf *out)
{
	const char *name = f->function ? f->function : "??";
	const char *file = f->file ? f->file : "??";
	/* the tail twice: once for the offset and newline after the name */
	size_t size = strlen(name) + strlen(file) + 2 * FRAME_TAIL;
	char *start = room(out, size);
	char *p = start ? frame_text(f, start, start + size - FRAME_TAIL) : NULL;
	if (!p)
		return -E2BIG;
	out->len += (size_t)(p - start);
	return 0;
}

int sw_symbolicate_print_text(const struct sw_frame *frames, size_t n, struct sw_buf *out)
{
	for (size_t i = 0; i < n;) {
		/* one room for the frames left: most fit FRAME_ROOM each */
		char *start = room(out, (n - i) * FRAME_ROOM + 1), *p = start;
		for (char *q; start && i < n; i++, p = q)
			if (!(q = frame_text(&frames[i], p, p + FRAME_ROOM - FRAME_TAIL)))
				break;
		if (start)
			out->len += (size_t)(p - start);
		/* a frame whose names do not fit FRAME_ROOM: a room of its own */
		int r = i < n ? print_long_frame(&frames[i++], out) : 0;
		if (r < 0)
			return r;
	}
	return sw_buf_putc(out, '\n');
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
