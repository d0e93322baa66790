/*
 * GDB remote packet framing for talking to debugserver; see gdb-remote.h.
 * Pure functions over buffers, so they can be fuzzed without a device.
 */
#include <errno.h>
#include <string.h>

#include "gdb-remote.h"
#include "util/str.h"

static const char hexdigits[] = "0123456789abcdef";

int sw_gdb_frame(const char *payload, size_t len, char *buf, size_t cap)
{
	if (len + 4 > cap)
		return -ENOSPC;
	unsigned sum = 0;
	buf[0] = '$';
	for (size_t i = 0; i < len; i++) {
		char c = payload[i];
		if (c == '$' || c == '#' || c == '}')
			return -EINVAL;
		buf[1 + i] = c;
		sum += (unsigned char)c;
	}
	buf[1 + len] = '#';
	buf[2 + len] = hexdigits[(sum >> 4) & 0xf];
	buf[3 + len] = hexdigits[sum & 0xf];
	return (int)(len + 4);
}

int sw_gdb_parse(const char *buf, size_t len, char *out, size_t out_cap, size_t *ret_used,
		 struct sw_error *err)
{
	const char *start = memchr(buf, '$', len);
	if (!start) {
		*ret_used = len;
		return 0;
	}
	size_t at = (size_t)(start - buf);
	size_t limit = out_cap ? out_cap - 1 : 0;
	if (limit > SW_GDB_MAX_PAYLOAD)
		limit = SW_GDB_MAX_PAYLOAD;
	const char *hash = memchr(start, '#', len - at);
	if (!hash) {
		if (len - at - 1 > limit)
			return sw_error_set(
			    err, -EBADMSG,
			    "debugserver packet at offset %zu is longer than %zu bytes", at, limit);
		*ret_used = at;
		return 0;
	}
	size_t plen = (size_t)(hash - start) - 1;
	if (plen > limit)
		return sw_error_set(err, -EBADMSG,
				    "debugserver packet at offset %zu is longer than %zu bytes", at,
				    limit);
	if ((size_t)(hash - buf) + 3 > len) {
		*ret_used = at;
		return 0;
	}
	int hi = sw_hex_value(hash[1]), lo = sw_hex_value(hash[2]);
	unsigned sum = 0;
	for (size_t i = 0; i < plen; i++)
		sum += (unsigned char)start[1 + i];
	if (hi < 0 || lo < 0 || (unsigned)(hi * 16 + lo) != (sum & 0xff))
		return sw_error_set(err, -EBADMSG,
				    "bad checksum in debugserver packet at offset %zu", at);
	memcpy(out, start + 1, plen);
	out[plen] = '\0';
	*ret_used = (size_t)(hash - buf) + 3;
	return 1;
}

void sw_gdb_hex(const char *s, size_t len, char *out)
{
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = hexdigits[((unsigned char)s[i]) >> 4];
		out[2 * i + 1] = hexdigits[((unsigned char)s[i]) & 0xf];
	}
	out[2 * len] = '\0';
}
