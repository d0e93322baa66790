/*
 * The host's libimobiledevice layer: devices listed through usbmuxd, what
 * lockdownd says about each, TCP connections to device ports, device events.
 *
 * Every blocking call runs in a worker thread under a deadline
 * (sw_device_run): libimobiledevice cannot be cancelled, and a hung usbmuxd
 * or lockdownd must not hang the command.  An abandoned worker frees its own
 * results when its call finally returns.  libimobiledevice's error enums are
 * translated in sw_device_error() only.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libimobiledevice/debugserver.h>
#include <libimobiledevice/installation_proxy.h>
#include <plist/plist.h>
#include <usbmuxd.h>

#include "device-private.h"
#include "util/time-units.h"

#define LABEL "stallwatch"

bool sw_device_supported(void)
{
	return true;
}

void sw_device_set_debug(bool on)
{
	/* a missing library is reported by the operation that needs it */
	if (sw_device_loaded())
		idevice_set_debug_level(on ? 1 : 0);
	libusbmuxd_set_debug_level(on ? 1 : 0);
}

uint64_t sw_device_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return sw_timespec_ms(&ts);
}

/* ---- errors ---- */

static int lockdown_errno(int code, const char **detail)
{
	switch (code) {
	case LOCKDOWN_E_PASSWORD_PROTECTED:
		*detail = "the device is locked with a passcode: unlock it and try again";
		return -EACCES;
	case LOCKDOWN_E_PAIRING_DIALOG_RESPONSE_PENDING:
		*detail = "the device asks whether to trust this computer: unlock it, tap Trust "
			  "and try again";
		return -EPERM;
	case LOCKDOWN_E_USER_DENIED_PAIRING:
		*detail = "this computer is not trusted (pairing was denied on the device)";
		return -EPERM;
	case LOCKDOWN_E_INVALID_HOST_ID:
	case LOCKDOWN_E_MISSING_HOST_ID:
	case LOCKDOWN_E_INVALID_CONF:
	case LOCKDOWN_E_MISSING_PAIR_RECORD:
	case LOCKDOWN_E_INVALID_PAIR_RECORD:
	case LOCKDOWN_E_PAIRING_FAILED:
	case LOCKDOWN_E_SSL_ERROR:
		*detail = "the device is not paired with this computer: unlock it, tap Trust "
			  "(or run 'idevicepair pair') and try again";
		return -EPERM;
	case LOCKDOWN_E_RECEIVE_TIMEOUT:
		*detail = "lockdownd did not answer";
		return -ETIMEDOUT;
	case LOCKDOWN_E_MUX_ERROR:
		*detail = "cannot reach lockdownd through usbmuxd";
		return -ECONNREFUSED;
	case LOCKDOWN_E_INVALID_SERVICE:
	case LOCKDOWN_E_MISSING_SERVICE:
		*detail = "the device does not offer this service";
		return -ENOENT;
	case LOCKDOWN_E_PLIST_ERROR:
	case LOCKDOWN_E_DICT_ERROR:
	case LOCKDOWN_E_INVALID_RESPONSE:
		*detail = "lockdownd sent an answer that does not follow the protocol";
		return -EPROTO;
	default:
		*detail = "lockdownd refused the request";
		return -EIO;
	}
}

int sw_device_error(struct sw_error *err, enum device_source source, int code, const char *udid,
		    const char *what)
{
	const char *detail = NULL;
	char buf[160];
	int e = -EIO;
	switch (source) {
	case DEVICE_SRC_USBMUXD:
		if (code == ENOENT || code == ECONNREFUSED || code == ENOTSOCK) {
			detail =
			    "usbmuxd is not running (start it, or check USBMUXD_SOCKET_ADDRESS)";
			e = -ECONNREFUSED;
		} else {
			detail = "usbmuxd refused the request or sent an unreadable answer";
			e = -EPROTO;
		}
		break;
	case DEVICE_SRC_ERRNO:
		e = code < 0 ? code : -code;
		if (e == -ECONNREFUSED)
			detail = "nothing listens on that port on the device";
		else if (e == -ENODEV)
			detail = "the device is not attached over USB";
		else if (e == -ETIMEDOUT)
			detail = "no answer before the deadline";
		else
			detail = strerror(-e);
		break;
	case DEVICE_SRC_IDEVICE:
		if (code == IDEVICE_E_NO_DEVICE) {
			detail = "no such device is attached over USB";
			e = -ENODEV;
		} else if (code == IDEVICE_E_SSL_ERROR) {
			detail = "the secure connection failed (is the device paired?)";
			e = -EPERM;
		} else if (code == IDEVICE_E_TIMEOUT) {
			detail = "the device did not answer";
			e = -ETIMEDOUT;
		} else {
			snprintf(buf, sizeof(buf), "libimobiledevice error %d", code);
			detail = buf;
		}
		break;
	case DEVICE_SRC_LOCKDOWN:
		e = lockdown_errno(code, &detail);
		break;
	case DEVICE_SRC_INSTPROXY:
		snprintf(buf, sizeof(buf), "installation_proxy error %d", code);
		detail = buf;
		e = code == INSTPROXY_E_RECEIVE_TIMEOUT ? -ETIMEDOUT : -EIO;
		break;
	case DEVICE_SRC_DEBUG:
		snprintf(buf, sizeof(buf), "debugserver error %d", code);
		detail = buf;
		e = code == DEBUGSERVER_E_TIMEOUT ? -ETIMEDOUT : -EIO;
		break;
	}
	if (udid)
		return sw_error_set(err, e, "%s on device '%s': %s", what, udid, detail);
	return sw_error_set(err, e, "%s: %s", what, detail);
}

/* ---- deadlines ---- */

struct job_state {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done, abandoned;
	int result;
	struct sw_error err;
	struct device_job job;
};

static void job_destroy(struct job_state *st)
{
	pthread_cond_destroy(&st->cond);
	pthread_mutex_destroy(&st->lock);
	free(st);
}

static void *job_thread(void *arg)
{
	struct job_state *st = arg;
	struct sw_error err = {0};
	int r = st->job.work(st->job.data, &err);
	pthread_mutex_lock(&st->lock);
	st->done = true;
	st->result = r;
	st->err = err;
	bool abandoned = st->abandoned;
	pthread_cond_signal(&st->cond);
	pthread_mutex_unlock(&st->lock);
	/* Once done is set and the caller still waits, st is the caller's. */
	if (abandoned) {
		if (st->job.discard)
			st->job.discard(st->job.data);
		free(st->job.data);
		job_destroy(st);
	}
	return NULL;
}

static int job_start(struct job_state *st)
{
	pthread_attr_t attr;
	pthread_t thread;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 512u * 1024u);
	int r = pthread_create(&thread, &attr, job_thread, st);
	pthread_attr_destroy(&attr);
	return -r;
}

int sw_device_run(struct device_job job, unsigned timeout_ms, const char *what, const char *udid,
		  struct sw_error *err)
{
	struct sw_error lerr;
	if (sw_device_load(&lerr) < 0)
		return sw_error_set(err, lerr.code, "%s: %s", what, lerr.msg);
	struct job_state *st = calloc(1, sizeof(*st));
	if (!st)
		return sw_error_set(err, -ENOMEM, "%s: out of memory", what);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&st->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&st->lock, NULL);
	st->job = job;

	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	sw_timespec_add_ms(&until, timeout_ms);
	int r = job_start(st);
	if (r < 0) {
		job_destroy(st);
		return sw_error_set(err, r, "%s: cannot start a worker thread: %s", what,
				    strerror(-r));
	}
	pthread_mutex_lock(&st->lock);
	while (!st->done && pthread_cond_timedwait(&st->cond, &st->lock, &until) != ETIMEDOUT)
		;
	if (!st->done) {
		st->abandoned = true;
		pthread_mutex_unlock(&st->lock);
		if (udid)
			return sw_error_set(err, -ETIMEDOUT,
					    "%s on device '%s': no answer within %u ms (usbmuxd or "
					    "the device hangs)",
					    what, udid, timeout_ms);
		return sw_error_set(err, -ETIMEDOUT,
				    "%s: no answer within %u ms (usbmuxd hangs or is overloaded)",
				    what, timeout_ms);
	}
	pthread_mutex_unlock(&st->lock);
	r = st->result;
	if (r < 0 && err)
		*err = st->err;
	job_destroy(st);
	return r;
}

int sw_device_check_fds(struct sw_error *err)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sw_error_set(err, -errno, "cannot open a descriptor: %s", strerror(errno));
	close(fd);
	if (fd >= SW_DEVICE_FD_LIMIT)
		return sw_error_set(err, -EMFILE,
				    "too many descriptors open (the lowest free one is %d): "
				    "libimobiledevice needs them below 1024",
				    fd);
	return 0;
}

int sw_device_open(const char *udid, idevice_t *ret, struct sw_error *err)
{
	int r = sw_device_load(err);
	if (r >= 0)
		r = sw_device_check_fds(err);
	if (r < 0)
		return r;
	idevice_t dev = NULL;
	idevice_error_t ie = idevice_new_with_options(&dev, udid, IDEVICE_LOOKUP_USBMUX);
	if (ie != IDEVICE_E_SUCCESS)
		return sw_device_error(err, DEVICE_SRC_IDEVICE, ie, udid, "cannot open device");
	*ret = dev;
	return 0;
}

/* ---- listing ---- */

struct list_job {
	struct sw_device_info *devices;
	size_t count;
};

static int cmp_udid(const void *a, const void *b)
{
	const struct sw_device_info *x = a, *y = b;
	return strcmp(x->udid, y->udid);
}

static int merge_device(struct list_job *lj, const char *udid, unsigned conn)
{
	for (size_t i = 0; i < lj->count; i++) {
		if (strcmp(lj->devices[i].udid, udid) == 0) {
			lj->devices[i].conn |= conn;
			return 0;
		}
	}
	if (lj->count >= SW_DEVICE_MAX)
		return -E2BIG;
	struct sw_device_info *grown =
	    realloc(lj->devices, (lj->count + 1) * sizeof(struct sw_device_info));
	if (!grown)
		return -ENOMEM;
	lj->devices = grown;
	struct sw_device_info *d = &grown[lj->count++];
	memset(d, 0, sizeof(*d));
	snprintf(d->udid, sizeof(d->udid), "%s", udid);
	d->conn = conn;
	return 0;
}

static int list_work(void *data, struct sw_error *err)
{
	struct list_job *lj = data;
	int r = sw_device_check_fds(err);
	if (r < 0)
		return r;
	idevice_info_t *infos = NULL;
	int n = 0;
	/* libusbmuxd returns -1 and leaves the reason in errno. */
	errno = 0;
	idevice_error_t ie = idevice_get_device_list_extended(&infos, &n);
	if (ie != IDEVICE_E_SUCCESS)
		return sw_device_error(err, DEVICE_SRC_USBMUXD, errno, NULL, "cannot list devices");
	for (int i = 0; i < n && r == 0; i++) {
		unsigned conn =
		    infos[i]->conn_type == CONNECTION_NETWORK ? SW_DEVICE_NETWORK : SW_DEVICE_USB;
		if (infos[i]->udid)
			r = merge_device(lj, infos[i]->udid, conn);
	}
	idevice_device_list_extended_free(infos);
	if (r == -E2BIG)
		return sw_error_set(err, r, "cannot list devices: usbmuxd lists more than %d",
				    SW_DEVICE_MAX);
	if (r < 0)
		return sw_error_set(err, r, "cannot list devices: out of memory");
	if (lj->count > 1)
		qsort(lj->devices, lj->count, sizeof(*lj->devices), cmp_udid);
	return 0;
}

static void list_discard(void *data)
{
	struct list_job *lj = data;
	free(lj->devices);
}

/* ---- lockdownd values ---- */

static int get_string(lockdownd_client_t client, const char *key, char *out, size_t cap,
		      const char *udid, struct sw_error *err)
{
	plist_t value = NULL;
	lockdownd_error_t le = lockdownd_get_value(client, NULL, key, &value);
	if (le != LOCKDOWN_E_SUCCESS) {
		char what[96];
		snprintf(what, sizeof(what), "cannot read %s", key);
		return sw_device_error(err, DEVICE_SRC_LOCKDOWN, le, udid, what);
	}
	char *s = NULL;
	if (value && plist_get_node_type(value) == PLIST_STRING)
		plist_get_string_val(value, &s);
	plist_free(value);
	if (!s)
		return sw_error_set(err, -EPROTO, "lockdownd's %s on device '%s' is not a string",
				    key, udid);
	snprintf(out, cap, "%s", s);
	free(s);
	return 0;
}

static int query_work(void *data, struct sw_error *err)
{
	struct sw_device_info *info = data;
	int r = sw_device_load(err);
	if (r >= 0)
		r = sw_device_check_fds(err);
	if (r < 0)
		return r;
	idevice_t dev = NULL;
	enum idevice_options opts = IDEVICE_LOOKUP_USBMUX | IDEVICE_LOOKUP_NETWORK;
	idevice_error_t ie = idevice_new_with_options(&dev, info->udid, opts);
	if (ie != IDEVICE_E_SUCCESS)
		return sw_device_error(err, DEVICE_SRC_IDEVICE, ie, info->udid,
				       "cannot open device");
	lockdownd_client_t client = NULL;
	lockdownd_error_t le = lockdownd_client_new(dev, &client, LABEL);
	if (le != LOCKDOWN_E_SUCCESS) {
		idevice_free(dev);
		return sw_device_error(err, DEVICE_SRC_LOCKDOWN, le, info->udid,
				       "cannot reach lockdownd");
	}
	r = get_string(client, "DeviceName", info->name, sizeof(info->name), info->udid, err);
	if (r == 0)
		r = get_string(client, "ProductType", info->product_type,
			       sizeof(info->product_type), info->udid, err);
	if (r == 0)
		r = get_string(client, "ProductVersion", info->product_version,
			       sizeof(info->product_version), info->udid, err);
	lockdownd_client_free(client);
	idevice_free(dev);
	return r;
}

int sw_device_query(const char *udid, unsigned timeout_ms, struct sw_device_info *ret,
		    struct sw_error *err)
{
	struct sw_device_info *info = calloc(1, sizeof(*info));
	if (!info)
		return sw_error_set(err, -ENOMEM, "out of memory");
	snprintf(info->udid, sizeof(info->udid), "%s", udid);
	struct device_job job = {query_work, NULL, info};
	int r = sw_device_run(job, timeout_ms, "cannot query lockdownd", udid, err);
	if (r == -ETIMEDOUT)
		return r;
	if (r == 0) {
		/* ret->udid may be udid itself; both hold the same string. */
		memcpy(ret->name, info->name, sizeof(ret->name));
		memcpy(ret->product_type, info->product_type, sizeof(ret->product_type));
		memcpy(ret->product_version, info->product_version, sizeof(ret->product_version));
		memcpy(ret->udid, info->udid, sizeof(ret->udid));
		ret->info_status = 0;
		ret->info_error[0] = '\0';
	}
	free(info);
	return r;
}

static int paired_work(void *data, struct sw_error *err)
{
	const char *udid = data;
	int r = sw_device_check_fds(err);
	if (r < 0)
		return r;
	/* no pair record: not paired, said without a handshake that would start pairing */
	char *record = NULL;
	uint32_t size = 0;
	if (usbmuxd_read_pair_record(udid, &record, &size) < 0 || !record)
		return sw_error_set(err, -EPERM,
				    "device '%s' is not paired with this computer: unlock it, tap "
				    "Trust (or run 'idevicepair pair') and try again",
				    udid);
	free(record);
	idevice_t dev = NULL;
	enum idevice_options opts = IDEVICE_LOOKUP_USBMUX | IDEVICE_LOOKUP_NETWORK;
	idevice_error_t ie = idevice_new_with_options(&dev, udid, opts);
	if (ie != IDEVICE_E_SUCCESS)
		return sw_device_error(err, DEVICE_SRC_IDEVICE, ie, udid, "cannot open device");
	lockdownd_client_t client = NULL;
	lockdownd_error_t le = lockdownd_client_new_with_handshake(dev, &client, LABEL);
	if (le != LOCKDOWN_E_SUCCESS) {
		idevice_free(dev);
		return sw_device_error(err, DEVICE_SRC_LOCKDOWN, le, udid,
				       "cannot open a lockdownd session");
	}
	lockdownd_client_free(client);
	idevice_free(dev);
	return 0;
}

int sw_device_check_paired(const char *udid, unsigned timeout_ms, struct sw_error *err)
{
	/* a worker past the deadline still reads its copy, and frees it */
	char *copy = strdup(udid);
	if (!copy)
		return sw_error_set(err, -ENOMEM, "out of memory");
	struct device_job job = {paired_work, NULL, copy};
	int r = sw_device_run(job, timeout_ms, "cannot open a lockdownd session", udid, err);
	if (r != -ETIMEDOUT)
		free(copy);
	return r;
}

/* Each device is asked in its own worker, all at once, within one deadline. */
struct query_all {
	struct sw_device_info *dev;
	unsigned timeout_ms;
};

static void *query_one(void *arg)
{
	struct query_all *q = arg;
	struct sw_error err = {0};
	int r = sw_device_query(q->dev->udid, q->timeout_ms, q->dev, &err);
	if (r < 0) {
		q->dev->info_status = r;
		snprintf(q->dev->info_error, sizeof(q->dev->info_error), "%s", sw_error_str(&err));
	}
	return NULL;
}

static void query_failed(struct sw_device_info *d, int code, const char *why)
{
	d->info_status = code;
	snprintf(d->info_error, sizeof(d->info_error), "cannot query lockdownd on device '%s': %s",
		 d->udid, why);
}

/* SW_DEVICE_QUERY_BATCH devices at a time, all within one deadline. */
static void query_devices(struct sw_device_info *devices, size_t count, unsigned timeout_ms)
{
	uint64_t deadline = sw_device_now_ms() + timeout_ms;
	struct query_all qs[SW_DEVICE_QUERY_BATCH];
	pthread_t threads[SW_DEVICE_QUERY_BATCH];
	bool started[SW_DEVICE_QUERY_BATCH];
	for (size_t first = 0; first < count; first += SW_DEVICE_QUERY_BATCH) {
		size_t n =
		    count - first < SW_DEVICE_QUERY_BATCH ? count - first : SW_DEVICE_QUERY_BATCH;
		uint64_t now = sw_device_now_ms();
		for (size_t i = 0; i < n; i++) {
			started[i] = false;
			if (now >= deadline) {
				query_failed(&devices[first + i], -ETIMEDOUT,
					     "the deadline passed before its turn");
				continue;
			}
			qs[i] = (struct query_all){&devices[first + i], (unsigned)(deadline - now)};
			pthread_attr_t attr;
			pthread_attr_init(&attr);
			pthread_attr_setstacksize(&attr, 256u * 1024u);
			started[i] = pthread_create(&threads[i], &attr, query_one, &qs[i]) == 0;
			pthread_attr_destroy(&attr);
			if (!started[i])
				query_one(&qs[i]);
		}
		for (size_t i = 0; i < n; i++)
			if (started[i])
				pthread_join(threads[i], NULL);
	}
}

int sw_device_list(unsigned timeout_ms, bool with_info, struct sw_device_info **ret,
		   size_t *ret_count, struct sw_error *err)
{
	uint64_t start = sw_device_now_ms();
	struct list_job *lj = calloc(1, sizeof(*lj));
	if (!lj)
		return sw_error_set(err, -ENOMEM, "out of memory");
	struct device_job job = {list_work, list_discard, lj};
	int r = sw_device_run(job, timeout_ms, "cannot list devices", NULL, err);
	if (r == -ETIMEDOUT)
		return r;
	if (r < 0) {
		list_discard(lj);
		free(lj);
		return r;
	}
	struct sw_device_info *devices = lj->devices;
	size_t count = lj->count;
	free(lj);
	uint64_t spent = sw_device_now_ms() - start;
	unsigned left = spent < timeout_ms ? timeout_ms - (unsigned)spent : 1;
	if (with_info && count)
		query_devices(devices, count, left);
	*ret = devices;
	*ret_count = count;
	return 0;
}

/* ---- connections ---- */

struct connect_job {
	char udid[64];
	uint16_t port;
	int fd;
};

static int connect_work(void *data, struct sw_error *err)
{
	struct connect_job *cj = data;
	idevice_t dev = NULL;
	int r = sw_device_open(cj->udid, &dev, err);
	if (r < 0)
		return r;
	uint32_t handle = 0;
	idevice_get_handle(dev, &handle);
	idevice_free(dev);
	/*
	 * usbmuxd_connect() rather than idevice_connect(): the latter turns
	 * "nothing listens on that port" into a generic error, and the port
	 * scan needs to tell it apart.
	 */
	int fd = usbmuxd_connect(handle, cj->port);
	if (fd < 0) {
		char what[64];
		snprintf(what, sizeof(what), "cannot connect to port %u", cj->port);
		return sw_device_error(err, DEVICE_SRC_ERRNO, fd == -EBADF ? -EPROTO : fd, cj->udid,
				       what);
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	cj->fd = fd;
	return 0;
}

static void connect_discard(void *data)
{
	struct connect_job *cj = data;
	if (cj->fd >= 0)
		close(cj->fd);
}

int sw_device_connect(const char *udid, uint16_t port, unsigned timeout_ms, struct sw_error *err)
{
	struct connect_job *cj = calloc(1, sizeof(*cj));
	if (!cj)
		return sw_error_set(err, -ENOMEM, "out of memory");
	snprintf(cj->udid, sizeof(cj->udid), "%s", udid);
	cj->port = port;
	cj->fd = -1;
	char what[64];
	snprintf(what, sizeof(what), "cannot connect to port %u", port);
	struct device_job job = {connect_work, connect_discard, cj};
	int r = sw_device_run(job, timeout_ms, what, udid, err);
	if (r == -ETIMEDOUT)
		return r;
	if (r == 0)
		r = cj->fd;
	free(cj);
	return r;
}

/* ---- events ---- */

static sw_device_event_fn *watch_fn;
static void *watch_ctx;

static void watch_cb(const idevice_event_t *event, void *user_data)
{
	(void)user_data;
	unsigned conn = event->conn_type == CONNECTION_NETWORK ? SW_DEVICE_NETWORK : SW_DEVICE_USB;
	if (!event->udid)
		return;
	if (event->event == IDEVICE_DEVICE_ADD)
		watch_fn(watch_ctx, SW_DEVICE_ADDED, event->udid, conn);
	else if (event->event == IDEVICE_DEVICE_REMOVE)
		watch_fn(watch_ctx, SW_DEVICE_REMOVED, event->udid, conn);
}

int sw_device_watch(sw_device_event_fn *fn, void *ctx, struct sw_error *err)
{
	int r = sw_device_load(err);
	if (r < 0)
		return r;
	watch_fn = fn;
	watch_ctx = ctx;
	idevice_error_t ie = idevice_event_subscribe(watch_cb, NULL);
	if (ie != IDEVICE_E_SUCCESS)
		return sw_device_error(err, DEVICE_SRC_IDEVICE, ie, NULL,
				       "cannot watch devices come and go");
	return 0;
}

void sw_device_unwatch(void)
{
	if (sw_device_loaded())
		idevice_event_unsubscribe();
}

int sw_device_ios_major(const char *product_version)
{
	if (!product_version)
		return 0;
	int major = atoi(product_version);
	return major > 0 && major < 1000 ? major : 0;
}
