/*
 * Injecting the agent into an executable, an .app bundle or an .ipa
 * archive (see inject.h).  Files are replaced by writing a temporary file
 * beside them and renaming it over, so a failure leaves the original; the
 * original is copied to a backup first.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "inject.h"
#include "macho-format.h"
#include "macho.h"
#include "util/str.h"
#if SW_HAVE_PLIST
#include <plist/plist.h>
#endif
#if SW_HAVE_LIBZIP
#include "inject-libzip.h"
#endif

/* Ceiling on an executable read into memory (iOS app binaries stay far below). */
#define MAX_EXECUTABLE ((size_t)2 << 30)
#define MAX_PLIST      ((size_t)4 << 20)

static int read_fd(int fd, const char *path, size_t max, uint8_t **ret, size_t *ret_len,
		   struct sw_error *err)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return sw_error_set(err, -errno, "cannot stat '%s': %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return sw_error_set(err, -EISDIR, "'%s' is a directory", path);
	if ((uint64_t)st.st_size > max)
		return sw_error_set(err, -EFBIG, "'%s' is larger than %zu bytes", path, max);
	uint8_t *data = malloc((size_t)st.st_size + 1);
	if (!data)
		return sw_error_set(err, -ENOMEM, "out of memory reading '%s'", path);
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, data + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;
			free(data);
			return sw_error_set(err, -e, "cannot read '%s': %s", path, strerror(e));
		}
		got += (size_t)n;
	}
	*ret = data;
	*ret_len = got;
	return 0;
}

static int read_file(const char *path, size_t max, uint8_t **ret, size_t *ret_len,
		     struct sw_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sw_error_set(err, -errno, "cannot open '%s': %s", path, strerror(errno));
	int r = read_fd(fd, path, max, ret, ret_len, err);
	close(fd);
	return r;
}

/* Writes data to path through a temporary file renamed over it, with mode. */
static int write_file(const char *path, const uint8_t *data, size_t len, mode_t mode,
		      struct sw_error *err)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.swtmpXXXXXX", path) >= (int)sizeof(tmp))
		return sw_error_set(err, -ENAMETOOLONG, "'%s': name too long", path);
	int fd = mkstemp(tmp);
	if (fd < 0)
		return sw_error_set(err, -errno, "cannot write beside '%s': %s", path,
				    strerror(errno));
	size_t done = 0;
	int e = 0;
	while (done < len && !e) {
		ssize_t n = write(fd, data + done, len - done);
		if (n < 0 && errno != EINTR)
			e = errno;
		else if (n > 0)
			done += (size_t)n;
	}
	if (!e && (fchmod(fd, mode & 07777) < 0 || fsync(fd) < 0))
		e = errno;
	if (close(fd) < 0 && !e)
		e = errno;
	if (!e && rename(tmp, path) < 0)
		e = errno;
	if (e) {
		unlink(tmp);
		return sw_error_set(err, -e, "cannot write '%s': %s", path, strerror(e));
	}
	return 0;
}

static int copy_file(const char *from, const char *to, struct sw_error *err)
{
	uint8_t *data;
	size_t len;
	struct stat st;
	if (stat(from, &st) < 0)
		return sw_error_set(err, -errno, "cannot stat '%s': %s", from, strerror(errno));
	int r = read_file(from, MAX_EXECUTABLE, &data, &len, err);
	if (r < 0)
		return r;
	r = write_file(to, data, len, st.st_mode, err);
	free(data);
	return r;
}

/* Keeps the original at backup unless an earlier run already did. */
static int keep_original(const char *path, const char *backup, struct sw_inject_report *rep,
			 struct sw_error *err)
{
	snprintf(rep->backup, sizeof(rep->backup), "%s", backup);
	if (access(backup, F_OK) == 0) {
		rep->backup_existed = true;
		return 0;
	}
	return copy_file(path, backup, err);
}

/* CFBundleExecutable from an Info.plist's bytes, XML or binary; else NULL. */
static char *plist_executable(const uint8_t *data, size_t len)
{
#if SW_HAVE_PLIST
	plist_t root = NULL;
	plist_from_memory((const char *)data, (uint32_t)len, &root);
	if (!root)
		return NULL;
	char *name = NULL;
	plist_t node = plist_dict_get_item(root, "CFBundleExecutable");
	if (node && plist_get_node_type(node) == PLIST_STRING)
		plist_get_string_val(node, &name);
	plist_free(root);
	if (name && (!*name || strchr(name, '/'))) {
		free(name);
		name = NULL;
	}
	return name;
#else
	(void)data;
	(void)len;
	return NULL;
#endif
}

/* The executable's name: Info.plist's CFBundleExecutable, else the bundle's name. */
static char *bundle_executable_name(const char *bundle_name, const uint8_t *plist, size_t plist_len)
{
	char *name = plist ? plist_executable(plist, plist_len) : NULL;
	if (name)
		return name;
	size_t n = strlen(bundle_name);
	if (sw_ends_with(bundle_name, ".app"))
		n -= 4;
	return strndup(bundle_name, n);
}

static int edit_bytes(uint8_t *data, size_t len, const struct sw_inject_opts *opts,
		      struct sw_inject_report *rep, struct sw_error *err)
{
	struct sw_macho_dylib_edit edit = {
	    .install_name = SW_INJECT_INSTALL_NAME,
	    .rpath = SW_INJECT_RPATH,
	    .weak = opts->weak,
	};
	return opts->remove ? sw_macho_remove_dylib(data, len, &edit, &rep->edit, err)
			    : sw_macho_add_dylib(data, len, &edit, &rep->edit, err);
}

/* The dylib given to copy in must be a Mach-O dylib. */
static int check_dylib(const char *path, struct sw_error *err)
{
	struct sw_macho_slice s[SW_MACHO_MAX_SLICES];
	size_t n;
	int r = sw_macho_peek_file(path, s, SW_MACHO_MAX_SLICES, &n, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		if (s[i].filetype != MH_DYLIB)
			return sw_error_set(err, -ENOEXEC, "'%s' (%s) is not a dylib", path,
					    s[i].arch);
	return 0;
}

static int inject_binary(const struct sw_inject_opts *opts, const char *exe, const char *backup,
			 struct sw_inject_report *rep, struct sw_error *err)
{
	uint8_t *data;
	size_t len;
	struct stat st;
	if (stat(exe, &st) < 0)
		return sw_error_set(err, -errno, "cannot stat '%s': %s", exe, strerror(errno));
	int r = read_file(exe, MAX_EXECUTABLE, &data, &len, err);
	if (r < 0)
		return r;
	snprintf(rep->executable, sizeof(rep->executable), "%s", exe);
	r = edit_bytes(data, len, opts, rep, err);
	if (r == 0 && rep->edit.changed) {
		r = keep_original(exe, backup, rep, err);
		if (r == 0)
			r = write_file(exe, data, len, st.st_mode, err);
	}
	free(data);
	return r;
}

static int join(char *out, size_t cap, const char *a, const char *b, struct sw_error *err)
{
	if (snprintf(out, cap, "%s/%s", a, b) >= (int)cap)
		return sw_error_set(err, -ENAMETOOLONG, "'%s/%s': name too long", a, b);
	return 0;
}

/* Copies the dylib into APP/Frameworks/, or takes it out when removing. */
static int bundle_dylib(const struct sw_inject_opts *opts, const char *app,
			struct sw_inject_report *rep, struct sw_error *err)
{
	char dir[PATH_MAX], dst[PATH_MAX];
	int r = join(dir, sizeof(dir), app, "Frameworks", err);
	if (r < 0 || (r = join(dst, sizeof(dst), dir, SW_INJECT_DYLIB_NAME, err)) < 0)
		return r;
	if (opts->remove) {
		rep->dylib_copied = unlink(dst) == 0;
		rmdir(dir); /* only when we left it empty */
		return 0;
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return sw_error_set(err, -errno, "cannot create '%s': %s", dir, strerror(errno));
	r = copy_file(opts->dylib, dst, err);
	rep->dylib_copied = r == 0;
	return r;
}

static int inject_app(const struct sw_inject_opts *opts, struct sw_inject_report *rep,
		      struct sw_error *err)
{
	char app[PATH_MAX], plist_path[PATH_MAX], exe[PATH_MAX], backup[PATH_MAX];
	snprintf(app, sizeof(app), "%s", opts->target);
	while (strlen(app) > 1 && app[strlen(app) - 1] == '/')
		app[strlen(app) - 1] = '\0';
	const char *base = strrchr(app, '/') ? strrchr(app, '/') + 1 : app;
	int r = join(plist_path, sizeof(plist_path), app, "Info.plist", err);
	if (r < 0)
		return r;
	uint8_t *plist = NULL;
	size_t plist_len = 0;
	struct sw_error ignored;
	read_file(plist_path, MAX_PLIST, &plist, &plist_len, &ignored);
	char *name = bundle_executable_name(base, plist, plist_len);
	free(plist);
	if (!name)
		return sw_error_set(err, -ENOMEM, "out of memory");
	r = join(exe, sizeof(exe), app, name, err);
	free(name);
	if (r < 0)
		return r;
	snprintf(rep->bundle, sizeof(rep->bundle), "%s", app);
	size_t stem = strlen(app) - (sw_ends_with(app, ".app") ? 4 : 0);
	if (snprintf(backup, sizeof(backup), "%.*s.orig", (int)stem, app) >= (int)sizeof(backup))
		return sw_error_set(err, -ENAMETOOLONG, "'%s': name too long", app);
	r = inject_binary(opts, exe, backup, rep, err);
	if (r == 0 && (rep->edit.changed || !opts->remove))
		r = bundle_dylib(opts, app, rep, err);
	return r;
}

#if SW_HAVE_LIBZIP
/* Reads one archive entry whole. */
static int zip_read(zip_t *z, zip_int64_t index, const char *name, size_t max, uint8_t **ret,
		    size_t *ret_len, struct sw_error *err)
{
	zip_stat_t st;
	if (zip_stat_index(z, (zip_uint64_t)index, 0, &st) < 0 || !(st.valid & ZIP_STAT_SIZE))
		return sw_error_set(err, -EINVAL, "cannot read '%s' in the archive", name);
	if (st.size > max)
		return sw_error_set(err, -EFBIG, "'%s' is larger than %zu bytes", name, max);
	uint8_t *data = malloc(st.size + 1);
	zip_file_t *f = data ? zip_fopen_index(z, (zip_uint64_t)index, 0) : NULL;
	zip_int64_t n = f ? zip_fread(f, data, st.size) : -1;
	if (f)
		zip_fclose(f);
	if (n < 0 || (zip_uint64_t)n != st.size) {
		free(data);
		return sw_error_set(err, -EINVAL, "cannot read '%s' in the archive", name);
	}
	*ret = data;
	*ret_len = st.size;
	return 0;
}

/* The index of Payload/NAME.app/Info.plist, with the bundle's path in bundle. */
static zip_int64_t find_app(zip_t *z, char *bundle, size_t cap)
{
	zip_int64_t n = zip_get_num_entries(z, 0);
	for (zip_int64_t i = 0; i < n; i++) {
		const char *name = zip_get_name(z, (zip_uint64_t)i, 0);
		if (!name || strncmp(name, "Payload/", 8) != 0)
			continue;
		const char *slash = strchr(name + 8, '/');
		if (!slash || strcmp(slash, "/Info.plist") != 0)
			continue;
		size_t len = (size_t)(slash - name);
		if (len < 8 + 5 || strncmp(slash - 4, ".app", 4) != 0 || len >= cap)
			continue;
		memcpy(bundle, name, len);
		bundle[len] = '\0';
		return i;
	}
	return -1;
}

/* Replaces (or, removing, deletes) the agent's entry in the bundle's Frameworks/. */
static int zip_dylib(zip_t *z, const struct sw_inject_opts *opts, const char *bundle,
		     struct sw_inject_report *rep, struct sw_error *err)
{
	char name[PATH_MAX + 64];
	snprintf(name, sizeof(name), "%s/Frameworks/%s", bundle, SW_INJECT_DYLIB_NAME);
	zip_int64_t at = zip_name_locate(z, name, 0);
	if (opts->remove) {
		rep->dylib_copied = at >= 0 && zip_delete(z, (zip_uint64_t)at) == 0;
		return 0;
	}
	zip_source_t *src = zip_source_file(z, opts->dylib, 0, 0);
	zip_int64_t idx =
	    src ? zip_file_add(z, name, src, ZIP_FL_OVERWRITE | ZIP_FL_ENC_UTF_8) : -1;
	if (idx < 0) {
		if (src)
			zip_source_free(src);
		return sw_error_set(err, -EIO, "cannot add '%s' to the archive: %s", name,
				    zip_strerror(z));
	}
	zip_file_set_external_attributes(z, (zip_uint64_t)idx, 0, ZIP_OPSYS_UNIX,
					 (zip_uint32_t)(0100755) << 16);
	rep->dylib_copied = true;
	return 0;
}

static int ipa_edit(zip_t *z, const struct sw_inject_opts *opts, struct sw_inject_report *rep,
		    uint8_t **keep, struct sw_error *err)
{
	char bundle[PATH_MAX], exe[PATH_MAX];
	zip_int64_t pi = find_app(z, bundle, sizeof(bundle));
	if (pi < 0)
		return sw_error_set(err, -ENOEXEC, "no Payload/*.app/Info.plist in the archive");
	uint8_t *plist, *data;
	size_t plist_len, len;
	int r = zip_read(z, pi, "Info.plist", MAX_PLIST, &plist, &plist_len, err);
	if (r < 0)
		return r;
	char *name = bundle_executable_name(strrchr(bundle, '/') + 1, plist, plist_len);
	free(plist);
	if (!name || join(exe, sizeof(exe), bundle, name, err) < 0) {
		free(name);
		return sw_error_set(err, -ENAMETOOLONG, "bad executable name in '%s'", bundle);
	}
	free(name);
	snprintf(rep->bundle, sizeof(rep->bundle), "%s", bundle);
	snprintf(rep->executable, sizeof(rep->executable), "%s", exe);
	zip_int64_t ei = zip_name_locate(z, exe, 0);
	if (ei < 0)
		return sw_error_set(err, -ENOENT, "no '%s' in the archive", exe);
	if ((r = zip_read(z, ei, exe, MAX_EXECUTABLE, &data, &len, err)) < 0)
		return r;
	*keep = data; /* libzip reads it when the archive is closed */
	if ((r = edit_bytes(data, len, opts, rep, err)) < 0 || !rep->edit.changed)
		return r;
	zip_source_t *src = zip_source_buffer(z, data, len, 0);
	if (!src || zip_file_replace(z, (zip_uint64_t)ei, src, 0) < 0) {
		if (src)
			zip_source_free(src);
		return sw_error_set(err, -EIO, "cannot replace '%s': %s", exe, zip_strerror(z));
	}
	return zip_dylib(z, opts, bundle, rep, err);
}

static int inject_ipa(const struct sw_inject_opts *opts, struct sw_inject_report *rep,
		      struct sw_error *err)
{
	int zerr = sw_zip_load(err);
	if (zerr < 0)
		return zerr;
	zip_t *z = zip_open(opts->target, 0, &zerr);
	if (!z) {
		zip_error_t ze;
		zip_error_init_with_code(&ze, zerr);
		int r = sw_error_set(err, -EINVAL, "cannot open '%s' as a zip archive: %s",
				     opts->target, zip_error_strerror(&ze));
		zip_error_fini(&ze);
		return r;
	}
	uint8_t *keep = NULL;
	char backup[PATH_MAX];
	int r = ipa_edit(z, opts, rep, &keep, err);
	if (r == 0 && rep->edit.changed) {
		snprintf(backup, sizeof(backup), "%s.orig", opts->target);
		r = keep_original(opts->target, backup, rep, err);
	}
	if (r == 0 && rep->edit.changed && zip_close(z) < 0)
		r = sw_error_set(err, -EIO, "cannot write '%s': %s", opts->target, zip_strerror(z));
	else if (r == 0 && rep->edit.changed)
		z = NULL;
	if (z)
		zip_discard(z);
	free(keep);
	return r;
}
#else
static int inject_ipa(const struct sw_inject_opts *opts, struct sw_inject_report *rep,
		      struct sw_error *err)
{
	(void)rep;
	return sw_error_set(err, -ENOTSUP, "'%s': this stallwatch was built without libzip",
			    opts->target);
}
#endif

int sw_inject(const struct sw_inject_opts *opts, struct sw_inject_report *ret, struct sw_error *err)
{
	struct stat st;
	memset(ret, 0, sizeof(*ret));
	if (stat(opts->target, &st) < 0)
		return sw_error_set(err, -errno, "cannot open '%s': %s", opts->target,
				    strerror(errno));
	bool bundle = S_ISDIR(st.st_mode);
	bool ipa = !bundle && sw_ends_with(opts->target, ".ipa");
	if (bundle && !opts->remove && !opts->dylib)
		return sw_error_set(err, -EDESTADDRREQ,
				    "'%s' is a bundle: the agent dylib to copy into it is needed",
				    opts->target);
	if (ipa && !opts->remove && !opts->dylib)
		return sw_error_set(err, -EDESTADDRREQ,
				    "'%s' is an archive: the agent dylib to copy into it is needed",
				    opts->target);
	if (opts->dylib && !opts->remove) {
		int r = check_dylib(opts->dylib, err);
		if (r < 0)
			return r;
	}
	if (bundle) {
		ret->kind = SW_INJECT_APP;
		return inject_app(opts, ret, err);
	}
	if (ipa) {
		ret->kind = SW_INJECT_IPA;
		return inject_ipa(opts, ret, err);
	}
	ret->kind = SW_INJECT_BINARY;
	char backup[PATH_MAX];
	if (snprintf(backup, sizeof(backup), "%s.orig", opts->target) >= (int)sizeof(backup))
		return sw_error_set(err, -ENAMETOOLONG, "'%s': name too long", opts->target);
	return inject_binary(opts, opts->target, backup, ret, err);
}
