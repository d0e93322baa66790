/*
 * Qualifying rendered lines by device (see render-qualify.h), so that the
 * streams of a device farm can share one standard output and every line can
 * still be grepped on its own.
 */
#include <errno.h>
#include <string.h>

#include "render-qualify.h"

/* UDIDs are hex digits and dashes; anything else is dropped from the label. */
static int put_udid(struct sw_buf *out, const char *udid)
{
	for (const char *p = udid; *p; p++) {
		char c = *p;
		bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
			  (c >= 'A' && c <= 'Z') || c == '-' || c == '_' || c == '.';
		if (ok && sw_buf_putc(out, c) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int qualify_line(struct sw_buf *out, const char *line, size_t len, const char *udid,
			bool ndjson)
{
	int r = 0;
	if (ndjson && len && line[0] == '{') {
		r = sw_buf_puts(out, "{\"udid\":\"");
		if (r == 0)
			r = put_udid(out, udid);
		if (r == 0)
			r = sw_buf_puts(out, len > 1 && line[1] != '}' ? "\"," : "\"");
		if (r == 0)
			r = sw_buf_append(out, line + 1, len - 1);
		return r;
	}
	r = sw_buf_putc(out, '[');
	if (r == 0)
		r = put_udid(out, udid);
	if (r == 0)
		r = sw_buf_puts(out, "] ");
	if (r == 0)
		r = sw_buf_append(out, line, len);
	return r;
}

int sw_render_qualify(struct sw_buf *out, const void *in, size_t len, const char *udid, bool ndjson)
{
	const char *p = in, *end = p + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		int r = qualify_line(out, p, n, udid, ndjson);
		if (r < 0)
			return r;
		p += n;
	}
	return 0;
}
