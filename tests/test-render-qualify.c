/*
 * Tests of the device qualification of output lines: every line of text
 * gets the "[UDID] " prefix, every NDJSON object a "udid" member that a JSON
 * reader would see first, and nothing else changes.
 */
#include "render-qualify.h"
#include "test.h"

static const char *qualify(struct sw_buf *b, const char *in, const char *udid, bool ndjson)
{
	sw_buf_reset(b);
	CHECK_INT(sw_render_qualify(b, in, strlen(in), udid, ndjson), 0);
	sw_buf_putc(b, '\0');
	return (const char *)b->data;
}

int main(void)
{
	struct sw_buf b;
	sw_buf_init(&b, 0);
	CHECK_STR(qualify(&b, "stall 1: 400 ms\nstall 1:   3 x thread 7\n", "U-1", false),
		  "[U-1] stall 1: 400 ms\n[U-1] stall 1:   3 x thread 7\n");
	/* a last line without its newline keeps having none */
	CHECK_STR(qualify(&b, "a\nb", "U", false), "[U] a\n[U] b");
	CHECK_STR(qualify(&b, "{\"schema\":1,\"type\":\"stall\"}\n{}\n", "U", true),
		  "{\"udid\":\"U\",\"schema\":1,\"type\":\"stall\"}\n{\"udid\":\"U\"}\n");
	/* a UDID cannot break out of its string */
	CHECK_STR(qualify(&b, "{\"a\":1}\n", "x\"y\\z\n", true), "{\"udid\":\"xyz\",\"a\":1}\n");
	CHECK_STR(qualify(&b, "", "U", false), "");
	sw_buf_finish(&b);
	return sw_test_end();
}
