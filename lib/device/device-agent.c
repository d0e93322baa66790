/*
 * Reaching an app's agent on a tethered device (see device-agent.h): the
 * device is chosen from usbmuxd's list, the agent's ports are scanned with
 * usbmux connections, and the agent's hello must name the bundle asked for.
 * While the app starts nothing listens yet, so the scan is repeated with a
 * growing pause until the wait runs out.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "device-agent.h"
#include "device.h"
#include "util/time-units.h"
#include "wire/wire.h"

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return sw_timespec_ms(&ts);
}

static void list_udids(char *out, size_t cap, const struct sw_device_info *devices, size_t count,
		       unsigned conn)
{
	size_t len = 0;
	out[0] = '\0';
	for (size_t i = 0; i < count && len + 1 < cap; i++) {
		const struct sw_device_info *d = &devices[i];
		if (!(d->conn & conn))
			continue;
		int n = snprintf(out + len, cap - len, "%s%s%s%s%s", len ? ", " : "", d->udid,
				 d->name[0] ? " (" : "", d->name, d->name[0] ? ")" : "");
		if (n < 0)
			break;
		len += (size_t)n < cap - len ? (size_t)n : cap - len - 1;
	}
}

static int choose_from(const char *udid, const struct sw_device_info *devices, size_t count,
		       struct sw_device_info *ret, struct sw_error *err)
{
	char names[400];
	size_t usb = 0, net = 0, pick = 0;
	for (size_t i = 0; i < count; i++) {
		if (udid && strcmp(devices[i].udid, udid) != 0)
			continue;
		if (devices[i].conn & SW_DEVICE_USB) {
			usb++;
			pick = i;
		} else {
			net++;
		}
	}
	if (usb == 1) {
		*ret = devices[pick];
		return 0;
	}
	if (usb > 1) {
		list_udids(names, sizeof(names), devices, count, SW_DEVICE_USB);
		return sw_error_set(err, -EEXIST,
				    "%zu devices are attached; choose one with -u UDID: %s", usb,
				    names);
	}
	if (net)
		return sw_error_set(
		    err, -ENODEV,
		    "device %s%s%sis on the network only: the agent listens on the device's "
		    "loopback, which only a USB connection through usbmuxd reaches; plug it in",
		    udid ? "'" : "", udid ? udid : "", udid ? "' " : "");
	if (udid) {
		list_udids(names, sizeof(names), devices, count, SW_DEVICE_USB | SW_DEVICE_NETWORK);
		return sw_error_set(err, -ENODEV, "no device '%s' is attached%s%s%s", udid,
				    count ? " (attached: " : "", names, count ? ")" : "");
	}
	return sw_error_set(err, -ENODEV, "no device is attached (is it plugged in and unlocked?)");
}

int sw_device_choose(const char *udid, unsigned timeout_ms, struct sw_device_info *ret,
		     struct sw_error *err)
{
	struct sw_device_info *devices = NULL;
	size_t count = 0;
	int r = sw_device_list(timeout_ms, true, &devices, &count, err);
	if (r < 0)
		return r;
	r = choose_from(udid, devices, count, ret, err);
	free(devices);
	return r;
}

/* ---- the agent's ports ---- */

struct scan {
	char others[512]; /* agents of other apps: "27300 'com.x'" */
	size_t others_len;
	struct sw_error agent_err; /* the last agent that failed its hello */
};

static void note_other(struct scan *sc, uint16_t port, const char *bundle)
{
	if (sc->others_len + 1 >= sizeof(sc->others))
		return;
	/* The bundle id comes from whatever listens there: printable ASCII only. */
	char clean[128];
	size_t n_clean = 0;
	for (const char *p = bundle ? bundle : ""; *p && n_clean + 1 < sizeof(clean); p++)
		clean[n_clean++] = *p > 0x20 && *p < 0x7f ? *p : '?';
	clean[n_clean] = '\0';
	int n = snprintf(sc->others + sc->others_len, sizeof(sc->others) - sc->others_len,
			 "%sport %u has '%s'", sc->others_len ? ", " : "", port,
			 n_clean ? clean : "(no bundle id)");
	if (n > 0)
		sc->others_len += (size_t)n;
	if (sc->others_len >= sizeof(sc->others))
		sc->others_len = sizeof(sc->others) - 1;
}

/* 1: session for the bundle; 0: not this port; <0: the device failed. */
static int try_port(const char *udid, uint16_t port, const struct sw_device_agent_options *o,
		    struct scan *sc, struct sw_session **ret, struct sw_error *err)
{
	int fd = sw_device_connect(udid, port, o->timeout_ms, err);
	if (fd == -ECONNREFUSED)
		return 0;
	if (fd < 0)
		return fd;
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	struct sw_session *s = NULL;
	if (sw_session_new(fd, &s) < 0) {
		close(fd);
		return sw_error_set(err, -ENOMEM, "out of memory");
	}
	struct sw_error e = {0};
	if (sw_session_start(s, o->session, &e) < 0) {
		sw_error_set(&sc->agent_err, e.code ? e.code : -EPROTO,
			     "the agent on port %u of device '%s' failed: %s", port, udid,
			     sw_error_str(&e));
		sw_session_free(s);
		return 0;
	}
	const struct sw_wire_hello *h = sw_session_hello(s);
	if (h && h->bundle_id && strcmp(h->bundle_id, o->bundle_id) == 0) {
		*ret = s;
		return 1;
	}
	note_other(sc, port, h ? h->bundle_id : NULL);
	sw_session_free(s);
	return 0;
}

/* Sleeps ms, waking every 100 ms to ask stop(); true when asked to stop. */
static bool pause_ms(unsigned ms, const struct sw_device_agent_options *o)
{
	while (ms) {
		unsigned step = ms < 100 ? ms : 100;
		poll(NULL, 0, (int)step);
		ms -= step;
		if (o->stop && o->stop(o->ctx))
			return true;
	}
	return false;
}

static int give_up(const char *udid, const struct sw_device_agent_options *o, const struct scan *sc,
		   struct sw_error *err)
{
	if (sc->others_len)
		return sw_error_set(err, -ESRCH,
				    "no agent of '%s' on device '%s' (%s): is '%s' running with "
				    "the agent?",
				    o->bundle_id, udid, sc->others, o->bundle_id);
	if (sc->agent_err.code) {
		if (err)
			*err = sc->agent_err;
		return sc->agent_err.code;
	}
	return sw_error_set(err, -ECONNREFUSED,
			    "no agent listens on ports %d-%d of device '%s'%s: is '%s' running "
			    "with the agent loaded?",
			    SW_WIRE_AGENT_PORT_FIRST, SW_WIRE_AGENT_PORT_LAST, udid,
			    o->wait_ms ? " after waiting" : "", o->bundle_id);
}

int sw_device_agent_connect(const char *udid, const struct sw_device_agent_options *o,
			    struct sw_session **ret, uint16_t *ret_port,
			    enum sw_device_stage *ret_stage, struct sw_error *err)
{
	uint64_t deadline = now_ms() + o->wait_ms;
	unsigned delay = 100;
	for (;;) {
		struct scan sc = {0};
		for (int port = SW_WIRE_AGENT_PORT_FIRST; port <= SW_WIRE_AGENT_PORT_LAST; port++) {
			int r = try_port(udid, (uint16_t)port, o, &sc, ret, err);
			if (r == 1) {
				*ret_port = (uint16_t)port;
				return 0;
			}
			if (r < 0) {
				*ret_stage = SW_STAGE_DEVICE;
				return r;
			}
		}
		uint64_t now = now_ms();
		if (now >= deadline) {
			*ret_stage = SW_STAGE_AGENT;
			return give_up(udid, o, &sc, err);
		}
		unsigned left = (unsigned)(deadline - now);
		if (pause_ms(delay < left ? delay : left, o)) {
			*ret_stage = SW_STAGE_AGENT;
			return sw_error_set(err, -EINTR, "interrupted while waiting for '%s'",
					    o->bundle_id);
		}
		delay = delay * 2 > 1000 ? 1000 : delay * 2;
	}
}
