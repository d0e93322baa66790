/*
 * debuginfod through Debian's libdebuginfod, loaded (dlopen) at the first
 * lookup rather than at start-up: it brings curl, GnuTLS, Kerberos and
 * LDAP, and most runs never ask a server.  The client reads
 * DEBUGINFOD_URLS, DEBUGINFOD_CACHE_PATH and DEBUGINFOD_TIMEOUT itself and
 * returns a path in its cache.  Built without its header (meson's
 * debuginfod_dep not found), or when the library cannot be loaded, the
 * lookup reports -ENOSYS and says why.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "symsearch-private.h"

#if SW_HAVE_DEBUGINFOD
#include <dlfcn.h>
#include <elfutils/debuginfod.h>

#define SONAME "libdebuginfod.so.1"

static struct {
	__typeof__(debuginfod_begin) *begin;
	__typeof__(debuginfod_find_debuginfo) *find_debuginfo;
	__typeof__(debuginfod_end) *end;
	char msg[300];
} lib;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
	const char *env = getenv("STALLWATCH_DEBUGINFOD_LIB");
	const char *file = env && env[0] ? env : SONAME;
	void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(lib.msg, sizeof(lib.msg), "cannot load %s (install libdebuginfod1): %s",
			 file, dlerror());
		return;
	}
	*(void **)&lib.begin = dlsym(h, "debuginfod_begin");
	*(void **)&lib.find_debuginfo = dlsym(h, "debuginfod_find_debuginfo");
	*(void **)&lib.end = dlsym(h, "debuginfod_end");
	if (!lib.begin || !lib.find_debuginfo || !lib.end) {
		lib.begin = NULL;
		snprintf(lib.msg, sizeof(lib.msg), "%s lacks the debuginfod client functions",
			 file);
	}
}

int sw_symsearch_debuginfod(const uint8_t *id, size_t id_len, char **ret_path, struct sw_error *err)
{
	pthread_once(&once, load);
	if (!lib.begin)
		return sw_error_set(err, -ENOSYS, "debuginfod: %s", lib.msg);
	debuginfod_client *c = lib.begin();
	char *path = NULL;
	int fd;

	if (!c)
		return sw_error_set(err, -ENOMEM, "cannot start a debuginfod client");
	fd = lib.find_debuginfo(c, id, (int)id_len, &path);
	lib.end(c);
	if (fd < 0)
		return sw_error_set(err, fd, "debuginfod: %s", strerror(-fd));
	close(fd);
	*ret_path = path;
	return 0;
}
#else
int sw_symsearch_debuginfod(const uint8_t *id, size_t id_len, char **ret_path, struct sw_error *err)
{
	(void)id;
	(void)id_len;
	(void)ret_path;
	return sw_error_set(err, -ENOSYS, "built without libdebuginfod");
}
#endif
