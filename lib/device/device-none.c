/*
 * Device support when stallwatch is built without libimobiledevice: every
 * operation fails with -ENOTSUP and says how to get it.  meson picks this
 * file instead of device.c and device-launch.c.
 */
#include <errno.h>

#include "device.h"

#define NOT_BUILT                                                                                  \
	"built without device support (needs libimobiledevice, libplist and "                      \
	"libusbmuxd; meson -Ddevice=enabled)"

bool sw_device_supported(void)
{
	return false;
}

void sw_device_set_debug(bool on)
{
}

int sw_device_list(unsigned timeout_ms, bool with_info, struct sw_device_info **ret,
		   size_t *ret_count, struct sw_error *err)
{
	return sw_error_set(err, -ENOTSUP, NOT_BUILT);
}

int sw_device_query(const char *udid, unsigned timeout_ms, struct sw_device_info *ret,
		    struct sw_error *err)
{
	return sw_error_set(err, -ENOTSUP, NOT_BUILT);
}

int sw_device_check_paired(const char *udid, unsigned timeout_ms, struct sw_error *err)
{
	return sw_error_set(err, -ENOTSUP, NOT_BUILT);
}

int sw_device_connect(const char *udid, uint16_t port, unsigned timeout_ms, struct sw_error *err)
{
	return sw_error_set(err, -ENOTSUP, NOT_BUILT);
}

int sw_device_watch(sw_device_event_fn *fn, void *ctx, struct sw_error *err)
{
	return sw_error_set(err, -ENOTSUP, NOT_BUILT);
}

void sw_device_unwatch(void)
{
}

int sw_device_launch(const char *udid, const struct sw_device_launch *launch, unsigned timeout_ms,
		     struct sw_device_launched *ret, struct sw_error *err)
{
	return sw_error_set(err, -ENOTSUP, NOT_BUILT);
}

int sw_device_ios_major(const char *product_version)
{
	return 0;
}
