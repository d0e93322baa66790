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

#define SW_ATTACH_DEVICE_LONGOPTS                                                                  \
	{"udid", required_argument, NULL, 'u'}, {"debug", no_argument, NULL, 'd'},                 \
	    {"wait", required_argument, NULL, 1101}, {"all-devices", no_argument, NULL, 1102},     \
	    {"launch", no_argument, NULL, 1103},                                                   \
	{                                                                                          \
		"dylib", required_argument, NULL, 1104                                             \
	}

#define SW_ATTACH_DEVICE_HELP                                                                      \
	"  BUNDLE-ID           attach to this app on a tethered iOS device, through usbmuxd\n"     \
	"  -u, --udid UDID     the device (default: the only one attached over USB)\n"             \
	"  --wait SECONDS      keep trying this long while the app starts (default: once;\n"       \
	"                      30 with --launch; until Ctrl-C with --all-devices)\n"               \
	"  --all-devices       attach on every device at once, and on devices attached later;\n"   \
	"                      lines carry the UDID, -o takes a directory (DIR/)\n"                \
	"  --launch            start the app first (debugserver up to iOS 16; printed\n"           \
	"                      devicectl and pymobiledevice3 commands from iOS 17)\n"              \
	"  --dylib PATH        with --launch: DYLD_INSERT_LIBRARIES=<app bundle>/PATH\n"           \
	"  -d, --debug         print libimobiledevice's and libusbmuxd's debug output\n"

/* Handles one of the device options: 0, 1 when c is not one, or a usage status. */
int sw_attach_device_option(const struct sw_cmd *cmd, int c, const char *arg,
			    struct sw_attach_device_options *o);

/* Returns the exit status.  stop() says when Ctrl-C or SIGTERM arrived. */
int sw_attach_device(const struct sw_attach_device_options *ao, const struct sw_watch_options *wo,
		     bool (*stop)(void *ctx), void *ctx);

#endif
