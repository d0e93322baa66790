/*
 * Tethered iOS devices through usbmuxd: listing them, reading what lockdownd
 * says about them, opening a TCP connection to a port on the device, watching
 * devices come and go, and launching an app under debugserver (iOS 16 and
 * older).
 *
 * libimobiledevice has no cancellation and usbmuxd has been seen to hang, so
 * every operation here takes a deadline in milliseconds and runs its blocking
 * calls in a worker thread that is abandoned (and cleans up after itself
 * whenever it returns) when the deadline passes: the caller gets -ETIMEDOUT
 * on time.  Errors are -errno with a message in err for the command to print;
 * the errno says which kind of problem it is:
 *
 *   -ECONNREFUSED  usbmuxd is not running (nothing listens on its socket)
 *   -ETIMEDOUT     usbmuxd, lockdownd or the device did not answer in time
 *   -ENODEV        no such device (or it went away)
 *   -EACCES        the device is locked with a passcode
 *   -EPERM         the device is not paired with this host or not trusted
 *   -ENOENT        a service or an app is not on the device
 *   -EPROTO        an answer that does not follow the protocol
 *   -EMFILE        too many descriptors open for libimobiledevice's select()
 *
 * Built without libimobiledevice (device-none.c), every function fails with
 * -ENOTSUP and says so.
 */
#ifndef SW_DEVICE_H
#define SW_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/* The default deadline of one device operation. */
#define SW_DEVICE_TIMEOUT_MS 10000u

/*
 * libimobiledevice waits with select(), which aborts on descriptors of 1024
 * and more: operations refuse to start (-EMFILE) when the lowest free
 * descriptor is at or above this limit, leaving room for the few each opens.
 */
#define SW_DEVICE_FD_LIMIT 960

/* Ceilings: devices in one listing, lockdownd queries running at once. */
#define SW_DEVICE_MAX         1024
#define SW_DEVICE_QUERY_BATCH 64

enum sw_device_conn {
	SW_DEVICE_USB = 1u << 0,
	SW_DEVICE_NETWORK = 1u << 1, /* Wi-Fi: usbmux lookups cannot reach its loopback */
};

struct sw_device_info {
	char udid[64];
	unsigned conn; /* sw_device_conn bits: one device may be on both */
	/* From lockdownd; empty when it could not be asked (info_error says why). */
	char name[128];
	char product_type[64];
	char product_version[32];
	int info_status; /* 0 or -errno */
	char info_error[256];
};

/* true when SW_HAVE_DEVICE: built with libimobiledevice. */
bool sw_device_supported(void);

/* libimobiledevice's and libusbmuxd's own debug output on stderr (-d). */
void sw_device_set_debug(bool on);

/*
 * Lists the devices usbmuxd knows, one entry per UDID (a device on USB and on
 * the network is one entry with both bits), sorted by UDID.  With with_info,
 * asks each device's lockdownd (concurrently, each within the deadline) for
 * its name, product type and version; a device that cannot be asked keeps
 * empty fields and info_status/info_error, and does not fail the listing.
 * *ret is one array the caller frees with free(); it may be NULL when
 * *ret_count is 0.
 */
int sw_device_list(unsigned timeout_ms, bool with_info, struct sw_device_info **ret,
		   size_t *ret_count, struct sw_error *err);

/*
 * Asks one device's lockdownd, as sw_device_list() does for each; fills every
 * field of ret but conn, which it leaves as it was.
 */
int sw_device_query(const char *udid, unsigned timeout_ms, struct sw_device_info *ret,
		    struct sw_error *err);

/*
 * Opens a TCP connection to port on the device through usbmuxd (USB only).
 * Returns a descriptor the caller owns (non-blocking, close-on-exec): after
 * usbmuxd's Connect it is a raw byte pipe to the port.  -ECONNREFUSED with
 * a message naming the port when nothing listens there.
 */
int sw_device_connect(const char *udid, uint16_t port, unsigned timeout_ms, struct sw_error *err);

/* Devices coming and going, from usbmuxd's Listen (idevice_event_subscribe). */
enum sw_device_event { SW_DEVICE_ADDED = 1, SW_DEVICE_REMOVED = 2 };

typedef void sw_device_event_fn(void *ctx, enum sw_device_event event, const char *udid,
				unsigned conn);

/*
 * Calls fn from libusbmuxd's listener thread for each device present now and
 * each change later, until sw_device_unwatch().  One watch at a time in the
 * process (libimobiledevice's limit).
 */
int sw_device_watch(sw_device_event_fn *fn, void *ctx, struct sw_error *err);
void sw_device_unwatch(void);

/*
 * What to launch: the bundle id, the environment (NAME=VALUE strings) and
 * extra arguments.  dylib, when set, is a path relative to the app bundle for
 * DYLD_INSERT_LIBRARIES.
 */
struct sw_device_launch {
	const char *bundle_id;
	const char *const *env;
	size_t env_count;
	const char *dylib;
};

struct sw_device_launched {
	char executable[1024]; /* the app's executable on the device */
	uint64_t pid;          /* 0 when debugserver did not say */
};

/*
 * iOS 16 and older: looks the app up with installation_proxy, starts it under
 * debugserver with the environment and detaches, leaving it running.  Needs
 * the app installed (-ESRCH otherwise), a mounted developer disk image
 * (-ENOENT and a message saying so) and a development-signed app (-ENOEXEC
 * and a message saying so, also when debugserver cannot start it).  Replies that
 * arrive after libimobiledevice's per-read timeout are waited for until the
 * deadline.
 */
int sw_device_launch(const char *udid, const struct sw_device_launch *launch, unsigned timeout_ms,
		     struct sw_device_launched *ret, struct sw_error *err);

/* The major version of a ProductVersion such as "16.7.2", or 0. */
int sw_device_ios_major(const char *product_version);

#endif
