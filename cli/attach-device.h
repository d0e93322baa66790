/*
 * `stallwatch attach BUNDLE-ID`: the app's agent on a tethered device,
 * reached through usbmuxd; with --all-devices on every device at once; with
 * --launch started first (debugserver on iOS 16 and older, guidance for
 * iOS 17 and newer).
 */
#ifndef SW_CLI_ATTACH_DEVICE_H
#define SW_CLI_ATTACH_DEVICE_H

#include <stdbool.h>

#include "watch.h"

struct sw_attach_device_options {
	const char *bundle_id;
	const char *udid; /* -u; NULL: the only device */
	unsigned long wait_ms;
	bool wait_given;
	bool all_devices;
	bool launch;
	const char *dylib; /* --dylib, relative to the app bundle */
};

/* -u, --wait, --all-devices, --launch, --dylib, -d (options.h) */
extern const struct sw_opt sw_attach_device_opts[];

/* Handles one of the device options: 0, 1 when c is not one, or a usage status. */
int sw_attach_device_option(const struct sw_cmd *cmd, int c, const char *arg,
			    struct sw_attach_device_options *o);

/* Returns the exit status.  stop() says when Ctrl-C or SIGTERM arrived. */
int sw_attach_device(const struct sw_attach_device_options *ao, const struct sw_watch_options *wo,
		     bool (*stop)(void *ctx), void *ctx);

#endif
