/*
 * debuginfod through Debian's libdebuginfod: the client reads
 * DEBUGINFOD_URLS, DEBUGINFOD_CACHE_PATH and DEBUGINFOD_TIMEOUT itself and
 * returns a path in its cache.  Without the library (meson's
 * debuginfod_dep not found) the lookup reports -ENOSYS.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "symsearch-private.h"

#if SW_HAVE_DEBUGINFOD
#include <elfutils/debuginfod.h>

int sw_symsearch_debuginfod(const uint8_t *id, size_t id_len, char **ret_path, struct sw_error *err)
{
	debuginfod_client *c = debuginfod_begin();
	char *path = NULL;
	int fd;

	if (!c)
		return sw_error_set(err, -ENOMEM, "cannot start a debuginfod client");
	fd = debuginfod_find_debuginfo(c, id, (int)id_len, &path);
	debuginfod_end(c);
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
