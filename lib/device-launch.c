/*
 * Launching an app on iOS 16 and older: installation_proxy finds it,
 * debugserver starts it with the agent's environment and detaches.
 */
#include <errno.h>

#include "device-private.h"

int sw_device_launch(const char *udid, const struct sw_device_launch *launch, unsigned timeout_ms,
		     struct sw_device_launched *ret, struct sw_error *err)
{
	return sw_error_set(err, -ENOTSUP, "launching is not implemented yet");
}
