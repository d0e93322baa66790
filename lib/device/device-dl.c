/*
 * Loading libimobiledevice at the first device operation (device-dl.h):
 * dlopen by its file name, every function the device layer calls looked up
 * once, under pthread_once so concurrent workers share one attempt.
 * $STALLWATCH_IMOBILEDEVICE names another file (tests use it to prove the
 * message a missing library gives).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "device-dl.h"

#define SW_IMD_DEFINE(name) __typeof__(name) *sw_imd_##name;
SW_IMOBILEDEVICE_FUNCTIONS(SW_IMD_DEFINE)
#undef SW_IMD_DEFINE

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_code;
static char load_msg[300];

static void load(void)
{
	const char *env = getenv("STALLWATCH_IMOBILEDEVICE");
	const char *file = env && env[0] ? env : SW_IMOBILEDEVICE_SONAME;
	void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		load_code = -ENOTSUP;
		snprintf(
		    load_msg, sizeof(load_msg),
		    "cannot load %s, which device commands need (install libimobiledevice): %s",
		    file, dlerror());
		return;
	}
#define SW_IMD_LOOKUP(name)                                                                        \
	if (!(*(void **)&sw_imd_##name = dlsym(h, #name)) && !load_code) {                         \
		load_code = -ENOTSUP;                                                              \
		snprintf(load_msg, sizeof(load_msg), "%s lacks %s: a libimobiledevice too old",    \
			 file, #name);                                                             \
	}
	SW_IMOBILEDEVICE_FUNCTIONS(SW_IMD_LOOKUP)
#undef SW_IMD_LOOKUP
}

int sw_device_load(struct sw_error *err)
{
	pthread_once(&once, load);
	if (load_code < 0)
		return sw_error_set(err, load_code, "%s", load_msg);
	return 0;
}

bool sw_device_loaded(void)
{
	pthread_once(&once, load);
	return load_code == 0;
}
