/*
 * macOS host: Xcode keeps the dSYMs of what it built under DerivedData and
 * Archives, and copies each connected device's system libraries (with their
 * symbols) to "iOS DeviceSupport/<version>/Symbols", which mirrors the
 * device's paths.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "host.h"

#define MAX_VERSIONS 256

static int add(struct sw_host_dir **dirs, size_t *ndirs, const char *path,
	       enum sw_host_dir_kind kind)
{
	struct sw_host_dir *d;
	struct stat st;
	char *copy;

	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;
	copy = strdup(path);
	d = realloc(*dirs, (*ndirs + 1) * sizeof(**dirs));
	if (!copy || !d) {
		free(copy);
		if (d)
			*dirs = d;
		return -ENOMEM;
	}
	*dirs = d;
	d[*ndirs].path = copy;
	d[*ndirs].kind = kind;
	(*ndirs)++;
	return 1;
}

/* Every <version>/Symbols under one DeviceSupport folder. */
static int add_device_support(struct sw_host_dir **dirs, size_t *ndirs, const char *base)
{
	char path[4096];
	struct dirent *de;
	int n = 0, seen = 0;
	DIR *d = opendir(base);

	if (!d)
		return 0;
	while ((de = readdir(d)) && seen++ < MAX_VERSIONS) {
		int r;

		if (de->d_name[0] == '.')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s/Symbols", base, de->d_name) >=
		    (int)sizeof(path))
			continue;
		r = add(dirs, ndirs, path, SW_HOST_DIR_PREFIX);
		if (r < 0) {
			closedir(d);
			return r;
		}
		n += r;
	}
	closedir(d);
	return n;
}

int sw_host_symbol_dirs(struct sw_host_dir **dirs, size_t *ndirs)
{
	static const char *const device_support[] = {"iOS DeviceSupport", "watchOS DeviceSupport",
						     "tvOS DeviceSupport",
						     "visionOS DeviceSupport"};
	const char *home = getenv("HOME");
	char path[4096];
	int n = 0, r;

	if (!home || !*home)
		return 0;
	snprintf(path, sizeof(path), "%s/Library/Developer/Xcode/DerivedData", home);
	if ((r = add(dirs, ndirs, path, SW_HOST_DIR_INDEX)) < 0)
		return r;
	n += r;
	snprintf(path, sizeof(path), "%s/Library/Developer/Xcode/Archives", home);
	if ((r = add(dirs, ndirs, path, SW_HOST_DIR_INDEX)) < 0)
		return r;
	n += r;
	for (size_t i = 0; i < sizeof(device_support) / sizeof(device_support[0]); i++) {
		snprintf(path, sizeof(path), "%s/Library/Developer/Xcode/%s", home,
			 device_support[i]);
		if ((r = add_device_support(dirs, ndirs, path)) < 0)
			return r;
		n += r;
	}
	return n;
}
