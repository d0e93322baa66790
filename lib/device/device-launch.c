/*
 * Launching an app on iOS 16 and older: installation_proxy's Lookup finds the
 * app's bundle path and tells whether it is development-signed, debugserver
 * starts it with the agent's environment (QEnvironmentHexEncoded, A,
 * qLaunchSuccess) and detaches (D), leaving it running.
 *
 * The GDB remote exchange is ours (gdb-remote.c) rather than
 * debugserver_client_send_command(): that helper gives up after one
 * 1-second read, and debugserver's replies to A can take longer while the
 * app starts.  We read until the operation's deadline instead.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libimobiledevice/debugserver.h>
#include <libimobiledevice/installation_proxy.h>
#include <plist/plist.h>

#include "device-private.h"
#include "gdb-remote.h"

#define LABEL           "stallwatch"
#define MAX_ENV         64
#define MAX_ENV_ENTRY   2048
#define SVC_INSTPROXY   "com.apple.mobile.installation_proxy"
#define SVC_DEBUGSERVER "com.apple.debugserver"

struct launch_job {
	char udid[64];
	char bundle_id[256];
	char dylib[512];
	size_t env_count;
	char env[MAX_ENV][MAX_ENV_ENTRY];
	uint64_t deadline_ms;
	struct sw_device_launched out;
};

struct app_info {
	char path[1024]; /* the .app directory */
	char executable[256];
	bool dev_signed;
};

static char *dict_string(plist_t dict, const char *key)
{
	plist_t node = plist_dict_get_item(dict, key);
	char *s = NULL;
	if (node && plist_get_node_type(node) == PLIST_STRING)
		plist_get_string_val(node, &s);
	return s;
}

static bool dev_signed(plist_t app)
{
	plist_t ent = plist_dict_get_item(app, "Entitlements");
	plist_t gta = ent && plist_get_node_type(ent) == PLIST_DICT
			  ? plist_dict_get_item(ent, "get-task-allow")
			  : NULL;
	uint8_t b = 0;
	if (gta && plist_get_node_type(gta) == PLIST_BOOLEAN)
		plist_get_bool_val(gta, &b);
	return b != 0;
}

static int read_app(plist_t result, const char *udid, const char *bundle, struct app_info *app,
		    struct sw_error *err)
{
	plist_t entry = result && plist_get_node_type(result) == PLIST_DICT
			    ? plist_dict_get_item(result, bundle)
			    : NULL;
	if (!entry || plist_get_node_type(entry) != PLIST_DICT)
		return sw_error_set(err, -ESRCH, "app '%s' is not installed on device '%s'", bundle,
				    udid);
	char *path = dict_string(entry, "Path");
	char *exe = dict_string(entry, "CFBundleExecutable");
	int r = 0;
	if (!path || !exe || !path[0] || !exe[0] || strchr(exe, '/') ||
	    strlen(path) >= sizeof(app->path) || strlen(exe) >= sizeof(app->executable))
		r = sw_error_set(err, -EPROTO,
				 "installation_proxy on device '%s' gave no usable path or "
				 "executable for '%s'",
				 udid, bundle);
	else {
		snprintf(app->path, sizeof(app->path), "%s", path);
		snprintf(app->executable, sizeof(app->executable), "%s", exe);
		app->dev_signed = dev_signed(entry);
	}
	free(path);
	free(exe);
	return r;
}

static int lookup_app(idevice_t dev, lockdownd_client_t ld, const char *udid, const char *bundle,
		      struct app_info *app, struct sw_error *err)
{
	lockdownd_service_descriptor_t svc = NULL;
	lockdownd_error_t le = lockdownd_start_service(ld, SVC_INSTPROXY, &svc);
	if (le != LOCKDOWN_E_SUCCESS)
		return sw_device_error(err, DEVICE_SRC_LOCKDOWN, le, udid,
				       "cannot start installation_proxy");
	instproxy_client_t ip = NULL;
	instproxy_error_t ie = instproxy_client_new(dev, svc, &ip);
	lockdownd_service_descriptor_free(svc);
	if (ie != INSTPROXY_E_SUCCESS)
		return sw_device_error(err, DEVICE_SRC_INSTPROXY, ie, udid,
				       "cannot reach installation_proxy");
	const char *ids[] = {bundle, NULL};
	plist_t opts = instproxy_client_options_new();
	instproxy_client_options_set_return_attributes(
	    opts, "CFBundleIdentifier", "CFBundleExecutable", "Path", "Entitlements", NULL);
	plist_t result = NULL;
	ie = instproxy_lookup(ip, ids, opts, &result);
	instproxy_client_options_free(opts);
	instproxy_client_free(ip);
	int r = ie == INSTPROXY_E_SUCCESS ? read_app(result, udid, bundle, app, err)
					  : sw_device_error(err, DEVICE_SRC_INSTPROXY, ie, udid,
							    "cannot look up the app");
	plist_free(result);
	return r;
}

/* ---- GDB remote over the debugserver connection ---- */

struct gdb {
	debugserver_client_t client;
	const char *udid;
	uint64_t deadline_ms;
	char buf[SW_GDB_MAX_PAYLOAD + 64];
	size_t len;
	char frame[SW_GDB_MAX_PAYLOAD + 8];
};

static int gdb_fill(struct gdb *g, struct sw_error *err)
{
	while (sw_device_now_ms() < g->deadline_ms) {
		uint32_t got = 0;
		debugserver_error_t de = debugserver_client_receive_with_timeout(
		    g->client, g->buf + g->len, (uint32_t)(sizeof(g->buf) - g->len), &got, 250);
		if (got > 0) {
			g->len += got;
			return 0;
		}
		if (de != DEBUGSERVER_E_SUCCESS && de != DEBUGSERVER_E_TIMEOUT)
			return sw_device_error(err, DEVICE_SRC_DEBUG, de, g->udid,
					       "debugserver closed the connection");
	}
	return sw_error_set(err, -ETIMEDOUT, "debugserver on device '%s' did not answer in time",
			    g->udid);
}

/* The next reply, skipping console output ("O" and hex digits). */
static int gdb_reply(struct gdb *g, char *out, size_t cap, struct sw_error *err)
{
	for (;;) {
		size_t used = 0;
		int r = sw_gdb_parse(g->buf, g->len, out, cap, &used, err);
		if (r < 0)
			return r;
		memmove(g->buf, g->buf + used, g->len - used);
		g->len -= used;
		if (r == 1) {
			uint32_t sent = 0;
			debugserver_client_send(g->client, "+", 1, &sent);
			bool output = out[0] == 'O' && out[1] && strcmp(out, "OK") != 0 &&
				      strspn(out + 1, "0123456789abcdefABCDEF") == strlen(out + 1);
			if (!output)
				return 0;
			continue;
		}
		r = gdb_fill(g, err);
		if (r < 0)
			return r;
	}
}

static int gdb_command(struct gdb *g, const char *payload, char *reply, size_t cap,
		       struct sw_error *err)
{
	int n = sw_gdb_frame(payload, strlen(payload), g->frame, sizeof(g->frame));
	if (n < 0)
		return sw_error_set(err, n, "debugserver command too long");
	uint32_t sent = 0;
	debugserver_error_t de = debugserver_client_send(g->client, g->frame, (uint32_t)n, &sent);
	if (de != DEBUGSERVER_E_SUCCESS || sent != (uint32_t)n)
		return sw_device_error(err, DEVICE_SRC_DEBUG, de, g->udid,
				       "cannot send to debugserver");
	return gdb_reply(g, reply, cap, err);
}

static int expect_ok(struct gdb *g, const char *payload, const char *what, struct sw_error *err)
{
	char reply[1024];
	int r = gdb_command(g, payload, reply, sizeof(reply), err);
	if (r < 0)
		return r;
	if (strcmp(reply, "OK") != 0)
		return sw_error_set(err, -EIO, "debugserver on device '%s' refused %s: %s", g->udid,
				    what, reply[0] ? reply : "(empty reply)");
	return 0;
}

static int set_env(struct gdb *g, const char *entry, struct sw_error *err)
{
	static const char prefix[] = "QEnvironmentHexEncoded:";
	char payload[sizeof(prefix) + 2 * MAX_ENV_ENTRY];
	size_t len = strlen(entry);
	if (len >= MAX_ENV_ENTRY)
		return sw_error_set(err, -E2BIG, "environment entry too long");
	memcpy(payload, prefix, sizeof(prefix) - 1);
	sw_gdb_hex(entry, len, payload + sizeof(prefix) - 1);
	return expect_ok(g, payload, "the environment", err);
}

/* "A<hexlen>,0,<hex of executable path>": argv[0] only. */
static int run_app(struct gdb *g, const char *exe, struct sw_error *err)
{
	char hex[2 * 1100 + 1];
	char payload[sizeof(hex) + 64];
	size_t len = strlen(exe);
	if (len > 1100)
		return sw_error_set(err, -E2BIG, "executable path too long");
	sw_gdb_hex(exe, len, hex);
	snprintf(payload, sizeof(payload), "A%zu,0,%s", 2 * len, hex);
	int r = expect_ok(g, payload, "to start the app", err);
	if (r < 0)
		return r;
	char reply[1024];
	r = gdb_command(g, "qLaunchSuccess", reply, sizeof(reply), err);
	if (r < 0)
		return r;
	if (strcmp(reply, "OK") != 0)
		return sw_error_set(
		    err, -ENOEXEC,
		    "debugserver on device '%s' could not start '%s': %s (is the app "
		    "signed for development?)",
		    g->udid, exe, reply[0] == 'E' ? reply + 1 : reply);
	return 0;
}

static uint64_t process_pid(struct gdb *g)
{
	char reply[1024];
	struct sw_error ignored = {0};
	if (gdb_command(g, "qProcessInfo", reply, sizeof(reply), &ignored) < 0)
		return 0;
	const char *p = strstr(reply, "pid:");
	return p && (p == reply || p[-1] == ';') ? strtoull(p + 4, NULL, 16) : 0;
}

static int debug_launch(idevice_t dev, lockdownd_client_t ld, struct launch_job *lj,
			const struct app_info *app, struct sw_error *err)
{
	lockdownd_service_descriptor_t svc = NULL;
	lockdownd_error_t le = lockdownd_start_service(ld, SVC_DEBUGSERVER, &svc);
	if (le == LOCKDOWN_E_INVALID_SERVICE || le == LOCKDOWN_E_MISSING_SERVICE)
		return sw_error_set(err, -ENOENT,
				    "debugserver is not available on device '%s': the developer "
				    "disk image is not mounted (mount it with "
				    "'ideviceimagemounter', or connect the device to Xcode once)",
				    lj->udid);
	if (le != LOCKDOWN_E_SUCCESS)
		return sw_device_error(err, DEVICE_SRC_LOCKDOWN, le, lj->udid,
				       "cannot start debugserver");
	struct gdb *g = calloc(1, sizeof(*g));
	if (!g) {
		lockdownd_service_descriptor_free(svc);
		return sw_error_set(err, -ENOMEM, "out of memory");
	}
	g->udid = lj->udid;
	g->deadline_ms = lj->deadline_ms;
	debugserver_error_t de = debugserver_client_new(dev, svc, &g->client);
	lockdownd_service_descriptor_free(svc);
	int r = 0;
	if (de != DEBUGSERVER_E_SUCCESS)
		r = sw_device_error(err, DEVICE_SRC_DEBUG, de, lj->udid,
				    "cannot reach debugserver");
	for (size_t i = 0; r == 0 && i < lj->env_count; i++)
		r = set_env(g, lj->env[i], err);
	if (r == 0 && lj->dylib[0]) {
		char entry[MAX_ENV_ENTRY];
		snprintf(entry, sizeof(entry), "DYLD_INSERT_LIBRARIES=%s/%s", app->path, lj->dylib);
		r = set_env(g, entry, err);
	}
	size_t plen = strlen(app->path), elen = strlen(app->executable);
	if (r == 0 && plen + elen + 2 > sizeof(lj->out.executable))
		r = sw_error_set(err, -E2BIG, "the app's executable path is too long");
	if (r == 0) {
		memcpy(lj->out.executable, app->path, plen);
		lj->out.executable[plen] = '/';
		memcpy(lj->out.executable + plen + 1, app->executable, elen + 1);
	}
	if (r == 0)
		r = run_app(g, lj->out.executable, err);
	if (r == 0) {
		lj->out.pid = process_pid(g);
		r = expect_ok(g, "D", "to detach", err);
	}
	if (g->client)
		debugserver_client_free(g->client);
	free(g);
	return r;
}

static int launch_work(void *data, struct sw_error *err)
{
	struct launch_job *lj = data;
	idevice_t dev = NULL;
	int r = sw_device_open(lj->udid, &dev, err);
	if (r < 0)
		return r;
	lockdownd_client_t ld = NULL;
	lockdownd_error_t le = lockdownd_client_new_with_handshake(dev, &ld, LABEL);
	if (le != LOCKDOWN_E_SUCCESS) {
		idevice_free(dev);
		return sw_device_error(err, DEVICE_SRC_LOCKDOWN, le, lj->udid,
				       "cannot open a lockdownd session");
	}
	struct app_info app = {0};
	r = lookup_app(dev, ld, lj->udid, lj->bundle_id, &app, err);
	if (r == 0 && !app.dev_signed)
		r = sw_error_set(err, -ENOEXEC,
				 "app '%s' on device '%s' is not signed for development (no "
				 "get-task-allow entitlement), so debugserver cannot launch it: "
				 "install a development build, or start the app yourself and run "
				 "attach without --launch",
				 lj->bundle_id, lj->udid);
	if (r == 0)
		r = debug_launch(dev, ld, lj, &app, err);
	lockdownd_client_free(ld);
	idevice_free(dev);
	return r;
}

int sw_device_launch(const char *udid, const struct sw_device_launch *launch, unsigned timeout_ms,
		     struct sw_device_launched *ret, struct sw_error *err)
{
	if (launch->env_count > MAX_ENV)
		return sw_error_set(err, -E2BIG, "more than %d environment variables", MAX_ENV);
	struct launch_job *lj = calloc(1, sizeof(*lj));
	if (!lj)
		return sw_error_set(err, -ENOMEM, "out of memory");
	snprintf(lj->udid, sizeof(lj->udid), "%s", udid);
	snprintf(lj->bundle_id, sizeof(lj->bundle_id), "%s", launch->bundle_id);
	if (launch->dylib)
		snprintf(lj->dylib, sizeof(lj->dylib), "%s", launch->dylib);
	for (size_t i = 0; i < launch->env_count; i++) {
		if (strlen(launch->env[i]) >= MAX_ENV_ENTRY) {
			free(lj);
			return sw_error_set(err, -E2BIG, "environment entry too long");
		}
		snprintf(lj->env[i], MAX_ENV_ENTRY, "%s", launch->env[i]);
	}
	lj->env_count = launch->env_count;
	/* The worker stops reading debugserver a little before we give up on it. */
	lj->deadline_ms = sw_device_now_ms() + (timeout_ms > 500 ? timeout_ms - 250 : timeout_ms);
	struct device_job job = {launch_work, NULL, lj};
	int r = sw_device_run(job, timeout_ms, "cannot launch the app", udid, err);
	if (r == -ETIMEDOUT)
		return r;
	if (r == 0)
		*ret = lj->out;
	free(lj);
	return r;
}
