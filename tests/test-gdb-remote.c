/*
 * Tests of the GDB remote packet framing against packets written out by
 * hand from the protocol's definition (checksums computed here, in the test).
 */
#include <errno.h>

#include "device/gdb-remote.h"
#include "test.h"

static unsigned sum_of(const char *s)
{
	unsigned sum = 0;
	for (; *s; s++)
		sum += (unsigned char)*s;
	return sum & 0xff;
}

static void test_frame(void)
{
	char buf[64], want[64];
	int n = sw_gdb_frame("qLaunchSuccess", 14, buf, sizeof(buf));
	snprintf(want, sizeof(want), "$qLaunchSuccess#%02x", sum_of("qLaunchSuccess"));
	CHECK_INT(n, (int)strlen(want));
	buf[n > 0 ? n : 0] = '\0';
	CHECK_STR(buf, want);
	/* "OK" sums to 0x4f + 0x4b = 0x9a, as in every GDB trace */
	n = sw_gdb_frame("OK", 2, buf, sizeof(buf));
	buf[n > 0 ? n : 0] = '\0';
	CHECK_STR(buf, "$OK#9a");
	CHECK_INT(sw_gdb_frame("OK", 2, buf, 5), -ENOSPC);
	CHECK_INT(sw_gdb_frame("a#b", 3, buf, sizeof(buf)), -EINVAL);
}

static void test_parse(void)
{
	char out[32];
	size_t used = 0;
	struct sw_error err = {0};
	const char *stream = "+$OK#9a+$E08#ad";
	CHECK_INT(sw_gdb_parse(stream, strlen(stream), out, sizeof(out), &used, &err), 1);
	CHECK_STR(out, "OK");
	CHECK_INT(used, 7);
	CHECK_INT(sw_gdb_parse(stream + used, strlen(stream) - used, out, sizeof(out), &used, &err),
		  1);
	CHECK_STR(out, "E08");
	CHECK_INT(sum_of("E08"), 0xad);

	/* cut before the checksum: wait for more, dropping only the noise */
	CHECK_INT(sw_gdb_parse("++$OK#9", 7, out, sizeof(out), &used, &err), 0);
	CHECK_INT(used, 2);
	CHECK_INT(sw_gdb_parse("+++", 3, out, sizeof(out), &used, &err), 0);
	CHECK_INT(used, 3);

	CHECK_INT(sw_gdb_parse("$OK#9b", 6, out, sizeof(out), &used, &err), -EBADMSG);
	CHECK(strstr(err.msg, "checksum") != NULL);
	CHECK_INT(sw_gdb_parse("$OK#zz", 6, out, sizeof(out), &used, &err), -EBADMSG);

	/* longer than the caller's buffer, with or without its end in sight */
	char big[64];
	memset(big, 'a', sizeof(big));
	big[0] = '$';
	CHECK_INT(sw_gdb_parse(big, sizeof(big), out, sizeof(out), &used, &err), -EBADMSG);
	CHECK(strstr(err.msg, "offset 0") != NULL);
}

static void test_hex(void)
{
	char out[32];
	sw_gdb_hex("A=1", 3, out);
	CHECK_STR(out, "413d31");
}

int main(void)
{
	test_frame();
	test_parse();
	test_hex();
	return sw_test_end();
}
