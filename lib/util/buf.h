/*
 * A growable byte buffer with a ceiling, for everything outside input can
 * grow (curl's dynbuf habit): appending past the ceiling fails with -E2BIG
 * instead of eating memory.
 *
 * The buffer owns its storage; sw_buf_finish() frees it.  sw_buf_detach()
 * hands the storage to the caller, who frees it with free().
 */
#ifndef SW_BUF_H
#define SW_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct sw_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	size_t max; /* ceiling on len; 0 means SW_BUF_DEFAULT_MAX */
};

#define SW_BUF_DEFAULT_MAX ((size_t)1 << 30)

void sw_buf_init(struct sw_buf *b, size_t max);
/* Gives the empty b a malloc'ed block of cap bytes to write into (mem NULL: none). */
void sw_buf_adopt(struct sw_buf *b, void *mem, size_t cap);
void sw_buf_finish(struct sw_buf *b);
void sw_buf_reset(struct sw_buf *b);
int sw_buf_reserve(struct sw_buf *b, size_t more);
int sw_buf_append(struct sw_buf *b, const void *data, size_t len);
/*
 * Appends one byte.  Inline: renderers append millions of single bytes
 * (separators, quotes), and a call to sw_buf_append() for each cost more
 * than the byte.
 */
static inline int sw_buf_putc(struct sw_buf *b, char c)
{
	size_t max = b->max ? b->max : SW_BUF_DEFAULT_MAX;
	/* the same room sw_buf_reserve(b, 1) asks: the byte and a spare one */
	if (b->len < max && b->len + 2 <= b->cap) {
		b->data[b->len++] = (uint8_t)c;
		return 0;
	}
	return sw_buf_append(b, &c, 1);
}
int sw_buf_puts(struct sw_buf *b, const char *s);
/* Appends each string up to a NULL argument. */
int sw_buf_puts_all(struct sw_buf *b, ...) __attribute__((sentinel));
/* Appends v in decimal, or in hexadecimal after "0x", as printf would, only faster. */
int sw_buf_put_u64(struct sw_buf *b, uint64_t v);

/* "00" to "99": two digits a store, for sw_decimal_write(). */
extern const char sw_digit_pairs[201];

/* How many digits v has in decimal. */
static inline size_t sw_decimal_digits(uint64_t v)
{
	size_t n = v < 10 ? 1 : v < 100 ? 2 : v < 1000 ? 3 : v < 10000 ? 4 : v < 100000 ? 5 : 6;
	for (uint64_t x = v / 1000000; x; x /= 10)
		n++;
	return n;
}

/*
 * Writes v in decimal to the sw_decimal_digits(v) bytes that end at end,
 * two digits at a time: renderers and symbolicate print tens of millions.
 */
static inline void sw_decimal_write(char *end, uint64_t v)
{
	for (; v >= 100; v /= 100) {
		end -= 2;
		__builtin_memcpy(end, sw_digit_pairs + 2 * (v % 100), 2);
	}
	if (v >= 10)
		__builtin_memcpy(end - 2, sw_digit_pairs + 2 * v, 2);
	else
		end[-1] = (char)('0' + v);
}
int sw_buf_put_hex(struct sw_buf *b, uint64_t v);
/* Appends n copies of c (indentation). */
int sw_buf_pad(struct sw_buf *b, char c, size_t n);
int sw_buf_printf(struct sw_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sw_buf_vprintf(struct sw_buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* NUL-terminates the contents (not counted in len) and returns them. */
const char *sw_buf_str(struct sw_buf *b);
void *sw_buf_detach(struct sw_buf *b, size_t *ret_len);

#endif
