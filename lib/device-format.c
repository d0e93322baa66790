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

static const char *or_dash(const char *s)
{
	return s && s[0] ? s : "-";
}

int sw_device_print_text(FILE *out, const struct sw_device_info *devices, size_t count, bool header)
{
	if (header && count)
		fprintf(out, "%-40s  %-11s  %-8s  %-12s  %s\n", "UDID", "CONNECTION", "IOS",
			"PRODUCT", "NAME");
	for (size_t i = 0; i < count; i++) {
		const struct sw_device_info *d = &devices[i];
		fprintf(out, "%-40s  %-11s  %-8s  %-12s  %s\n", d->udid,
			sw_device_conn_name(d->conn), or_dash(d->product_version),
			or_dash(d->product_type), or_dash(d->name));
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
