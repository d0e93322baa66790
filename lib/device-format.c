/*
 * How devices are shown: the text table and the NDJSON objects of
 * `stallwatch devices`, the connection names, and the device deadline taken
 * from the environment.  Built with or without libimobiledevice.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device-format.h"

#define DEVICE_SCHEMA 1

const char *sw_device_conn_name(unsigned conn)
{
	if ((conn & SW_DEVICE_USB) && (conn & SW_DEVICE_NETWORK))
		return "usb+network";
	if (conn & SW_DEVICE_USB)
		return "usb";
	if (conn & SW_DEVICE_NETWORK)
		return "network";
	return "unknown";
}

/*
 * A device's name is whatever its owner typed: control characters (a
 * terminal escape, a newline that would forge a line) become '?'.
 */
static const char *printable(const char *s, char *buf, size_t cap)
{
	if (!s || !s[0])
		return "-";
	size_t n = 0;
	for (; *s && n + 1 < cap; s++)
		buf[n++] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
	buf[n] = '\0';
	return buf;
}

int sw_device_print_text(FILE *out, const struct sw_device_info *devices, size_t count, bool header)
{
	if (header && count)
		fprintf(out, "%-40s  %-11s  %-8s  %-12s  %s\n", "UDID", "CONNECTION", "IOS",
			"PRODUCT", "NAME");
	for (size_t i = 0; i < count; i++) {
		const struct sw_device_info *d = &devices[i];
		char u[sizeof(d->udid)], v[sizeof(d->product_version)], t[sizeof(d->product_type)],
		    n[sizeof(d->name)];
		fprintf(out, "%-40s  %-11s  %-8s  %-12s  %s\n", printable(d->udid, u, sizeof(u)),
			sw_device_conn_name(d->conn), printable(d->product_version, v, sizeof(v)),
			printable(d->product_type, t, sizeof(t)), printable(d->name, n, sizeof(n)));
	}
	return ferror(out) ? -EIO : 0;
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

static void json_field(FILE *out, const char *key, const char *value)
{
	fprintf(out, ",\"%s\":", key);
	if (value && value[0])
		json_string(out, value);
	else
		fputs("null", out);
}

int sw_device_print_json(FILE *out, const struct sw_device_info *devices, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		const struct sw_device_info *d = &devices[i];
		fprintf(out, "{\"schema\":%d,\"type\":\"device\"", DEVICE_SCHEMA);
		json_field(out, "udid", d->udid);
		json_field(out, "name", d->name);
		json_field(out, "product_type", d->product_type);
		json_field(out, "ios_version", d->product_version);
		json_field(out, "connection", sw_device_conn_name(d->conn));
		json_field(out, "error", d->info_status ? d->info_error : NULL);
		fputs("}\n", out);
	}
	return ferror(out) ? -EIO : 0;
}

int sw_device_timeout_from_env(unsigned *ret_ms)
{
	const char *s = getenv("STALLWATCH_DEVICE_TIMEOUT");
	if (!s || !s[0]) {
		*ret_ms = SW_DEVICE_TIMEOUT_MS;
		return 0;
	}
	char *end;
	errno = 0;
	double secs = strtod(s, &end);
	if (errno || end == s || *end || !(secs > 0) || secs > 3600)
		return -EINVAL;
	*ret_ms = (unsigned)(secs * 1000.0 + 0.5);
	if (*ret_ms == 0)
		*ret_ms = 1;
	return 0;
}
