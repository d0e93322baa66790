/*
 * libFuzzer target for the demanglers: every input is demangled as given, as
 * a Swift name (with "$s" and "_T" put in front, to reach both parsers from
 * any bytes), as a Rust v0 name ("_R" in front) and as the name of Emacs's
 * native code ("F" in front), in both styles, and filtered as running
 * text.  The demanglers must never crash, hang or exceed their ceilings on any of it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "demangle/demangle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(const char *s, size_t n, struct sw_buf *out)
{
	sw_buf_reset(out);
	size_t before = out->len;
	int r = sw_demangle_n(s, n, 0, out);
	if (r == 0 && out->len != before)
		abort(); /* "not mangled" must leave the output untouched */
	sw_buf_reset(out);
	sw_demangle_n(s, n, SW_DEMANGLE_SIMPLIFIED, out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *buf = malloc(size + 3);
	if (!buf)
		return 0;
	struct sw_buf out;
	sw_buf_init(&out, 1 << 20);
	memcpy(buf + 2, data, size);
	one(buf + 2, size, &out);
	memcpy(buf, "$s", 2);
	one(buf, size + 2, &out);
	memcpy(buf, "_T", 2);
	one(buf, size + 2, &out);
	memcpy(buf, "_R", 2);
	one(buf, size + 2, &out);
	buf[1] = 'F';
	one(buf + 1, size + 1, &out);
	sw_buf_reset(&out);
	sw_demangle_filter(buf + 2, size, 0, &out);
	sw_buf_finish(&out);
	free(buf);
	return 0;
}
