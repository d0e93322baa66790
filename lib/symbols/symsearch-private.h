/*
 * Internals shared by symsearch*.c: what the index records of a file, the
 * ELF peek that indexing needs (build-id, .gnu_debuglink, whether the file
 * holds code and DWARF), and the debuginfod client.
 */
#ifndef SW_SYMSEARCH_PRIVATE_H
#define SW_SYMSEARCH_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "symsearch.h"

#define SW_SYMSEARCH_MAX_DEPTH 24
#define SW_SYMSEARCH_MAX_FILES 500000

struct sw_symsearch_elf {
	uint8_t id[32];
	size_t id_len;
	char debuglink[256]; /* "" when absent */
	bool has_code;
	bool has_debug;
};

/* Reads an ELF file's headers through fd; -EINVAL when it is not ELF. */
int sw_symsearch_elf_peek(int fd, uint64_t file_size, struct sw_symsearch_elf *ret);

/* One id found in one file (a universal Mach-O gives one entry per slice). */
struct sw_symsearch_entry {
	uint8_t id[32];
	uint8_t id_len;
	uint8_t kind; /* SW_SYMFILE_* */
	bool macho;
	char arch[16];
	uint32_t path; /* offset in the index's path pool */
};

/* One file looked at, for the disk cache: its entries are entries[first, first + count). */
struct sw_symsearch_file {
	uint32_t path;
	uint64_t size;
	int64_t mtime_ns;
	size_t first, count;
};

struct sw_symsearch_cache;

struct sw_symsearch_index {
	struct sw_symsearch_entry *entries;
	size_t n, cap;
	char *paths; /* NUL-terminated paths, one after the other */
	size_t paths_len, paths_cap;
	size_t files; /* files looked at */
	struct sw_symsearch_file *filelist;
	size_t nfilelist, filelist_cap;
	size_t cache_hits; /* files whose ids came from the disk cache */
	char *cache_dir;   /* NULL: no disk cache */
	bool built;
};

void sw_symsearch_index_init(struct sw_symsearch_index *ix);
void sw_symsearch_index_finish(struct sw_symsearch_index *ix);
/* Indexes every root (files or directories, recursively). */
int sw_symsearch_index_build(struct sw_symsearch_index *ix, char *const *roots, size_t nroots);
/* The entry for id (and arch, when not NULL) with any of kind's bits, or NULL. */
const struct sw_symsearch_entry *sw_symsearch_index_find(const struct sw_symsearch_index *ix,
							 const uint8_t *id, size_t id_len,
							 const char *arch, unsigned kind);
static inline const char *sw_symsearch_index_path(const struct sw_symsearch_index *ix,
						  const struct sw_symsearch_entry *e)
{
	return ix->paths + e->path;
}

/*
 * The disk cache of the index ($XDG_CACHE_HOME/stallwatch/symindex-v1):
 * what each file held, keyed by path, size and modification time, so that
 * a second run opens only the files that changed.  A missing or damaged
 * cache is an empty one.
 */
int sw_symsearch_cache_load(const char *dir, struct sw_symsearch_cache **ret);
void sw_symsearch_cache_free(struct sw_symsearch_cache *c);
/* Calls add for each cached entry of path and returns 1 when size and mtime match, else 0. */
int sw_symsearch_cache_lookup(struct sw_symsearch_cache *c, const char *path, uint64_t size,
			      int64_t mtime_ns,
			      int (*add)(void *ctx, const struct sw_symsearch_entry *e), void *ctx);
/* Writes the index's files plus the old cache's others (atomically, by rename). */
int sw_symsearch_cache_save(const char *dir, const struct sw_symsearch_cache *old,
			    const struct sw_symsearch_index *ix);
/* The default cache folder: $XDG_CACHE_HOME/stallwatch or ~/.cache/stallwatch (free()). */
char *sw_symsearch_cache_default_dir(void);

/* Reads what one file holds; calls add for each id.  0 when it is neither Mach-O nor ELF. */
int sw_symsearch_identify(const char *path,
			  int (*add)(void *ctx, const struct sw_symsearch_entry *e), void *ctx);

/*
 * Asks debuginfod for the debug file of a build-id: 0 with *ret_path (the
 * cached copy; free()) or -errno (-ENOSYS when built without libdebuginfod).
 */
int sw_symsearch_debuginfod(const uint8_t *id, size_t id_len, char **ret_path,
			    struct sw_error *err);

#endif
