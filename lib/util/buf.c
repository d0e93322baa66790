/*
 * Growable byte buffers with a ceiling; see buf.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

void sw_buf_init(struct sw_buf *b, size_t max)
{
	*b = (struct sw_buf){.max = max ? max : SW_BUF_DEFAULT_MAX};
}

void sw_buf_adopt(struct sw_buf *b, void *mem, size_t cap)
{
	if (!mem)
		return;
	free(b->data);
	b->data = mem;
	b->cap = cap;
	b->len = 0;
}

void sw_buf_finish(struct sw_buf *b)
{
	if (!b)
		return;
	free(b->data);
	*b = (struct sw_buf){.max = b->max};
}

void sw_buf_reset(struct sw_buf *b)
{
	b->len = 0;
}

int sw_buf_reserve(struct sw_buf *b, size_t more)
{
	size_t max = b->max ? b->max : SW_BUF_DEFAULT_MAX;

	if (more > max || b->len > max - more)
		return -E2BIG;
	/* one spare byte so sw_buf_str() never has to grow */
	if (b->len + more + 1 <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < b->len + more + 1)
		cap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
	uint8_t *data = realloc(b->data, cap);
	if (!data)
		return -ENOMEM;
	b->data = data;
	b->cap = cap;
	return 0;
}

int sw_buf_append(struct sw_buf *b, const void *data, size_t len)
{
	int r = sw_buf_reserve(b, len);
	if (r < 0)
		return r;
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	return 0;
}

int sw_buf_puts(struct sw_buf *b, const char *s)
{
	return sw_buf_append(b, s, strlen(s));
}

int sw_buf_puts_all(struct sw_buf *b, ...)
{
	va_list ap;
	va_start(ap, b);
	int r = 0;
	for (const char *s; r >= 0 && (s = va_arg(ap, const char *));)
		r = sw_buf_puts(b, s);
	va_end(ap);
	return r;
}

const char sw_digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233"
    "34353637383940414243444546474849505152535455565758596061626364656667"
    "6869707172737475767778798081828384858687888990919293949596979899";

int sw_buf_put_u64(struct sw_buf *b, uint64_t v)
{
	size_t n = sw_decimal_digits(v);
	int r = sw_buf_reserve(b, n);
	if (r < 0)
		return r;
	b->len += n;
	sw_decimal_write((char *)b->data + b->len, v);
	return 0;
}

int sw_buf_put_hex(struct sw_buf *b, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[18], *p = tmp + sizeof(tmp);
	do
		*--p = digits[v & 15];
	while (v >>= 4);
	*--p = 'x';
	*--p = '0';
	return sw_buf_append(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

int sw_buf_vprintf(struct sw_buf *b, const char *fmt, va_list ap)
{
	/* print into the room there is; measure and grow only when it is short */
	size_t room = b->cap > b->len ? b->cap - b->len : 0;
	va_list copy;
	va_copy(copy, ap);
	int n = vsnprintf(room ? (char *)b->data + b->len : NULL, room, fmt, copy);
	va_end(copy);
	if (n < 0)
		return -EINVAL;
	size_t max = b->max ? b->max : SW_BUF_DEFAULT_MAX;
	if ((size_t)n < room && b->len + (size_t)n <= max) {
		b->len += (size_t)n;
		return 0;
	}
	int r = sw_buf_reserve(b, (size_t)n);
	if (r < 0)
		return r;
	vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int sw_buf_pad(struct sw_buf *b, char c, size_t n)
{
	int r = sw_buf_reserve(b, n);
	if (r < 0)
		return r;
	memset(b->data + b->len, c, n);
	b->len += n;
	return 0;
}

int sw_buf_printf(struct sw_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = sw_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return r;
}

const char *sw_buf_str(struct sw_buf *b)
{
	if (sw_buf_reserve(b, 0) < 0)
		return NULL;
	b->data[b->len] = '\0';
	return (const char *)b->data;
}

void *sw_buf_detach(struct sw_buf *b, size_t *ret_len)
{
	sw_buf_str(b);
	void *data = b->data;
	if (ret_len)
		*ret_len = b->len;
	*b = (struct sw_buf){.max = b->max};
	return data;
}
