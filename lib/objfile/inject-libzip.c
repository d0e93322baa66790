/*
 * Loading libzip at the first .ipa (inject-libzip.h): dlopen by its file name and
 * every function inject.c calls looked up once.  $STALLWATCH_LIBZIP names
 * another file (tests use it to prove the message a missing library gives).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "inject-libzip.h"

#define SW_ZIP_DEFINE(name) __typeof__(name) *sw_zip_##name;
SW_LIBZIP_FUNCTIONS(SW_ZIP_DEFINE)
#undef SW_ZIP_DEFINE

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_code;
static char load_msg[300];

static void load(void)
{
	const char *env = getenv("STALLWATCH_LIBZIP");
	const char *file = env && env[0] ? env : SW_LIBZIP_SONAME;
	void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		load_code = -ENOTSUP;
		snprintf(load_msg, sizeof(load_msg),
			 "cannot load %s, which .ipa archives need (install libzip): %s", file,
			 dlerror());
		return;
	}
#define SW_ZIP_LOOKUP(name)                                                                        \
	if (!(*(void **)&sw_zip_##name = dlsym(h, #name)) && !load_code) {                         \
		load_code = -ENOTSUP;                                                              \
		snprintf(load_msg, sizeof(load_msg), "%s lacks %s: a libzip too old", file,        \
			 #name);                                                                   \
	}
	SW_LIBZIP_FUNCTIONS(SW_ZIP_LOOKUP)
#undef SW_ZIP_LOOKUP
}

int sw_zip_load(struct sw_error *err)
{
	pthread_once(&once, load);
	if (load_code < 0)
		return sw_error_set(err, load_code, "%s", load_msg);
	return 0;
}
