/*
 * Tests for the JSON writer (json-write.c).  Expectations come from RFC
 * 8259 (what must be escaped) and the Unicode standard's definition of
 * well-formed UTF-8 (table 3-7): ill-formed bytes become U+FFFD so that
 * the output is always valid JSON.
 */
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

int main(void)
{
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
