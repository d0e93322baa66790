/*
 * What device.c shares with device-launch.c: blocking libimobiledevice calls
 * run under a deadline, and the one place where libimobiledevice's error
 * enums become errno values and messages.
 */
#ifndef SW_DEVICE_PRIVATE_H
#define SW_DEVICE_PRIVATE_H

#include <stdint.h>

#include <libimobiledevice/libimobiledevice.h>
#include <libimobiledevice/lockdown.h>

#include "device-dl.h"
#include "device.h"
#include "util/error.h"

/* Which library an error code comes from. */
enum device_source {
	DEVICE_SRC_ERRNO,     /* a negative errno from libusbmuxd or the system */
	DEVICE_SRC_USBMUXD,   /* listing devices failed; errno tells why */
	DEVICE_SRC_IDEVICE,   /* idevice_error_t */
	DEVICE_SRC_LOCKDOWN,  /* lockdownd_error_t */
	DEVICE_SRC_INSTPROXY, /* instproxy_error_t */
	DEVICE_SRC_DEBUG,     /* debugserver_error_t */
};

/*
 * Translates code from source into -errno and a message in err.  what names
 * the operation ("cannot start service 'com.apple.debugserver'"), udid the
 * device (may be NULL).  Returns the negative errno.
 */
int sw_device_error(struct sw_error *err, enum device_source source, int code, const char *udid,
		    const char *what);

/*
 * A blocking job: work() runs in a worker thread with job->data, and returns
 * 0 or -errno with job->err filled.  When the caller gives up at the
 * deadline, the worker finishes on its own and calls discard() (may be NULL)
 * so that results nobody will read are freed.
 */
struct device_job {
	int (*work)(void *data, struct sw_error *err);
	void (*discard)(void *data);
	void *data; /* owned by the job; freed with free() after discard */
};

/*
 * Runs job within timeout_ms.  On return other than -ETIMEDOUT the caller
 * owns job->data again and frees it; on -ETIMEDOUT the worker does.  what
 * names the operation for the timeout message.
 */
int sw_device_run(struct device_job job, unsigned timeout_ms, const char *what, const char *udid,
		  struct sw_error *err);

/* -EMFILE with a message when the lowest free descriptor is too high. */
int sw_device_check_fds(struct sw_error *err);

/* idevice_new for a USB device, translated. */
int sw_device_open(const char *udid, idevice_t *ret, struct sw_error *err);

/* Milliseconds on the monotonic clock. */
uint64_t sw_device_now_ms(void);

#endif
