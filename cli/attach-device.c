/*
 * stallwatch attach BUNDLE-ID: the agent of an app on a tethered iOS device,
 * through usbmuxd (see attach-device.h).  One device, or with --all-devices
 * every device at once, each in its own thread, devices that appear later
 * included; with --launch the app is started first.  The device work is in
 * lib/device*.c; this file decides what to say and which status to return.
 */
#include <errno.h>
#include <pthread.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attach-device.h"
#include "device/device-agent.h"
#include "device/device-format.h"
#include "device/device.h"

/* Waiting "until Ctrl-C": a day. */
#define WAIT_FOREVER_MS (24u * 3600u * 1000u)
#define LAUNCH_WAIT_MS  30000u
#define MAX_LAUNCH_ENV  8

struct common {
	const struct sw_attach_device_options *ao;
	const struct sw_watch_options *wo;
	bool (*stop)(void *ctx);
	void *stop_ctx;
	unsigned timeout_ms;
};

static bool stopped(const struct common *c)
{
	return c->stop && c->stop(c->stop_ctx);
}

/* ---- launching ---- */

struct launch_env {
	char entries[MAX_LAUNCH_ENV][320];
	const char *ptrs[MAX_LAUNCH_ENV];
	size_t count;
};

static void env_add(struct launch_env *e, const char *name, const char *value)
{
	if (e->count >= MAX_LAUNCH_ENV)
		return;
	snprintf(e->entries[e->count], sizeof(e->entries[0]), "%s=%s", name, value);
	e->ptrs[e->count] = e->entries[e->count];
	e->count++;
}

/* The agent's settings from the command line, as its environment variables. */
static void build_env(const struct sw_watch_options *wo, struct launch_env *e)
{
	char num[32];
	if (wo->threshold_ms) {
		snprintf(num, sizeof(num), "%lu", wo->threshold_ms);
		env_add(e, "STALLWATCH_THRESHOLD_MS", num);
	}
	if (wo->interval_ms) {
		snprintf(num, sizeof(num), "%lu", wo->interval_ms);
		env_add(e, "STALLWATCH_INTERVAL_MS", num);
	}
	if (wo->all_threads)
		env_add(e, "STALLWATCH_ALL_THREADS", "1");
	if (wo->token)
		env_add(e, "STALLWATCH_TOKEN", wo->token);
}

static void print_guidance(const char *udid, const char *version, const char *bundle,
			   const struct launch_env *e, const char *dylib)
{
	fprintf(stderr,
		"stallwatch: device '%s' runs iOS %s: its debugserver sits behind a tunnel that "
		"libimobiledevice cannot open, so start the app with one of:\n",
		udid, version);
	struct sw_buf lines;
	sw_buf_init(&lines, 0);
	if (sw_device_launch_commands(&lines, udid, bundle, e->ptrs, e->count) == 0)
		fwrite(lines.data, 1, lines.len, stderr);
	sw_buf_finish(&lines);
	if (dylib)
		fprintf(stderr,
			"stallwatch: add DYLD_INSERT_LIBRARIES=<the app's bundle path>/%s to load "
			"the agent from the app's bundle\n",
			dylib);
	fprintf(stderr, "stallwatch: waiting for the agent of '%s' (Ctrl-C to stop)\n", bundle);
}

/* 0: launched (or guidance given); otherwise an exit status. */
static int launch(const struct common *c, const struct sw_device_info *dev, bool *ret_guided)
{
	struct launch_env e = {0};
	build_env(c->wo, &e);
	int major = sw_device_ios_major(dev->product_version);
	if (major >= 17) {
		print_guidance(dev->udid, dev->product_version, c->ao->bundle_id, &e, c->ao->dylib);
		*ret_guided = true;
		return 0;
	}
	struct sw_device_launch l = {
	    .bundle_id = c->ao->bundle_id,
	    .env = e.ptrs,
	    .env_count = e.count,
	    .dylib = c->ao->dylib,
	};
	struct sw_device_launched out;
	struct sw_error err = {0};
	int r = sw_device_launch(dev->udid, &l, c->timeout_ms, &out, &err);
	if (r < 0) {
		sw_cli_error("cannot launch '%s': %s", c->ao->bundle_id, sw_error_str(&err));
		/* The app cannot be started: the agent's side; the rest: the device's. */
		return r == -ESRCH || r == -ENOEXEC || r == -EIO ? SW_EXIT_AGENT : SW_EXIT_DEVICE;
	}
	fprintf(stderr, "stallwatch: launched '%s' on device '%s' (pid %llu)\n", c->ao->bundle_id,
		dev->udid, (unsigned long long)out.pid);
	return 0;
}

/* ---- one device ---- */

static bool device_present(const char *udid, unsigned timeout_ms)
{
	struct sw_device_info *devices = NULL;
	size_t count = 0;
	struct sw_error err = {0};
	if (sw_device_list(timeout_ms, false, &devices, &count, &err) < 0)
		return false;
	bool found = false;
	for (size_t i = 0; i < count && !found; i++)
		found = strcmp(devices[i].udid, udid) == 0 && (devices[i].conn & SW_DEVICE_USB);
	free(devices);
	return found;
}

static bool stop_cb(void *ctx)
{
	return stopped(ctx);
}

static unsigned wait_ms_for(const struct common *c, bool guided)
{
	if (c->ao->wait_given)
		return (unsigned)c->ao->wait_ms;
	if (guided || c->ao->all_devices)
		return WAIT_FOREVER_MS;
	return c->ao->launch ? LAUNCH_WAIT_MS : 0;
}

/*
 * Attaches to the app on dev and streams until the app, the device or the
 * user ends it.  output: the recording path or NULL; shared: the output of
 * every device's stream with --all-devices, or NULL.  Returns an exit status.
 */
static int run_device(const struct common *c, const struct sw_device_info *dev, bool launch_first,
		      const char *output, struct sw_output *shared, pthread_mutex_t *shared_lock,
		      uint64_t *ret_stalls)
{
	bool guided = false;
	if (launch_first) {
		int st = launch(c, dev, &guided);
		if (st)
			return st;
	}
	struct sw_wire_config cfg = {0};
	if (c->wo->threshold_ms) {
		cfg.present |= SW_CONFIG_HAS_THRESHOLD;
		cfg.threshold_ms = (uint32_t)c->wo->threshold_ms;
	}
	if (c->wo->interval_ms) {
		cfg.present |= SW_CONFIG_HAS_INTERVAL;
		cfg.interval_us = (uint32_t)c->wo->interval_ms * 1000;
	}
	if (c->wo->all_threads) {
		cfg.present |= SW_CONFIG_HAS_FLAGS;
		cfg.flags = SW_CONFIG_ALL_THREADS;
	}
	struct sw_session_options so = {.token = c->wo->token, .config = cfg.present ? &cfg : NULL};
	struct sw_device_agent_options ao = {
	    .bundle_id = c->ao->bundle_id,
	    .wait_ms = wait_ms_for(c, guided),
	    .timeout_ms = c->timeout_ms,
	    .session = &so,
	    .stop = stop_cb,
	    .ctx = (void *)c,
	};
	struct sw_session *s = NULL;
	uint16_t port = 0;
	enum sw_device_stage stage = SW_STAGE_DEVICE;
	struct sw_error err = {0};
	int r = sw_device_agent_connect(dev->udid, &ao, &s, &port, &stage, &err);
	if (r == -EINTR)
		return SW_EXIT_OK;
	if (r < 0) {
		sw_cli_error("%s", sw_error_str(&err));
		return (int)stage;
	}
	const struct sw_wire_hello *h = sw_session_hello(s);
	const char *version = h && h->bundle_version ? h->bundle_version : "";
	fprintf(stderr, "stallwatch: attached to '%s'%s%s (pid %llu) on device '%s', port %u\n",
		c->ao->bundle_id, *version ? " version " : "", version,
		h ? (unsigned long long)h->pid : 0ULL, dev->udid, port);

	struct sw_watch_options wo = *c->wo;
	struct sw_watch_result res = {0};
	wo.output = output;
	wo.source = dev->udid;
	wo.device_udid = dev->udid;
	wo.device_name = dev->name;
	wo.result = &res;
	wo.shared = shared;
	wo.shared_lock = shared_lock;
	char what[200];
	snprintf(what, sizeof(what), "'%s' on device '%s'", c->ao->bundle_id, dev->udid);
	int status = sw_watch_stream(s, &wo, stop_cb, (void *)c, what);
	sw_session_free(s);
	*ret_stalls = res.stalls;
	if (status == SW_EXIT_OK && !res.goodbye && !stopped(c)) {
		if (!device_present(dev->udid, c->timeout_ms)) {
			sw_cli_error("device '%s' went away during the stream%s%s%s", dev->udid,
				     output ? "; '" : "", output ? output : "",
				     output ? "' keeps what arrived before" : "");
			return SW_EXIT_DEVICE;
		}
		sw_cli_warn("the agent of %s closed the connection without a goodbye (did the "
			    "app crash?)",
			    what);
	}
	return status;
}

static int attach_single(const struct common *c)
{
	struct sw_device_info dev;
	struct sw_error err = {0};
	int r = sw_device_choose(c->ao->udid, c->timeout_ms, &dev, &err);
	if (r < 0) {
		sw_cli_error("%s", sw_error_str(&err));
		return SW_EXIT_DEVICE;
	}
	uint64_t stalls = 0;
	return run_device(c, &dev, c->ao->launch, c->wo->output, NULL, NULL, &stalls);
}

/* ---- every device (--all-devices) ---- */

struct member {
	struct farm *farm;
	struct sw_device_info dev;
	pthread_t thread;
	bool running, joined;
	struct member *next;
};

struct present {
	char udid[64];
	struct present *next;
};

struct farm {
	const struct common *c;
	/* One output for every device: one summary, one --junit, --fail-* over all. */
	struct sw_output *out;
	pthread_mutex_t out_lock;
	pthread_mutex_t lock;
	struct member *members;
	struct present *present; /* devices attached now, each with a member started */
	int status;
	const char *outdir;
};

static void farm_status(struct farm *f, int status)
{
	pthread_mutex_lock(&f->lock);
	/* A device problem outranks an agent problem, which outranks success. */
	if (status == SW_EXIT_DEVICE || (status && f->status != SW_EXIT_DEVICE))
		f->status = status;
	pthread_mutex_unlock(&f->lock);
}

static void *member_thread(void *arg)
{
	struct member *m = arg;
	struct farm *f = m->farm;
	struct sw_error err = {0};
	if (sw_device_query(m->dev.udid, f->c->timeout_ms, &m->dev, &err) < 0)
		sw_cli_warn("%s", sw_error_str(&err));
	char path[4096];
	const char *output = NULL;
	uint64_t stalls = 0;
	int status;
	/*
	 * When the app ends (it said goodbye) and the device stays, wait for the
	 * app's next start: farms run one test after another.  Each run gets its
	 * own recording: UDID.swtrace, UDID-2.swtrace, ...
	 */
	for (unsigned run = 1;; run++) {
		if (f->outdir) {
			if (run == 1)
				snprintf(path, sizeof(path), "%s/%s.swtrace", f->outdir,
					 m->dev.udid);
			else
				snprintf(path, sizeof(path), "%s/%s-%u.swtrace", f->outdir,
					 m->dev.udid, run);
			output = path;
		}
		uint64_t n = 0;
		status = run_device(f->c, &m->dev, run == 1 && f->c->ao->launch, output, f->out,
				    &f->out_lock, &n);
		stalls += n;
		if (status != SW_EXIT_OK || stopped(f->c) || f->c->ao->wait_given)
			break;
	}
	fprintf(stderr, "stallwatch: device '%s'%s%s%s: %llu stall%s%s\n", m->dev.udid,
		m->dev.name[0] ? " (" : "", m->dev.name, m->dev.name[0] ? ")" : "",
		(unsigned long long)stalls, stalls == 1 ? "" : "s",
		status == SW_EXIT_DEVICE  ? ", device problem"
		: status == SW_EXIT_AGENT ? ", agent problem"
		: status                  ? ", failed"
					  : "");
	farm_status(f, status);
	pthread_mutex_lock(&f->lock);
	m->running = false;
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

/*
 * Starts a member for udid unless the device was already seen since it last
 * went away (usbmuxd repeats every device when the watch starts); with
 * f->lock held.
 */
static void farm_add_locked(struct farm *f, const char *udid)
{
	for (struct present *p = f->present; p; p = p->next)
		if (strcmp(p->udid, udid) == 0)
			return;
	struct present *p = calloc(1, sizeof(*p));
	struct member *m = calloc(1, sizeof(*m));
	if (!m || !p) {
		free(m);
		free(p);
		return;
	}
	snprintf(p->udid, sizeof(p->udid), "%s", udid);
	p->next = f->present;
	f->present = p;
	m->farm = f;
	snprintf(m->dev.udid, sizeof(m->dev.udid), "%s", udid);
	m->dev.conn = SW_DEVICE_USB;
	m->running = true;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 512u * 1024u);
	if (pthread_create(&m->thread, &attr, member_thread, m) != 0) {
		pthread_attr_destroy(&attr);
		free(m);
		sw_cli_warn("cannot start a thread for device '%s'", udid);
		return;
	}
	pthread_attr_destroy(&attr);
	m->next = f->members;
	f->members = m;
}

static void farm_gone_locked(struct farm *f, const char *udid)
{
	for (struct present **link = &f->present; *link; link = &(*link)->next) {
		if (strcmp((*link)->udid, udid) == 0) {
			struct present *p = *link;
			*link = p->next;
			free(p);
			return;
		}
	}
}

static void farm_event(void *ctx, enum sw_device_event event, const char *udid, unsigned conn)
{
	struct farm *f = ctx;
	if (!(conn & SW_DEVICE_USB) || stopped(f->c))
		return;
	pthread_mutex_lock(&f->lock);
	if (event == SW_DEVICE_ADDED)
		farm_add_locked(f, udid);
	else
		farm_gone_locked(f, udid);
	pthread_mutex_unlock(&f->lock);
}

/* Joins members that ended, so a long-running farm does not pile them up. */
static void farm_reap(struct farm *f, bool all)
{
	for (;;) {
		struct member *done = NULL, **link;
		pthread_mutex_lock(&f->lock);
		for (link = &f->members; *link; link = &(*link)->next) {
			if (all || !(*link)->running) {
				done = *link;
				*link = done->next;
				break;
			}
		}
		pthread_mutex_unlock(&f->lock);
		if (!done)
			return;
		pthread_join(done->thread, NULL);
		free(done);
	}
}

static int prepare_outdir(const char *output, const char **ret)
{
	*ret = NULL;
	if (!output)
		return 0;
	size_t len = strlen(output);
	struct stat st;
	bool is_dir = stat(output, &st) == 0 && S_ISDIR(st.st_mode);
	if (!is_dir && (len == 0 || output[len - 1] != '/'))
		return -EINVAL;
	if (!is_dir && mkdir(output, 0777) < 0 && errno != EEXIST)
		return -errno;
	*ret = output;
	return 0;
}

static int attach_all(const struct common *c)
{
	struct farm f = {.c = c, .status = SW_EXIT_OK};
	int r = prepare_outdir(c->wo->output, &f.outdir);
	if (r == -EINVAL) {
		sw_cli_error("with --all-devices, -o takes a directory ('%s/'): one recording a "
			     "device",
			     c->wo->output);
		return SW_EXIT_USAGE;
	}
	if (r < 0) {
		return sw_cli_fail(SW_FAIL_OUTPUT, r, "cannot create '%s': %s", c->wo->output,
				   strerror(-r));
	}
	struct sw_device_info *devices = NULL;
	size_t count = 0;
	struct sw_error err = {0};
	r = sw_device_list(c->timeout_ms, false, &devices, &count, &err);
	if (r < 0) {
		sw_cli_error("%s", sw_error_str(&err));
		return SW_EXIT_DEVICE;
	}
	r = sw_output_new(&c->wo->out, true, &f.out);
	if (r) {
		free(devices);
		return r;
	}
	pthread_mutex_init(&f.out_lock, NULL);
	pthread_mutex_init(&f.lock, NULL);
	pthread_mutex_lock(&f.lock);
	size_t usb = 0;
	for (size_t i = 0; i < count; i++) {
		if (devices[i].conn & SW_DEVICE_USB) {
			farm_add_locked(&f, devices[i].udid);
			usb++;
		}
	}
	pthread_mutex_unlock(&f.lock);
	free(devices);
	if (!usb)
		fputs("stallwatch: no device attached yet; waiting for devices (Ctrl-C to stop)\n",
		      stderr);
	if (sw_device_watch(farm_event, &f, &err) < 0)
		sw_cli_warn("%s; devices attached later are not picked up", sw_error_str(&err));
	while (!stopped(c)) {
		poll(NULL, 0, 100);
		farm_reap(&f, false);
	}
	sw_device_unwatch();
	farm_reap(&f, true);
	while (f.present) {
		struct present *p = f.present;
		f.present = p->next;
		free(p);
	}
	pthread_mutex_destroy(&f.lock);
	int status = sw_output_finish(f.out, f.status);
	sw_output_free(f.out);
	pthread_mutex_destroy(&f.out_lock);
	return status;
}

const struct sw_opt sw_attach_device_opts[] = {
    {"udid", 'u', "UDID", "the device (default: the only one attached over USB)", NULL},
    {"wait", SW_OPT_WAIT, "SECONDS",
     "keep trying this long while the app starts (default: once;\n"
     "30 with --launch; until Ctrl-C with --all-devices)",
     NULL},
    {"all-devices", SW_OPT_ALL_DEVICES, NULL,
     "attach on every device at once, and on devices attached later;\n"
     "lines carry the UDID, -o takes a directory (DIR/)",
     NULL},
    {"launch", SW_OPT_LAUNCH, NULL,
     "start the app first (debugserver up to iOS 16; printed\n"
     "devicectl and pymobiledevice3 commands from iOS 17)",
     NULL},
    {"dylib", SW_OPT_DYLIB, "PATH", "with --launch: DYLD_INSERT_LIBRARIES=<app bundle>/PATH", NULL},
    {"debug", 'd', NULL, "print libimobiledevice's and libusbmuxd's debug output", NULL},
    SW_OPT_END,
};

int sw_attach_device_option(const struct sw_cmd *cmd, int c, const char *arg,
			    struct sw_attach_device_options *o)
{
	unsigned long v;
	switch (c) {
	case 'u':
		o->udid = arg;
		return 0;
	case 'd':
		sw_device_set_debug(true);
		return 0;
	case SW_OPT_WAIT:
		if (sw_cli_parse_uint(cmd, "--wait", arg, 86400, &v))
			return SW_EXIT_USAGE;
		o->wait_ms = v * 1000;
		o->wait_given = true;
		return 0;
	case SW_OPT_ALL_DEVICES:
		o->all_devices = true;
		return 0;
	case SW_OPT_LAUNCH:
		o->launch = true;
		return 0;
	case SW_OPT_DYLIB:
		if (arg[0] == '/' || strstr(arg, ".."))
			return sw_cli_usage(cmd,
					    "--dylib takes a path inside the app bundle, such as "
					    "Frameworks/libstallwatch-agent.dylib");
		o->dylib = arg;
		return 0;
	}
	return 1;
}

int sw_attach_device(const struct sw_attach_device_options *ao, const struct sw_watch_options *wo,
		     bool (*stop)(void *ctx), void *ctx)
{
	struct common c = {.ao = ao, .wo = wo, .stop = stop, .stop_ctx = ctx};
	if (sw_device_timeout_from_env(&c.timeout_ms) < 0) {
		sw_cli_error("invalid STALLWATCH_DEVICE_TIMEOUT '%s' (seconds, up to 3600)",
			     getenv("STALLWATCH_DEVICE_TIMEOUT"));
		return SW_EXIT_USAGE;
	}
	int status = ao->all_devices ? attach_all(&c) : attach_single(&c);
	return status;
}
