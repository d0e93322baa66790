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

/* One character of a JSON string, escaped as needed. */
static int json_char(struct sw_buf *out, char c)
{
	if (c == '"' || c == '\\') {
		int r = sw_buf_putc(out, '\\');
		return r ? r : sw_buf_putc(out, c);
	}
	if ((unsigned char)c < 0x20)
		return sw_buf_printf(out, "\\u%04x", (unsigned char)c);
	return sw_buf_putc(out, c);
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

/* s as one word of a POSIX shell: bare when safe, else in single quotes. */
static int shell_word(struct sw_buf *out, const char *s)
{
	static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				   "0123456789._-/:=,@+%";
	if (s[0] && strspn(s, safe) == strlen(s))
		return sw_buf_puts(out, s);
	int r = sw_buf_putc(out, '\'');
	for (; *s && r == 0; s++)
		r = *s == '\'' ? sw_buf_puts(out, "'\\''") : sw_buf_putc(out, *s);
	return r ? r : sw_buf_putc(out, '\'');
}

/* The JSON object {"NAME":"VALUE",...} devicectl takes for the environment. */
static int env_json(struct sw_buf *out, const char *const *env, size_t n)
{
	int r = sw_buf_putc(out, '{');
	for (size_t i = 0; i < n && r == 0; i++) {
		const char *eq = strchr(env[i], '=');
		size_t name_len = eq ? (size_t)(eq - env[i]) : strlen(env[i]);
		r = sw_buf_puts(out, i ? ",\"" : "\"");
		for (size_t k = 0; k < name_len && r == 0; k++)
			r = json_char(out, env[i][k]);
		if (r == 0)
			r = sw_buf_puts(out, "\":\"");
		for (const char *v = eq ? eq + 1 : ""; *v && r == 0; v++)
			r = json_char(out, *v);
		if (r == 0)
			r = sw_buf_putc(out, '"');
	}
	return r ? r : sw_buf_putc(out, '}');
}

int sw_device_launch_commands(struct sw_buf *out, const char *udid, const char *bundle,
			      const char *const *env, size_t env_count)
{
	struct sw_buf json;
	sw_buf_init(&json, 0);
	int r = env_json(&json, env, env_count);
	if (r == 0)
		r = sw_buf_putc(&json, '\0');
	if (r == 0)
		r = sw_buf_puts(out, "  xcrun devicectl device process launch --device ");
	if (r == 0)
		r = shell_word(out, udid);
	if (r == 0 && env_count) {
		r = sw_buf_puts(out, " --environment-variables ");
		if (r == 0)
			r = shell_word(out, (const char *)json.data);
	}
	if (r == 0)
		r = sw_buf_putc(out, ' ');
	if (r == 0)
		r = shell_word(out, bundle);
	if (r == 0)
		r = sw_buf_puts(out, "\n  pymobiledevice3 developer dvt launch --tunnel ");
	if (r == 0)
		r = shell_word(out, udid);
	for (size_t i = 0; i < env_count && r == 0; i++) {
		const char *eq = strchr(env[i], '=');
		char name[128];
		size_t name_len = eq ? (size_t)(eq - env[i]) : strlen(env[i]);
		snprintf(name, sizeof(name), "%.*s", (int)name_len, env[i]);
		r = sw_buf_puts(out, " --env ");
		if (r == 0)
			r = shell_word(out, name);
		if (r == 0)
			r = sw_buf_putc(out, ' ');
		if (r == 0)
			r = shell_word(out, eq ? eq + 1 : "");
	}
	if (r == 0)
		r = sw_buf_putc(out, ' ');
	if (r == 0)
		r = shell_word(out, bundle);
	if (r == 0)
		r = sw_buf_putc(out, '\n');
	sw_buf_finish(&json);
	return r;
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
