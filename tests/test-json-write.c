/*
 * Tests for the JSON writer (json-write.c).  Expectations come from RFC
 * 8259 (what must be escaped) and the Unicode standard's definition of
 * well-formed UTF-8 (table 3-7): ill-formed bytes become U+FFFD so that
 * the output is always valid JSON.
 */
#include <errno.h>
#include <stdlib.h>

#include "util/json-write.h"
#include "test.h"

static const char *str(const char *in)
{
	static struct sw_buf b;
	sw_buf_finish(&b);
	sw_buf_init(&b, 0);
	CHECK_INT(sw_json_string(&b, in), 0);
	return sw_buf_str(&b);
}

static const char *ms(uint64_t ns)
{
	static struct sw_buf b;
	sw_buf_finish(&b);
	sw_buf_init(&b, 0);
	CHECK_INT(sw_json_ms(&b, ns), 0);
	return sw_buf_str(&b);
}

static const char *ms3(uint64_t ns)
{
	static struct sw_buf b;
	sw_buf_finish(&b);
	sw_buf_init(&b, 0);
	CHECK_INT(sw_json_ms3(&b, ns), 0);
	return sw_buf_str(&b);
}

/* sw_json_ms3 against printf's "%.3f" of the double, at halves, edges and at random. */
static void test_ms3(void)
{
	static const uint64_t edges[] = {0,
					 1,
					 499,
					 500,
					 501,
					 999,
					 1000,
					 1499,
					 1500,
					 1501,
					 2500,
					 999499,
					 999500,
					 999501,
					 412345678,
					 1ull << 40,
					 (1ull << 50) - 501,
					 (1ull << 50) - 500,
					 (1ull << 50) - 1,
					 1ull << 50,
					 (1ull << 53) + 1,
					 UINT64_MAX};
	char want[64];
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		snprintf(want, sizeof(want), "%.3f", (double)edges[i] / 1e6);
		CHECK_STR(ms3(edges[i]), want);
	}
	uint64_t x = 0x9e3779b97f4a7c15ull;
	int bad = 0;
	for (int i = 0; i < 200000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* every magnitude up to 2^52, a tenth of them exact halves of a microsecond */
		uint64_t ns = (x >> 12) >> (x % 40);
		if (i % 10 == 0)
			ns = ns / 1000 * 1000 + 500;
		snprintf(want, sizeof(want), "%.3f", (double)ns / 1e6);
		bad += strcmp(ms3(ns), want) != 0;
	}
	CHECK_INT(bad, 0);
}

/*
 * sw_buf_putc(), inline for speed, keeps sw_buf_append()'s rules: the
 * ceiling holds to the byte, the buffer grows as it fills, and a spare
 * byte stays for sw_buf_str().
 */
static void test_putc(void)
{
	struct sw_buf b;
	sw_buf_init(&b, 100);
	for (int i = 0; i < 100; i++)
		CHECK_INT(sw_buf_putc(&b, (char)('a' + i % 26)), 0);
	CHECK_INT(sw_buf_putc(&b, 'x'), -E2BIG);
	CHECK_INT((int)b.len, 100);
	CHECK(b.cap > b.len);
	const char *s = sw_buf_str(&b);
	int wrong = 0;
	for (int i = 0; i < 100; i++)
		wrong += s[i] != (char)('a' + i % 26);
	CHECK_INT(wrong, 0);
	CHECK_INT(s[100], 0);
	sw_buf_finish(&b);

	/* a buffer adopted full to the last byte grows rather than writing past it */
	sw_buf_init(&b, 0);
	sw_buf_adopt(&b, malloc(4), 4);
	for (int i = 0; i < 10; i++) {
		CHECK_INT(sw_buf_putc(&b, '0' + i), 0);
		CHECK(b.cap > b.len); /* the spare byte */
	}
	CHECK_STR(sw_buf_str(&b), "0123456789");
	sw_buf_finish(&b);
}

/*
 * sw_buf_put_u64() prints as printf's %llu does, at every count of digits,
 * and keeps the ceiling: a number that does not fit is not cut.
 */
static void test_put_u64(void)
{
	struct sw_buf b;
	sw_buf_init(&b, 0);
	char want[32];
	int wrong = 0;
	uint64_t v = 0;
	for (int i = 0; i < 2000; i++) {
		/* 0 to 999 one by one, then powers of ten, their neighbours, and a walk to the top
		 */
		v = i < 1000 ? (uint64_t)i : v * 3 + (uint64_t)i;
		uint64_t tries[] = {v, v - 1, v + 1, UINT64_MAX - (uint64_t)i};
		for (size_t k = 0; k < 4; k++) {
			sw_buf_reset(&b);
			CHECK_INT(sw_buf_put_u64(&b, tries[k]), 0);
			snprintf(want, sizeof(want), "%llu", (unsigned long long)tries[k]);
			wrong += strcmp(sw_buf_str(&b), want) != 0;
		}
	}
	for (uint64_t p = 1; p <= UINT64_MAX / 10; p *= 10) {
		sw_buf_reset(&b);
		CHECK_INT(sw_buf_put_u64(&b, p * 10 - 1), 0);
		snprintf(want, sizeof(want), "%llu", (unsigned long long)(p * 10 - 1));
		wrong += strcmp(sw_buf_str(&b), want) != 0;
	}
	CHECK_INT(wrong, 0);
	sw_buf_finish(&b);
	sw_buf_init(&b, 8);
	CHECK_INT(sw_buf_put_u64(&b, 1234567), 0);
	CHECK_INT(sw_buf_put_u64(&b, 12), -E2BIG);
	CHECK_STR(sw_buf_str(&b), "1234567");
	sw_buf_finish(&b);
}

int main(void)
{
	test_ms3();
	test_putc();
	test_put_u64();
	CHECK_STR(str("plain"), "\"plain\"");
	CHECK_STR(str(""), "\"\"");
	CHECK_STR(str(NULL), "null");
	CHECK_STR(str("a\"b\\c"), "\"a\\\"b\\\\c\"");
	CHECK_STR(str("\n\t\r\x01\x1f"), "\"\\n\\t\\r\\u0001\\u001f\"");
	CHECK_STR(str("\x7f"), "\"\x7f\""); /* DEL needs no escape */
	/* well-formed UTF-8 passes: U+00E9, U+2603, U+1F600 */
	CHECK_STR(str("\xc3\xa9 \xe2\x98\x83 \xf0\x9f\x98\x80"),
		  "\"\xc3\xa9 \xe2\x98\x83 \xf0\x9f\x98\x80\"");
	/* ill-formed: a lone continuation, an overlong '/', a surrogate, past U+10FFFF, cut */
	CHECK_STR(str("\x80"), "\"\\ufffd\"");
	CHECK_STR(str("\xc0\xaf"), "\"\\ufffd\\ufffd\"");
	CHECK_STR(str("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");
	CHECK_STR(str("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	CHECK_STR(str("a\xe2\x98"), "\"a\\ufffd\\ufffd\"");
	CHECK_STR(str("\xff"), "\"\\ufffd\"");
	CHECK_STR(ms(0), "0");
	CHECK_STR(ms(412000000), "412");
	CHECK_STR(ms(412345678), "412.346");
	CHECK_STR(ms(1500), "0.002");
	CHECK_STR(ms(10000000), "10");
	CHECK_STR(ms(10100000), "10.1");
	return sw_test_end();
}
