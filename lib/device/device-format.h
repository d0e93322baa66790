/*
 * How devices are shown (device-format.c): `stallwatch devices` as a table
 * and as NDJSON objects {"schema":1,"type":"device",...}.
 */
#ifndef SW_DEVICE_FORMAT_H
#define SW_DEVICE_FORMAT_H

#include <stdbool.h>
#include <stdio.h>

#include "util/buf.h"
#include "device.h"

/* "usb", "network", "usb+network" or "unknown"; a static string. */
const char *sw_device_conn_name(unsigned conn);

/* One line a device: UDID, connection, iOS version, product type, name. */
int sw_device_print_text(FILE *out, const struct sw_device_info *devices, size_t count,
			 bool header);
/* One NDJSON object a device; unknown fields are null. */
int sw_device_print_json(FILE *out, const struct sw_device_info *devices, size_t count);

/*
 * iOS 17 and newer: the command lines that start bundle on the device with
 * the environment env (NAME=VALUE strings), for the user to run: one with
 * Xcode's devicectl, one with pymobiledevice3, each on its own line after
 * two spaces, quoted for a POSIX shell.  Appends to out.
 */
int sw_device_launch_commands(struct sw_buf *out, const char *udid, const char *bundle,
			      const char *const *env, size_t env_count);

/*
 * The deadline of one device operation: STALLWATCH_DEVICE_TIMEOUT in seconds
 * (fractions allowed) or SW_DEVICE_TIMEOUT_MS.  -EINVAL when it is not a
 * number from 0 to 3600.
 */
int sw_device_timeout_from_env(unsigned *ret_ms);

#endif
