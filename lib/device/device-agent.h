/*
 * Reaching the agent inside an app on a tethered device: choosing the
 * device, scanning the agent's ports (27300..27309) through usbmuxd,
 * checking in the agent's hello that it is the app asked for, and retrying
 * with backoff while the app starts.
 */
#ifndef SW_DEVICE_AGENT_H
#define SW_DEVICE_AGENT_H

#include <stdbool.h>
#include <stdint.h>

#include "device.h"
#include "util/error.h"
#include "session/session.h"

/* Which side a failure is on: the device (status 3) or the agent (status 4). */
enum sw_device_stage { SW_STAGE_DEVICE = 3, SW_STAGE_AGENT = 4 };

/*
 * Picks the device: the one given by udid (NULL: the only USB device).
 * -ENODEV when there is none (the message says when only network devices
 * are there, which cannot reach an agent), -EEXIST when several are attached
 * and none was chosen (the message lists them).
 */
int sw_device_choose(const char *udid, unsigned timeout_ms, struct sw_device_info *ret,
		     struct sw_error *err);

struct sw_device_agent_options {
	const char *bundle_id;
	unsigned wait_ms;    /* keep trying this long while the app starts (0: once) */
	unsigned timeout_ms; /* deadline of each device operation */
	const struct sw_session_options *session;
	bool (*stop)(void *ctx); /* polled while waiting; true gives up (-EINTR) */
	void *ctx;
};

/*
 * Connects to the agent of o->bundle_id on the device and starts the
 * session.  On success *ret is the session (the caller frees it; its first
 * message is the hello) and *ret_port the device port it listens on.  On
 * failure *ret_stage says whose problem it is; -ECONNREFUSED: no agent
 * listens on any port, -ESRCH: agents of other apps only (named in the
 * message).
 */
int sw_device_agent_connect(const char *udid, const struct sw_device_agent_options *o,
			    struct sw_session **ret, uint16_t *ret_port,
			    enum sw_device_stage *ret_stage, struct sw_error *err);

#endif
