/*
 * The symbol index: walks the search paths recursively (depth, file count
 * and path length bounded; directory symlinks not followed, so no loops),
 * identifies each regular file by its first bytes, and records the ids it
 * holds: a Mach-O's LC_UUID per slice (dSYM companions as debug files), an
 * ELF's build-id (as a binary when it has .text, as a debug file when it
 * has .debug_info).  Sorted by id for lookups.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "objfile/macho-format.h"
#include "objfile/macho.h"
#include "symsearch-private.h"
#include "util/time-units.h"

#define MAX_PATH 4096
#define MAX_POOL ((size_t)1 << 30)

void sw_symsearch_index_init(struct sw_symsearch_index *ix)
{
	memset(ix, 0, sizeof(*ix));
}

void sw_symsearch_index_finish(struct sw_symsearch_index *ix)
{
	char *cache_dir = ix->cache_dir;

	free(ix->entries);
	free(ix->paths);
	free(ix->filelist);
	memset(ix, 0, sizeof(*ix));
	/* The setting survives a rebuild. */
	ix->cache_dir = cache_dir;
}

int sw_symsearch_identify(const char *path,
			  int (*add)(void *ctx, const struct sw_symsearch_entry *e), void *ctx)
{
	struct sw_macho_slice s[SW_MACHO_MAX_SLICES];
	struct sw_symsearch_entry e;
	struct sw_symsearch_elf elf;
	uint8_t head[8];
	struct stat st;
	size_t n;
	int fd, r = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 52 ||
	    pread(fd, head, sizeof(head), 0) != (ssize_t)sizeof(head)) {
		close(fd);
		return 0;
	}
	memset(&e, 0, sizeof(e));
	if (sw_macho_is_macho(head, sizeof(head))) {
		close(fd);
		if (sw_macho_peek_file(path, s, SW_MACHO_MAX_SLICES, &n, NULL) < 0)
			return 0;
		for (size_t i = 0; i < n && r >= 0; i++) {
			if (!s[i].has_uuid || s[i].filetype == MH_OBJECT)
				continue;
			memcpy(e.id, s[i].uuid, 16);
			e.id_len = 16;
			e.macho = true;
			e.kind = s[i].filetype == MH_DSYM ? SW_SYMFILE_DEBUG : SW_SYMFILE_BINARY;
			memcpy(e.arch, s[i].arch, sizeof(e.arch));
			r = add(ctx, &e);
		}
		return r;
	}
	r = sw_symsearch_elf_peek(fd, (uint64_t)st.st_size, &elf);
	close(fd);
	if (r < 0 || elf.id_len == 0)
		return 0;
	memcpy(e.id, elf.id, elf.id_len);
	e.id_len = (uint8_t)elf.id_len;
	e.kind = (elf.has_code ? SW_SYMFILE_BINARY : 0) | (elf.has_debug ? SW_SYMFILE_DEBUG : 0);
	if (!e.kind)
		return 0;
	return add(ctx, &e);
}

struct adding {
	struct sw_symsearch_index *ix;
	const char *path;
	uint32_t path_off;
	bool path_stored;
};

static int store_path(struct sw_symsearch_index *ix, const char *path, uint32_t *ret)
{
	size_t len = strlen(path) + 1;

	if (ix->paths_len + len > MAX_POOL)
		return -E2BIG;
	if (ix->paths_len + len > ix->paths_cap) {
		size_t cap = ix->paths_cap ? ix->paths_cap * 2 : 4096;
		char *p;

		while (cap < ix->paths_len + len)
			cap *= 2;
		p = realloc(ix->paths, cap);
		if (!p)
			return -ENOMEM;
		ix->paths = p;
		ix->paths_cap = cap;
	}
	memcpy(ix->paths + ix->paths_len, path, len);
	*ret = (uint32_t)ix->paths_len;
	ix->paths_len += len;
	return 0;
}

/* Stores the path of the file being added, once, when it first matters. */
static int store_adding_path(struct sw_symsearch_index *ix, struct adding *a)
{
	if (a->path_stored)
		return 0;
	int r = store_path(ix, a->path, &a->path_off);
	if (r < 0)
		return r;
	a->path_stored = true;
	return 0;
}

static int add_entry(void *ctx, const struct sw_symsearch_entry *e)
{
	struct adding *a = ctx;
	struct sw_symsearch_index *ix = a->ix;
	int r = store_adding_path(ix, a);

	if (r < 0)
		return r;
	if (ix->n == ix->cap) {
		size_t cap = ix->cap ? ix->cap * 2 : 256;
		struct sw_symsearch_entry *p = realloc(ix->entries, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		ix->entries = p;
		ix->cap = cap;
	}
	ix->entries[ix->n] = *e;
	ix->entries[ix->n].path = a->path_off;
	ix->n++;
	return 0;
}

/* Remembers a file looked at (with the entries just added for it) for the disk cache. */
static int note_file(struct sw_symsearch_index *ix, struct adding *a, const struct stat *st,
		     size_t first)
{
	struct sw_symsearch_file *f;
	int r = store_adding_path(ix, a);

	if (r < 0)
		return r;
	if (ix->nfilelist == ix->filelist_cap) {
		size_t cap = ix->filelist_cap ? ix->filelist_cap * 2 : 256;

		f = realloc(ix->filelist, cap * sizeof(*f));
		if (!f)
			return -ENOMEM;
		ix->filelist = f;
		ix->filelist_cap = cap;
	}
	f = &ix->filelist[ix->nfilelist++];
	f->path = a->path_off;
	f->size = (uint64_t)st->st_size;
	f->mtime_ns = (int64_t)st->st_mtim.tv_sec * (int64_t)SW_NS_PER_S + st->st_mtim.tv_nsec;
	f->first = first;
	f->count = ix->n - first;
	return 0;
}

static int index_file(struct sw_symsearch_index *ix, struct sw_symsearch_cache *cache,
		      const char *path)
{
	struct adding a = {.ix = ix, .path = path};
	size_t first = ix->n;
	struct stat st;
	int r;

	if (ix->files >= SW_SYMSEARCH_MAX_FILES || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	ix->files++;
	r = sw_symsearch_cache_lookup(
	    cache, path, (uint64_t)st.st_size,
	    (int64_t)st.st_mtim.tv_sec * (int64_t)SW_NS_PER_S + st.st_mtim.tv_nsec, add_entry, &a);
	if (r > 0)
		ix->cache_hits++;
	else if (r == 0)
		r = sw_symsearch_identify(path, add_entry, &a);
	if (r >= 0 && cache)
		r = note_file(ix, &a, &st, first);
	return r;
}

static int walk(struct sw_symsearch_index *ix, struct sw_symsearch_cache *cache, char *path,
		size_t len, int depth)
{
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (depth > SW_SYMSEARCH_MAX_DEPTH)
		return 0;
	d = opendir(path);
	if (!d)
		return 0;
	while (r >= 0 && (de = readdir(d)) && ix->files < SW_SYMSEARCH_MAX_FILES) {
		size_t nl = strlen(de->d_name);
		unsigned char type = de->d_type;
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    strcmp(de->d_name, ".git") == 0 || len + 1 + nl >= MAX_PATH)
			continue;
		path[len] = '/';
		memcpy(path + len + 1, de->d_name, nl + 1);
		if (type == DT_UNKNOWN || type == DT_LNK) {
			/* A symlink counts as the file it names; symlinked directories are skipped.
			 */
			if (lstat(path, &st) < 0)
				continue;
			if (S_ISLNK(st.st_mode))
				type =
				    stat(path, &st) == 0 && S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
			else
				type = S_ISDIR(st.st_mode)   ? DT_DIR
				       : S_ISREG(st.st_mode) ? DT_REG
							     : 0;
		}
		if (type == DT_DIR)
			r = walk(ix, cache, path, len + 1 + nl, depth + 1);
		else if (type == DT_REG)
			r = index_file(ix, cache, path);
		path[len] = 0;
	}
	closedir(d);
	return r;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct sw_symsearch_entry *x = a, *y = b;

	if (x->id_len != y->id_len)
		return x->id_len < y->id_len ? -1 : 1;
	return memcmp(x->id, y->id, x->id_len);
}

int sw_symsearch_index_build(struct sw_symsearch_index *ix, char *const *roots, size_t nroots)
{
	struct sw_symsearch_cache *cache = NULL;
	char *path = malloc(MAX_PATH);
	int r = 0;

	if (!path)
		return -ENOMEM;
	/* Without a usable cache the index is built from the files alone. */
	if (ix->cache_dir && sw_symsearch_cache_load(ix->cache_dir, &cache) < 0)
		cache = NULL;
	for (size_t i = 0; i < nroots && r >= 0; i++) {
		struct stat st;
		size_t len = strlen(roots[i]);

		if (len >= MAX_PATH || stat(roots[i], &st) < 0)
			continue;
		memcpy(path, roots[i], len + 1);
		while (len > 1 && path[len - 1] == '/')
			path[--len] = 0;
		if (S_ISDIR(st.st_mode))
			r = walk(ix, cache, path, len, 0);
		else if (S_ISREG(st.st_mode))
			r = index_file(ix, cache, path);
	}
	free(path);
	/* Saved only when something was learned; a failure to save costs only time. */
	if (r >= 0 && cache && ix->cache_hits != ix->files)
		sw_symsearch_cache_save(ix->cache_dir, cache, ix);
	sw_symsearch_cache_free(cache);
	if (r >= 0 && ix->n > 1)
		qsort(ix->entries, ix->n, sizeof(*ix->entries), entry_cmp);
	ix->built = true;
	return r;
}

const struct sw_symsearch_entry *sw_symsearch_index_find(const struct sw_symsearch_index *ix,
							 const uint8_t *id, size_t id_len,
							 const char *arch, unsigned kind)
{
	struct sw_symsearch_entry key;
	size_t lo = 0, hi = ix->n;

	if (id_len == 0 || id_len > sizeof(key.id))
		return NULL;
	memset(&key, 0, sizeof(key));
	memcpy(key.id, id, id_len);
	key.id_len = (uint8_t)id_len;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (entry_cmp(&ix->entries[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < ix->n && entry_cmp(&ix->entries[lo], &key) == 0; lo++) {
		const struct sw_symsearch_entry *e = &ix->entries[lo];

		if ((e->kind & kind) && (!arch || !e->macho || strcmp(e->arch, arch) == 0))
			return e;
	}
	return NULL;
}
