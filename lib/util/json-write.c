/*
 * JSON text output; see json-write.h.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "json-write.h"
#include "time-units.h"

/* The length of the valid UTF-8 sequence at s (at most len), or 0. */
static size_t utf8_len(const unsigned char *s, size_t len)
{
	unsigned c = s[0];
	size_t n;
	unsigned min;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		min = 0x10000;
	} else {
		return 0;
	}
	if (n > len)
		return 0;
	unsigned cp = c & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

int sw_json_string(struct sw_buf *b, const char *s)
{
	if (!s)
		return sw_buf_puts(b, "null");
	int r = sw_buf_putc(b, '"');
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s);
	while (r >= 0 && len > 0) {
		size_t run = 0;
		/* copy plain runs in one go */
		while (run < len && p[run] >= 0x20 && p[run] < 0x80 && p[run] != '"' &&
		       p[run] != '\\')
			run++;
		if (run) {
			r = sw_buf_append(b, p, run);
			p += run;
			len -= run;
			continue;
		}
		unsigned c = p[0];
		if (c == '"' || c == '\\') {
			char esc[2] = {'\\', (char)c};
			r = sw_buf_append(b, esc, 2);
		} else if (c == '\n') {
			r = sw_buf_puts(b, "\\n");
		} else if (c == '\t') {
			r = sw_buf_puts(b, "\\t");
		} else if (c == '\r') {
			r = sw_buf_puts(b, "\\r");
		} else if (c < 0x20) {
			r = sw_buf_printf(b, "\\u%04x", c);
		} else {
			size_t n = utf8_len(p, len);
			if (n == 0) {
				r = sw_buf_puts(b, "\\ufffd");
				n = 1;
			} else {
				r = sw_buf_append(b, p, n);
			}
			p += n;
			len -= n;
			continue;
		}
		p++;
		len--;
	}
	return r < 0 ? r : sw_buf_putc(b, '"');
}

int sw_json_key(struct sw_buf *b, int *first, const char *key)
{
	size_t len = strlen(key);
	bool plain = true;
	for (size_t i = 0; i < len && plain; i++)
		plain = key[i] >= 0x20 && key[i] < 0x7f && key[i] != '"' && key[i] != '\\';
	if (plain) { /* the keys of our own objects: one append */
		int r = sw_buf_reserve(b, len + 4);
		if (r < 0)
			return r;
		char *p = (char *)b->data + b->len;
		if (!*first)
			*p++ = ',';
		*p++ = '"';
		memcpy(p, key, len);
		p += len;
		*p++ = '"';
		*p++ = ':';
		b->len = (size_t)(p - (char *)b->data);
		*first = 0;
		return 0;
	}
	int r = 0;
	if (!*first)
		r = sw_buf_putc(b, ',');
	*first = 0;
	if (r >= 0)
		r = sw_json_string(b, key);
	return r < 0 ? r : sw_buf_putc(b, ':');
}

int sw_json_ms(struct sw_buf *b, uint64_t ns)
{
	uint64_t us = (ns + SW_NS_PER_US / 2) / SW_NS_PER_US;
	if (us % 1000 == 0)
		return sw_buf_printf(b, "%llu", (unsigned long long)(us / 1000));
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "%llu.%03llu", (unsigned long long)(us / 1000),
			 (unsigned long long)(us % 1000));
	while (n > 0 && tmp[n - 1] == '0')
		n--;
	return sw_buf_append(b, tmp, (size_t)n);
}

int sw_json_ms3(struct sw_buf *b, uint64_t ns)
{
	uint64_t us = ns / SW_NS_PER_US, rest = ns % SW_NS_PER_US;
	/*
	 * Rounded to the nearest microsecond in integers.  The double ns / 1e6
	 * is within 2^-53 of its value, less than the nanosecond between ns and
	 * a half microsecond below 2^50 ns: it rounds the same way.  An exact
	 * half, or a larger number, goes to printf, which rounds the double.
	 */
	if (rest == SW_NS_PER_US / 2 || ns >= (uint64_t)1 << 50)
		return sw_buf_printf(b, "%.3f", (double)ns / (double)SW_NS_PER_MS);
	us += rest > SW_NS_PER_US / 2;
	int r = sw_buf_put_u64(b, us / 1000);
	if (r < 0)
		return r;
	unsigned frac = (unsigned)(us % 1000);
	char tmp[4] = {'.', (char)('0' + frac / 100), (char)('0' + frac / 10 % 10),
		       (char)('0' + frac % 10)};
	return sw_buf_append(b, tmp, sizeof(tmp));
}

int sw_json_u64(struct sw_buf *b, uint64_t v)
{
	return sw_buf_put_u64(b, v);
}

int sw_json_hex(struct sw_buf *b, uint64_t v)
{
	int r = sw_buf_putc(b, '"');
	if (r >= 0)
		r = sw_buf_put_hex(b, v);
	return r < 0 ? r : sw_buf_putc(b, '"');
}
