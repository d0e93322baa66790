/*
 * Tests of how devices are shown: the NDJSON objects of `stallwatch devices`
 * (escapes, null for unknown fields), the text table (a hostile device name
 * cannot forge lines), the iOS 17 launch command lines (split back into
 * words by /bin/sh itself, the oracle for the quoting) and the deadline from
 * STALLWATCH_DEVICE_TIMEOUT.
 */
#include <errno.h>
#include <stdlib.h>

#include "device/device-format.h"
#include "test.h"

static char *capture(void (*fn)(FILE *f, void *arg), void *arg)
{
	char *data = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&data, &len);
	fn(f, arg);
	fclose(f);
	return data;
}

static void print_json(FILE *f, void *arg)
{
	sw_device_print_json(f, arg, 1);
}

static void print_text(FILE *f, void *arg)
{
	sw_device_print_text(f, arg, 1, false);
}

static void test_listing(void)
{
	struct sw_device_info d = {.conn = SW_DEVICE_USB | SW_DEVICE_NETWORK};
	snprintf(d.udid, sizeof(d.udid), "00008110-000A1B2C3D4E5F60");
	snprintf(d.name, sizeof(d.name), "Ana's \"phone\"\n\x1b[31mx");
	snprintf(d.product_version, sizeof(d.product_version), "16.7.2");
	char *json = capture(print_json, &d);
	CHECK_STR(json,
		  "{\"schema\":1,\"type\":\"device\",\"udid\":\"00008110-000A1B2C3D4E5F60\","
		  "\"name\":\"Ana's \\\"phone\\\"\\u000a\\u001b[31mx\",\"product_type\":null,"
		  "\"ios_version\":\"16.7.2\",\"connection\":\"usb+network\",\"error\":null}\n");
	free(json);
	char *text = capture(print_text, &d);
	/* one line, the control characters shown as '?' */
	CHECK(text && strchr(text, '\n') == text + strlen(text) - 1);
	CHECK(text && strstr(text, "Ana's \"phone\"??[31mx") != NULL);
	CHECK(text && strstr(text, "usb+network") != NULL);
	free(text);
}

/* The words /bin/sh makes of a command line, one a line. */
static char *shell_words(const char *line)
{
	char script[4096];
	snprintf(script, sizeof(script),
		 "set -- %s; for w in \"$@\"; do printf '%%s\\n' \"$w\"; done", line);
	char cmd[8192];
	size_t n = 0;
	/* the script itself goes to sh -c inside single quotes */
	n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, "sh -c '");
	for (const char *p = script; *p && n + 8 < sizeof(cmd); p++)
		n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, *p == '\'' ? "'\\''" : "%c", *p);
	snprintf(cmd + n, sizeof(cmd) - n, "'");
	FILE *p = popen(cmd, "r");
	if (!p)
		return NULL;
	static char out[8192];
	size_t len = fread(out, 1, sizeof(out) - 1, p);
	out[len] = '\0';
	pclose(p);
	return out;
}

static void test_launch_commands(void)
{
	const char *env[] = {"STALLWATCH_THRESHOLD_MS=200", "STALLWATCH_TOKEN=it's a \"secret\""};
	struct sw_buf b;
	sw_buf_init(&b, 0);
	CHECK_INT(sw_device_launch_commands(&b, "00008110-0001", "com.example.app", env, 2), 0);
	const char *all = sw_buf_str(&b);
	const char *nl = strchr(all, '\n');
	CHECK(nl && strncmp(all, "  xcrun ", 8) == 0 &&
	      strncmp(nl + 1, "  pymobiledevice3 ", 18) == 0);
	char first[2048];
	snprintf(first, sizeof(first), "%.*s", (int)(nl - all), all);
	CHECK_STR(shell_words(first),
		  "xcrun\ndevicectl\ndevice\nprocess\nlaunch\n--device\n00008110-0001\n"
		  "--environment-variables\n"
		  "{\"STALLWATCH_THRESHOLD_MS\":\"200\",\"STALLWATCH_TOKEN\":\"it's a "
		  "\\\"secret\\\"\"}\ncom.example.app\n");
	char second[2048];
	snprintf(second, sizeof(second), "%.*s", (int)strcspn(nl + 1, "\n"), nl + 1);
	CHECK_STR(shell_words(second),
		  "pymobiledevice3\ndeveloper\ndvt\nlaunch\n--tunnel\n00008110-0001\n--env\n"
		  "STALLWATCH_THRESHOLD_MS\n200\n--env\nSTALLWATCH_TOKEN\nit's a \"secret\"\n"
		  "com.example.app\n");
	/* without an environment devicectl gets no --environment-variables */
	sw_buf_reset(&b);
	CHECK_INT(sw_device_launch_commands(&b, "U", "com.x", NULL, 0), 0);
	CHECK(strstr(sw_buf_str(&b), "--environment-variables") == NULL);
	sw_buf_finish(&b);
}

static void test_timeout(void)
{
	unsigned ms = 0;
	unsetenv("STALLWATCH_DEVICE_TIMEOUT");
	CHECK_INT(sw_device_timeout_from_env(&ms), 0);
	CHECK_INT(ms, SW_DEVICE_TIMEOUT_MS);
	setenv("STALLWATCH_DEVICE_TIMEOUT", "1.5", 1);
	CHECK_INT(sw_device_timeout_from_env(&ms), 0);
	CHECK_INT(ms, 1500);
	const char *bad[] = {"0", "-1", "x", "3601", "1s", "nan"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("STALLWATCH_DEVICE_TIMEOUT", bad[i], 1);
		CHECK_INT(sw_device_timeout_from_env(&ms), -EINVAL);
	}
}

int main(void)
{
	test_listing();
	test_launch_commands();
	test_timeout();
	return sw_test_end();
}
