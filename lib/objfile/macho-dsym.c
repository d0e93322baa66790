/*
 * dSYM bundles: the DWARF companion of a Mach-O image lives in
 * X.dSYM/Contents/Resources/DWARF/<name>, a Mach-O file of type MH_DSYM
 * (universal when the image was).  Finds the file in a bundle, or in a
 * directory of bundles, whose slice matches an image's UUID and
 * architecture.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/buf.h"
#include "macho.h"

#define MAX_ENTRIES 100000 /* directory entries looked at per directory */

int sw_macho_peek_file(const char *path, struct sw_macho_slice *out, size_t max, size_t *ret_n,
		       struct sw_error *err)
{
	struct stat st;
	void *map;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sw_error_set(err, -errno, "%s", strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 8) {
		close(fd);
		return sw_error_set(err, -EINVAL, "not a mach-o file");
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return sw_error_set(err, -errno, "%s", strerror(errno));
	if (!sw_macho_is_macho(map, (size_t)st.st_size))
		r = sw_error_set(err, -EINVAL, "not a mach-o file");
	else
		r = sw_macho_slices(map, (size_t)st.st_size, out, max, ret_n, err);
	munmap(map, (size_t)st.st_size);
	return r;
}

static int match_file(const char *path, const uint8_t *uuid, const char *arch, char ret_arch[16])
{
	struct sw_macho_slice s[SW_MACHO_MAX_SLICES];
	size_t n;

	if (sw_macho_peek_file(path, s, SW_MACHO_MAX_SLICES, &n, NULL) < 0)
		return -ENOENT;
	for (size_t i = 0; i < n; i++) {
		if (uuid && (!s[i].has_uuid || memcmp(s[i].uuid, uuid, 16) != 0))
			continue;
		if (arch && strcmp(s[i].arch, arch) != 0)
			continue;
		if (ret_arch)
			memcpy(ret_arch, s[i].arch, 16);
		return 0;
	}
	return -ENOENT;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

struct want {
	const uint8_t *uuid;
	const char *arch;
};

/*
 * Calls fn on dir/NAME for the entries of dir not starting with '.' and
 * ending with suffix (NULL: any), until one succeeds.
 */
static int scan_dir(const char *dir, const char *suffix,
		    int (*fn)(struct sw_buf *path, const struct want *w, char **ret_path,
			      char ret_arch[16]),
		    const struct want *w, char **ret_path, char ret_arch[16])
{
	struct sw_buf b;
	struct dirent *de;
	DIR *d = opendir(dir);
	int r = -ENOENT, seen = 0;

	if (!d)
		return -ENOENT;
	sw_buf_init(&b, 8192);
	while (r < 0 && (de = readdir(d)) && seen++ < MAX_ENTRIES) {
		if (de->d_name[0] == '.' || (suffix && !ends_with(de->d_name, suffix)))
			continue;
		sw_buf_reset(&b);
		if (sw_buf_printf(&b, "%s/%s", dir, de->d_name) >= 0)
			r = fn(&b, w, ret_path, ret_arch);
	}
	closedir(d);
	sw_buf_finish(&b);
	return r;
}

/* A file of a bundle's DWARF folder; on a match *ret_path is its path. */
static int try_dwarf_file(struct sw_buf *path, const struct want *w, char **ret_path,
			  char ret_arch[16])
{
	if (match_file(sw_buf_str(path), w->uuid, w->arch, ret_arch) < 0)
		return -ENOENT;
	*ret_path = sw_buf_detach(path, NULL);
	return 0;
}

static int scan_bundle(const char *bundle, const struct want *w, char **ret_path, char ret_arch[16])
{
	struct sw_buf b;
	int r = -ENOMEM;

	sw_buf_init(&b, 8192);
	if (sw_buf_printf(&b, "%s/Contents/Resources/DWARF", bundle) >= 0)
		r = scan_dir(sw_buf_str(&b), NULL, try_dwarf_file, w, ret_path, ret_arch);
	sw_buf_finish(&b);
	return r;
}

static int try_bundle(struct sw_buf *path, const struct want *w, char **ret_path, char ret_arch[16])
{
	return scan_bundle(sw_buf_str(path), w, ret_path, ret_arch);
}

int sw_macho_dsym_find(const char *path, const uint8_t *uuid, const char *arch, char **ret_path,
		       char ret_arch[16], struct sw_error *err)
{
	char *found = NULL;
	char a[16];
	struct stat st;
	int r;

	if (stat(path, &st) < 0)
		return sw_error_set(err, -errno, "%s", strerror(errno));
	if (S_ISREG(st.st_mode)) {
		r = match_file(path, uuid, arch, a);
		if (r == 0 && !(found = strdup(path)))
			r = -ENOMEM;
	} else {
		/* a bundle, or a directory holding bundles: X.dSYM entries one level down */
		struct want w = {.uuid = uuid, .arch = arch};
		r = scan_bundle(path, &w, &found, a);
		if (r < 0)
			r = scan_dir(path, ".dSYM", try_bundle, &w, &found, a);
	}
	if (r < 0) {
		char u[37];

		if (uuid)
			sw_macho_uuid_str(uuid, u);
		return sw_error_set(err, r, "no dSYM matching%s%s%s%s", uuid ? " UUID " : "",
				    uuid ? u : "", arch ? " for " : "", arch ? arch : "");
	}
	*ret_path = found;
	if (ret_arch)
		memcpy(ret_arch, a, 16);
	return 0;
}
