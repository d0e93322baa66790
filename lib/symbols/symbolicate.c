/*
 * The symbolication pipeline: keeps the images it opened (binary, debug
 * file, DWARF reader) by path and by id, slides run-time addresses back to
 * file addresses, asks the DWARF reader for the frames and falls back on
 * the symbol table, and names frames (Mach-O's underscore stripped,
 * demangled unless asked not to) in strings it keeps.
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "demangle/demangle.h"
#include "dwarf/dwarf.h"
#include "symbolicate-private.h"
#include "symbolicate.h"
#include "util/thread.h"
#include "symsearch-private.h"
#include "symsearch.h"

#define MAX_IMAGES  4096
#define MAX_STRINGS ((size_t)256 << 20) /* bytes of names kept */

struct image {
	char *path; /* as asked */
	char *debug_path;
	char arch[16];
	uint8_t id[32];
	size_t id_len;
	struct sw_object *obj;
	struct sw_object *dbg; /* NULL: obj carries its own DWARF (or none) */
	struct sw_dwarf *dwarf;
	uint8_t index_key[SW_DWARF_INDEX_MAX_KEY];
	size_t index_key_len; /* 0: no index for this image */
	char *index_path;
	/* obj's symbols were read, not taken from the cache: where to write them */
	char *symbols_path;
	uint8_t symbols_key[SW_DWARF_INDEX_MAX_KEY];
	size_t symbols_key_len;
	struct sw_symbol_hint symbol_hint; /* obj's */
	int dwarf_err;
	char dwarf_msg[256];
	/*
	 * The range table (symbolicate-table.c), when the cache folder has
	 * one for this binary and debug file: lookups read only it, and the
	 * symbols and DWARF are read (loaded) when something else needs them.
	 */
	struct sw_symbolicate_table *table;
	char *table_path;
	uint8_t table_key[SW_TABLE_MAX_KEY];
	size_t table_key_len; /* 0: no table for this image */
	bool loaded;          /* the symbols, the DWARF reader and its index */
	bool table_failed;    /* building the table failed: not tried again */
};

/* name -> shown name, keyed by the pointer into the object (stable). */
struct memo {
	const void *key;
	const char *value;
};

struct sw_symbolicator {
	unsigned flags;
	struct image *images;
	size_t nimages;
	struct memo *memo;
	size_t nmemo, memo_cap;
	char **strings;
	size_t nstrings, string_bytes;
	struct sw_symsearch *search;
	char *cache_dir; /* NULL: DWARF indexes and symbol caches are neither read nor written */
};

int sw_symbolicator_new(unsigned flags, struct sw_symbolicator **ret)
{
	struct sw_symbolicator *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->flags = flags;
	const char *off = getenv("STALLWATCH_NO_INDEX");
	if (!off || !off[0] || strcmp(off, "0") == 0)
		s->cache_dir = sw_symsearch_cache_default_dir();
	*ret = s;
	return 0;
}

int sw_symbolicator_set_cache_dir(struct sw_symbolicator *s, const char *dir)
{
	free(s->cache_dir);
	s->cache_dir = NULL;
	if (!dir || !dir[0])
		return 0;
	s->cache_dir = strdup(dir);
	return s->cache_dir ? 0 : -ENOMEM;
}

/* --- the DWARF index (lib/dwarf/dwarf-index.c) and the symbol cache --- */

static void image_free(struct image *im);
static int find_or_open(struct sw_symbolicator *s, const struct sw_image_ref *ref,
			struct sw_error *err);
static int lookup_files(struct sw_symbolicator *s, struct image *im, uint64_t addr, unsigned flags,
			struct sw_frame *frames, size_t max, bool *outer_symbol,
			struct sw_error *err);

/* two objects' keys (object_key()) and shapes (object_shape()) */
_Static_assert(SW_TABLE_MAX_KEY >= 2 * (1 + 40 + 16 + 32) + 1, "a table's key holds two");

static void hex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	out[2 * n] = '\0';
}

/*
 * What names the cache files of an object: its id (a dSYM's UUID is its
 * binary's) and architecture, or, for a file with no id, its path, size,
 * modification time and inode.  key gets the bytes a file records; name
 * the file name without its extension.
 */
static int object_key(const struct sw_object *o, uint8_t *k, size_t *ret_len, char *name,
		      size_t cap)
{
	size_t n = 0;
	size_t alen = strlen(o->arch);
	if (o->id_len) {
		char h[65];
		k[n++] = 'i';
		k[n++] = (uint8_t)o->format;
		memcpy(k + n, o->id, o->id_len);
		n += o->id_len;
		memcpy(k + n, o->arch, alen);
		n += alen;
		hex(o->id, o->id_len, h);
		snprintf(name, cap, "%s-%s", h, o->arch);
	} else {
		struct stat st;
		if (!o->path || stat(o->path, &st) < 0)
			return -ENOENT;
		uint64_t v[5] = {(uint64_t)st.st_size, (uint64_t)st.st_mtim.tv_sec,
				 (uint64_t)st.st_mtim.tv_nsec, (uint64_t)st.st_ino,
				 sw_fnv64(o->path, strlen(o->path), SW_FNV64_OFFSET)};
		k[n++] = 'p';
		memcpy(k + n, v, sizeof(v));
		n += sizeof(v);
		memcpy(k + n, o->arch, alen);
		n += alen;
		snprintf(name, cap, "path-%016llx",
			 (unsigned long long)sw_fnv64(k, n, SW_FNV64_OFFSET));
	}
	*ret_len = n;
	return 0;
}

static void open_index(struct sw_symbolicator *s, struct image *im, const struct sw_object *dw)
{
	char name[128];
	if (!s->cache_dir || !im->dwarf ||
	    object_key(dw, im->index_key, &im->index_key_len, name, sizeof(name)) < 0)
		return;
	if (asprintf(&im->index_path, "%s/dwarf/%s.dwx", s->cache_dir, name) < 0) {
		im->index_path = NULL;
		return;
	}
	sw_dwarf_index_open(im->dwarf, im->index_path, im->index_key, im->index_key_len);
}

/* A smaller symbol table is read faster than a file is written for it. */
#define SYMBOL_CACHE_MIN 2048

/*
 * Opens the binary; with a cache folder its symbols are left unread
 * (load_symbols() reads them) and the path of their cache is noted.
 */
static int open_binary(struct sw_symbolicator *s, const char *path, const char *arch,
		       struct image *im, struct sw_error *err)
{
	if (!s->cache_dir)
		return sw_object_open(path, arch, &im->obj, err);
	int r = sw_object_open_deferred(path, arch, &im->obj, err);
	if (r < 0)
		return r;
	char name[128];
	if (object_key(im->obj, im->symbols_key, &im->symbols_key_len, name, sizeof(name)) == 0 &&
	    asprintf(&im->symbols_path, "%s/symbols/%s.sym", s->cache_dir, name) < 0)
		im->symbols_path = NULL;
	return 0;
}

/*
 * The binary's symbols from the cache when they are there (sorting a large
 * symbol table is most of what one address costs); otherwise read, and
 * noted to be written.
 */
static int load_symbols(struct image *im, struct sw_error *err)
{
	if (!im->obj->load_symbols)
		return 0; /* read when opened */
	if (im->symbols_path &&
	    sw_object_symbols_from_cache(im->obj, im->symbols_path, im->symbols_key,
					 im->symbols_key_len) == 0) {
		free(im->symbols_path);
		im->symbols_path = NULL; /* nothing to write */
		return 0;
	}
	int r = sw_object_load_symbols(im->obj, err);
	if (r < 0 || im->obj->nsymbols < SYMBOL_CACHE_MIN) {
		free(im->symbols_path);
		im->symbols_path = NULL;
	}
	return r;
}

/*
 * What an object's key adds for the range table: an id names a build,
 * and a stripped copy of it (or one with its debug information split off)
 * has the same id but answers otherwise.
 */
static size_t object_shape(const struct sw_object *o, uint8_t *k)
{
	struct stat st;
	uint64_t v[4] = {o->path && stat(o->path, &st) == 0 ? (uint64_t)st.st_size : 0,
			 o->dwarf.info.size, o->dwarf.line.size, o->text_size};
	memcpy(k, v, sizeof(v));
	return sizeof(v);
}

/*
 * The name and key of the image's range table: the binary's key and
 * shape, then its debug file's when it has one, so that another debug
 * file makes another table.
 */
static void table_name(struct sw_symbolicator *s, struct image *im)
{
	uint8_t *k = im->table_key;
	size_t n, dn;
	char name[128], dname[128];
	if (!s->cache_dir || object_key(im->obj, k, &n, name, sizeof(name)) < 0)
		return;
	size_t id_len = n;
	n += object_shape(im->obj, k + n);
	if (im->dbg) {
		k[n++] = 0xff;
		if (object_key(im->dbg, k + n, &dn, dname, sizeof(dname)) < 0)
			return;
		n += dn;
		n += object_shape(im->dbg, k + n);
	}
	/* the binary's name, and a hash of the rest: copies of one build do not share a file */
	unsigned long long rest = sw_fnv64(k + id_len, n - id_len, SW_FNV64_OFFSET);
	if (asprintf(&im->table_path, "%s/ranges/%s-%016llx.swr", s->cache_dir, name, rest) < 0) {
		im->table_path = NULL;
		return;
	}
	im->table_key_len = n;
}

/* mkdir -p for the index folder, private to the user like the rest of the cache. */
static int make_dirs(const char *dir)
{
	char path[4096];
	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(path, 0700) < 0 && errno != EEXIST ? -errno : 0;
}

/*
 * DWARF this small is read whole for the image's range table where a run
 * needed only part of it (a few tenths of a second at most, in
 * symbolicate's background child); larger DWARF gets its table once runs
 * have read every unit.
 */
#define TABLE_READ_MAX ((uint64_t)32 << 20)

/*
 * Whether the image has split units whose files this run did not find:
 * its index and range table are then not written (what was read lacks
 * their functions), so nothing is pending for them.
 */
static bool split_missing(const struct image *im)
{
	return im->dwarf && sw_dwarf_split_missing(im->dwarf, NULL);
}

/*
 * Whether the image's range table is to be written: asked for
 * (SW_SYMBOLICATE_TABLES), not there, and its DWARF small enough to read
 * whole or read whole already.
 */
static bool table_pending(const struct sw_symbolicator *s, const struct image *im)
{
	const struct sw_object *dw = im->dbg ? im->dbg : im->obj;
	return (s->flags & SW_SYMBOLICATE_TABLES) && s->cache_dir && im->table_path && !im->table &&
	       !im->table_failed && im->loaded && !im->dwarf_err && !split_missing(im) &&
	       (!im->dwarf || dw->dwarf.info.size <= TABLE_READ_MAX ||
		sw_dwarf_complete(im->dwarf));
}

/*
 * The image's index when this run read units it did not hold, its symbol
 * cache when this run read the symbols, and its range table when it can
 * be made: failures only cost speed.  With split units missing, neither
 * index nor table: symbolicate's background writer would read the whole
 * image again on every such run, only to decline.
 */
static bool index_pending(const struct sw_symbolicator *s, const struct image *im)
{
	return s->cache_dir && ((im->dwarf && im->index_path && sw_dwarf_index_stale(im->dwarf) &&
				 !split_missing(im)) ||
				(im->loaded && im->symbols_path) || table_pending(s, im));
}

struct bounds {
	uint64_t *v;
	size_t n, cap;
};

static int add_bound(void *ctx, uint64_t addr)
{
	struct bounds *b = ctx;
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 4096;
		uint64_t *v = realloc(b->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		b->v = v;
		b->cap = cap;
	}
	b->v[b->n++] = addr;
	return 0;
}

struct table_ctx {
	struct sw_symbolicator *s;
	struct image *im;
};

static int table_answer(void *ctx, uint64_t addr, struct sw_frame *frames, bool *outer_symbol)
{
	struct table_ctx *c = ctx;
	return lookup_files(c->s, c->im, addr, 0, frames, SW_SYMBOLICATE_MAX_FRAMES, outer_symbol,
			    NULL);
}

/*
 * Every address at which the image's answer may change: where DWARF's
 * units, subroutines, sequences and rows change (sw_dwarf_boundaries()),
 * where each symbol starts and ends, and the text's bounds, which decide
 * how far a symbol without a size reaches.
 */
static int image_bounds(struct image *im, struct bounds *b)
{
	int r = im->dwarf ? sw_dwarf_boundaries(im->dwarf, add_bound, b, NULL) : 0;
	const struct sw_object *obj = im->obj;
	for (size_t i = 0; i < obj->nsymbols && r >= 0; i++) {
		const struct sw_symbol *sym = &obj->symbols[i];
		r = add_bound(b, sym->addr);
		if (r >= 0 && sym->size && sym->addr + sym->size > sym->addr)
			r = add_bound(b, sym->addr + sym->size);
	}
	if (r >= 0)
		r = add_bound(b, obj->text_vmaddr);
	if (r >= 0 && obj->text_vmaddr + obj->text_size > obj->text_vmaddr)
		r = add_bound(b, obj->text_vmaddr + obj->text_size);
	return r;
}

static void save_table(struct sw_symbolicator *s, struct image *im)
{
	char dir[4096];
	struct bounds b = {0};
	struct table_ctx ctx = {s, im};
	int r = snprintf(dir, sizeof(dir), "%s/ranges", s->cache_dir) < (int)sizeof(dir)
		    ? make_dirs(dir)
		    : -ENAMETOOLONG;
	if (r >= 0)
		r = image_bounds(im, &b);
	/* answers without the split units' would be kept after they are found */
	if (r >= 0 && split_missing(im))
		r = -ENOENT;
	if (r >= 0)
		r = sw_table_write(b.v, b.n, table_answer, &ctx, im->table_key, im->table_key_len,
				   im->table_path);
	free(b.v);
	im->table_failed = r < 0;
}

static void save_index(struct sw_symbolicator *s, struct image *im)
{
	if (!index_pending(s, im))
		return;
	/* first: the units it reads go into the index below */
	if (table_pending(s, im))
		save_table(s, im);
	char dir[4096];
	if (im->dwarf && im->index_path && sw_dwarf_index_stale(im->dwarf) && !split_missing(im) &&
	    snprintf(dir, sizeof(dir), "%s/dwarf", s->cache_dir) < (int)sizeof(dir) &&
	    make_dirs(dir) == 0)
		sw_dwarf_index_write(im->dwarf, im->index_path, im->index_key, im->index_key_len,
				     NULL);
	if (im->loaded && im->symbols_path &&
	    snprintf(dir, sizeof(dir), "%s/symbols", s->cache_dir) < (int)sizeof(dir) &&
	    make_dirs(dir) == 0 &&
	    sw_object_symbols_to_cache(im->obj, im->symbols_path, im->symbols_key,
				       im->symbols_key_len) == 0) {
		free(im->symbols_path);
		im->symbols_path = NULL;
	}
}

size_t sw_symbolicator_split_missing(const struct sw_symbolicator *s, struct sw_buf *out)
{
	size_t images = 0;
	for (size_t i = 0; i < s->nimages; i++) {
		const struct image *im = &s->images[i];
		const char *first;
		size_t n = im->dwarf ? sw_dwarf_split_missing(im->dwarf, &first) : 0;
		if (!n)
			continue;
		images++;
		sw_buf_printf(out, "  %s: %zu split unit%s not found (%s)\n", im->path, n,
			      n == 1 ? "" : "s", first);
	}
	return images;
}

bool sw_symbolicator_index_pending(const struct sw_symbolicator *s)
{
	for (size_t i = 0; i < s->nimages; i++)
		if (index_pending(s, &s->images[i]))
			return true;
	return false;
}

void sw_symbolicator_save_indexes(struct sw_symbolicator *s)
{
	for (size_t i = 0; i < s->nimages; i++)
		save_index(s, &s->images[i]);
}

void sw_symbolicator_free(struct sw_symbolicator *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nimages; i++) {
		save_index(s, &s->images[i]);
		image_free(&s->images[i]);
	}
	for (size_t i = 0; i < s->nstrings; i++)
		free(s->strings[i]);
	free(s->strings);
	free(s->memo);
	free(s->images);
	free(s->cache_dir);
	free(s);
}

void sw_symbolicator_set_symsearch(struct sw_symbolicator *s, struct sw_symsearch *ss)
{
	s->search = ss;
}

/* Asks the symbol search for the binary (obj NULL) or the debug file of obj. */
static char *search(struct sw_symbolicator *s, const struct sw_image_ref *ref,
		    const struct sw_object *obj, bool want_debug)
{
	if (!s->search)
		return NULL;
	struct sw_symsearch_query q = {
	    .id = obj ? obj->id : ref->id,
	    .id_len = obj ? obj->id_len : ref->id_len,
	    .path = obj ? obj->path : ref->path,
	    .arch =
		ref->arch ? ref->arch : (obj && obj->format == SW_OBJECT_MACHO ? obj->arch : NULL),
	    .debuglink = obj ? obj->debuglink : NULL,
	    .macho = obj ? obj->format == SW_OBJECT_MACHO : ref->id_len == 16,
	};
	if (!q.id_len && !q.path)
		return NULL;
	struct sw_symsearch_result res = {0};
	char *found = NULL;
	if (sw_symsearch_find(s->search, &q, &res, NULL) >= 0) {
		const char *p = want_debug ? res.debug : res.binary;
		if (p && !(want_debug && obj && strcmp(p, obj->path) == 0))
			found = strdup(p);
	}
	sw_symsearch_result_finish(&res);
	return found;
}

unsigned sw_symbolicate_return_adjust(const char *arch)
{
	if (!arch)
		return 1;
	if (strncmp(arch, "arm64", 5) == 0 || strcmp(arch, "aarch64") == 0)
		return 4;
	if (strncmp(arch, "arm", 3) == 0)
		return 2;
	return 1;
}

/* --- strings --- */

static const char *keep_string(struct sw_symbolicator *s, const char *text, size_t len)
{
	if (s->string_bytes + len + 1 > MAX_STRINGS)
		return NULL;
	char **grown = realloc(s->strings, (s->nstrings + 1) * sizeof(*s->strings));
	if (!grown)
		return NULL;
	s->strings = grown;
	char *copy = malloc(len + 1);
	if (!copy)
		return NULL;
	memcpy(copy, text, len);
	copy[len] = '\0';
	s->strings[s->nstrings++] = copy;
	s->string_bytes += len + 1;
	return copy;
}

static size_t hash_ptr(const void *p)
{
	uint64_t x = (uint64_t)(uintptr_t)p;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x;
}

static int memo_grow(struct sw_symbolicator *s)
{
	size_t cap = s->memo_cap ? s->memo_cap * 2 : 1024;
	struct memo *m = calloc(cap, sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < s->memo_cap; i++) {
		if (!s->memo[i].key)
			continue;
		size_t h = hash_ptr(s->memo[i].key) & (cap - 1);
		while (m[h].key)
			h = (h + 1) & (cap - 1);
		m[h] = s->memo[i];
	}
	free(s->memo);
	s->memo = m;
	s->memo_cap = cap;
	return 0;
}

/* The memo slot of key: found (value set) or free for it. */
static struct memo *memo_slot(struct sw_symbolicator *s, const void *key)
{
	if (s->nmemo * 2 >= s->memo_cap && memo_grow(s) < 0)
		return NULL;
	size_t h = hash_ptr(key) & (s->memo_cap - 1);
	while (s->memo[h].key && s->memo[h].key != key)
		h = (h + 1) & (s->memo_cap - 1);
	return &s->memo[h];
}

static void memo_put(struct sw_symbolicator *s, struct memo *m, const void *key, const char *value)
{
	m->key = key;
	m->value = value;
	s->nmemo++;
}

/* The name to show for a name of the file: demangled unless asked not to. */
static const char *shown_name(struct sw_symbolicator *s, const char *raw)
{
	if (!raw || (s->flags & SW_SYMBOLICATE_NO_DEMANGLE))
		return raw;
	struct memo *m = memo_slot(s, raw);
	if (!m)
		return raw;
	if (m->key)
		return m->value;
	struct sw_buf b;
	sw_buf_init(&b, 1 << 20);
	unsigned dflags = (s->flags & SW_SYMBOLICATE_SWIFT_SIMPLIFIED) ? SW_DEMANGLE_SIMPLIFIED : 0;
	const char *value = raw;
	if (sw_demangle(raw, dflags, &b) > 0) {
		const char *kept = keep_string(s, (const char *)b.data, b.len);
		if (kept)
			value = kept;
	}
	sw_buf_finish(&b);
	memo_put(s, m, raw, value);
	return value;
}

/* --- images --- */

/* X.dSYM (a directory) -> the DWARF file inside it for this arch. */
static char *resolve_dsym(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return strdup(path);
	size_t n = strlen(path) + 64;
	char *dir = malloc(n);
	if (!dir)
		return NULL;
	snprintf(dir, n, "%s/Contents/Resources/DWARF", path);
	DIR *dp = opendir(dir);
	char *found = NULL;
	if (dp) {
		struct dirent *e;
		while (!found && (e = readdir(dp))) {
			if (e->d_name[0] == '.')
				continue;
			size_t m = strlen(dir) + strlen(e->d_name) + 2;
			found = malloc(m);
			if (found)
				snprintf(found, m, "%s/%s", dir, e->d_name);
		}
		closedir(dp);
	}
	free(dir);
	return found;
}

/* PATH.dSYM's DWARF file when that bundle exists. */
static char *dsym_beside(const char *path)
{
	size_t n = strlen(path) + 8;
	char *bundle = malloc(n);
	if (!bundle)
		return NULL;
	snprintf(bundle, n, "%s.dSYM", path);
	struct stat st;
	char *found = stat(bundle, &st) == 0 && S_ISDIR(st.st_mode) ? resolve_dsym(bundle) : NULL;
	free(bundle);
	return found;
}

static bool same_id(const struct sw_object *o, const uint8_t *id, size_t len)
{
	return id && len && o->id_len == len && memcmp(o->id, id, len) == 0;
}

static struct image *find_image(struct sw_symbolicator *s, const struct sw_image_ref *ref)
{
	for (size_t i = 0; i < s->nimages; i++) {
		struct image *im = &s->images[i];
		if (ref->id && ref->id_len && im->id_len == ref->id_len &&
		    memcmp(im->id, ref->id, ref->id_len) == 0)
			return im;
		if (!ref->id_len && ref->path && strcmp(im->path, ref->path) == 0 &&
		    strcmp(im->arch, ref->arch ? ref->arch : "") == 0 &&
		    (!ref->debug_path ||
		     (im->debug_path && strcmp(im->debug_path, ref->debug_path) == 0)))
			return im;
	}
	return NULL;
}

static int open_debug(struct sw_symbolicator *s, struct image *im, const struct sw_image_ref *ref,
		      struct sw_error *err)
{
	char *dpath = NULL;
	if (ref->debug_path)
		dpath = resolve_dsym(ref->debug_path);
	else if (!im->obj->has_debug_info && im->obj->format == SW_OBJECT_MACHO &&
		 (s->flags & SW_SYMBOLICATE_DSYM_BESIDE_ONLY))
		dpath = dsym_beside(im->obj->path);
	else if (!im->obj->has_debug_info)
		dpath = search(s, ref, im->obj, true);
	if (!dpath) {
		if (ref->debug_path)
			return sw_error_set(err, -ENOENT, "no DWARF file in '%s'", ref->debug_path);
		return 0;
	}
	const char *arch =
	    ref->arch ? ref->arch : (im->obj->format == SW_OBJECT_MACHO ? im->obj->arch : NULL);
	/* only its DWARF is wanted: its symbol table is never read */
	int r = sw_object_open_deferred(dpath, arch, &im->dbg, err);
	if (r >= 0 && im->obj->id_len && im->dbg->id_len &&
	    !same_id(im->dbg, im->obj->id, im->obj->id_len)) {
		r = sw_error_set(err, -ENOENT, "'%s' does not match the binary's id", dpath);
		sw_object_free(im->dbg);
		im->dbg = NULL;
	}
	if (r < 0 && ref->debug_path) {
		char msg[sizeof(err->msg)];
		snprintf(msg, sizeof(msg), "%s", err ? sw_error_str(err) : "");
		sw_error_set(err, r, "debug file '%s': %s", dpath, msg);
	}
	free(dpath);
	return ref->debug_path ? r : 0;
}

/* The symbols, the DWARF reader and its index, once. */
static int load_contents(struct sw_symbolicator *s, struct image *im, struct sw_error *err)
{
	if (im->loaded)
		return 0;
	int r = load_symbols(im, err);
	if (r < 0)
		return r;
	im->loaded = true;
	const struct sw_object *dw = im->dbg ? im->dbg : im->obj;
	if (dw->has_debug_info) {
		struct sw_error derr = {0};
		im->dwarf_err = sw_dwarf_new(&dw->dwarf, &im->dwarf, &derr);
		if (im->dwarf && dw->path && sw_dwarf_set_origin(im->dwarf, dw->path) < 0)
			return sw_error_set(err, -ENOMEM, "out of memory");
		snprintf(im->dwarf_msg, sizeof(im->dwarf_msg), "%s", sw_error_str(&derr));
		open_index(s, im, dw);
	}
	return 0;
}

/* The image's range table when the cache folder has one: lookups then need nothing else. */
static void open_table(struct sw_symbolicator *s, struct image *im)
{
	table_name(s, im);
	if (im->table_path)
		sw_table_open(im->table_path, im->table_key, im->table_key_len, &im->table);
}

/*
 * Whether the binary opened is another build than the image the process
 * loaded: both have ids, and they differ (a program rebuilt since the
 * recording was made).  Its symbols would name the wrong functions.
 */
static bool other_build(const struct image *im, const struct sw_image_ref *ref)
{
	return ref->id_len && im->obj->id_len && !same_id(im->obj, ref->id, ref->id_len);
}

static int load_image(struct sw_symbolicator *s, const struct sw_image_ref *ref, struct image *im,
		      struct sw_error *err)
{
	/* a binary no longer where the process loaded it (a recording replayed
	 * elsewhere) is looked for by its id in the search paths */
	char *path = NULL;
	if (ref->id_len && (!ref->path || access(ref->path, F_OK) != 0))
		path = search(s, ref, NULL, false);
	if (!path && ref->path)
		path = strdup(ref->path);
	if (!path)
		return sw_error_set(err, -ENOENT, "no binary found for this image");
	int r = open_binary(s, path, ref->arch, im, err);
	if (r >= 0 && other_build(im, ref)) {
		/* rebuilt where it was loaded from: the right build may be elsewhere */
		char *found = search(s, ref, NULL, false);
		char is[65];
		sw_symsearch_id_str(im->obj->id, im->obj->id_len,
				    im->obj->format == SW_OBJECT_MACHO, is);
		sw_object_free(im->obj);
		im->obj = NULL;
		free(im->symbols_path);
		im->symbols_path = NULL;
		if (found) {
			free(path);
			path = found;
			r = open_binary(s, path, ref->arch, im, err);
		} else {
			r = sw_error_set(err, -ENOENT,
					 "'%s' is another build of it (id %s), and that one was "
					 "not found",
					 path, is);
		}
	}
	if (r >= 0)
		r = open_debug(s, im, ref, err);
	im->path = path;
	im->debug_path = ref->debug_path ? strdup(ref->debug_path) : NULL;
	snprintf(im->arch, sizeof(im->arch), "%s", ref->arch ? ref->arch : "");
	if (r < 0)
		return r;
	memcpy(im->id, im->obj->id, sizeof(im->id));
	im->id_len = im->obj->id_len;
	open_table(s, im);
	return im->table ? 0 : load_contents(s, im, err);
}

static void image_free(struct image *im)
{
	sw_table_free(im->table);
	free(im->table_path);
	sw_dwarf_free(im->dwarf);
	free(im->index_path);
	free(im->symbols_path);
	sw_object_free(im->dbg);
	sw_object_free(im->obj);
	free(im->path);
	free(im->debug_path);
}

/* The image ref names, opened if need be: its index, or -errno. */
static int find_or_open(struct sw_symbolicator *s, const struct sw_image_ref *ref,
			struct sw_error *err)
{
	struct image *im = find_image(s, ref);
	if (im)
		return (int)(im - s->images);
	if (s->nimages >= MAX_IMAGES)
		return sw_error_set(err, -E2BIG, "too many images");
	struct image *grown = realloc(s->images, (s->nimages + 1) * sizeof(*grown));
	if (!grown)
		return sw_error_set(err, -ENOMEM, "out of memory");
	s->images = grown;
	im = &s->images[s->nimages];
	memset(im, 0, sizeof(*im));
	int r = load_image(s, ref, im, err);
	if (r < 0) {
		image_free(im);
		return r;
	}
	return (int)s->nimages++;
}

int sw_symbolicator_image(struct sw_symbolicator *s, const struct sw_image_ref *ref,
			  const struct sw_object **ret_obj, struct sw_error *err)
{
	int idx = find_or_open(s, ref, err);
	if (idx < 0)
		return idx;
	int r = load_contents(s, &s->images[idx], err);
	if (r < 0)
		return r;
	*ret_obj = s->images[idx].obj;
	return idx;
}

const struct sw_symbolicate_table *sw_symbolicator_table(struct sw_symbolicator *s,
							 const struct sw_image_ref *ref,
							 struct sw_error *err)
{
	int idx = find_or_open(s, ref, err);
	if (idx < 0)
		return NULL;
	sw_error_clear(err);
	return s->images[idx].table;
}

/* --- frames --- */

/* A symbol's name as the file has it, Mach-O's underscore stripped; "sub_<hex>" without one. */
static const char *symbol_name(struct sw_symbolicator *s, const struct sw_object *obj,
			       const struct sw_symbol *sym)
{
	if (sym->flags & SW_SYMBOL_SYNTHETIC) {
		struct memo *m = memo_slot(s, sym);
		if (m && m->key)
			return m->value;
		char tmp[32];
		int n = snprintf(tmp, sizeof(tmp), "sub_%llx", (unsigned long long)sym->addr);
		const char *kept = keep_string(s, tmp, (size_t)n);
		if (m && kept)
			memo_put(s, m, sym, kept);
		return kept;
	}
	const char *name = sym->name;
	if (obj->format == SW_OBJECT_MACHO && name[0] == '_')
		name++;
	return name;
}

static int symbol_frame(struct sw_symbolicator *s, struct image *im, uint64_t addr,
			struct sw_frame *fr)
{
	const struct sw_object *obj = im->obj;
	memset(fr, 0, sizeof(*fr));
	const struct sw_symbol *sym = sw_object_find_symbol_near(obj, addr, &im->symbol_hint);
	if (!sym)
		return 1;
	/* a sizeless last symbol does not own everything up to the end of memory */
	if (!sym->size && obj->text_size &&
	    (addr < obj->text_vmaddr || addr - obj->text_vmaddr >= obj->text_size))
		return 1;
	fr->function = symbol_name(s, obj, sym);
	fr->symbol_addr = sym->addr;
	fr->offset = addr - sym->addr;
	fr->flags = SW_FRAME_SYMBOL | ((sym->flags & SW_SYMBOL_SYNTHETIC) ? SW_FRAME_SYNTHETIC : 0);
	return 1;
}

bool sw_symbolicator_image_cached(struct sw_symbolicator *s, const struct sw_image_ref *ref)
{
	int idx = find_or_open(s, ref, NULL);
	if (idx < 0 || !s->cache_dir)
		return false;
	const struct image *im = &s->images[idx];
	if (im->table)
		return true;
	return im->loaded && !im->symbols_path && (!im->dwarf || sw_dwarf_index_whole(im->dwarf));
}

/*
 * The frames of file address addr from the image's DWARF and symbols, the
 * names as the file has them (symbol_name()); max is at least 1.
 * *outer_symbol (when not NULL) says whether the symbol table named the
 * outermost frame.
 */
static int lookup_files(struct sw_symbolicator *s, struct image *im, uint64_t addr, unsigned flags,
			struct sw_frame *frames, size_t max, bool *outer_symbol,
			struct sw_error *err)
{
	const struct sw_object *obj = im->obj;
	struct sw_dwarf_frame df[SW_SYMBOLICATE_MAX_FRAMES];
	int n = load_contents(s, im, err);
	if (n < 0)
		return n;
	if (im->dwarf) {
		unsigned dflags = (flags & SW_SYMBOLICATE_NO_INLINES) ? SW_DWARF_NO_INLINES : 0;
		n = sw_dwarf_lookup(
		    im->dwarf, addr, dflags, df,
		    max < SW_SYMBOLICATE_MAX_FRAMES ? max : SW_SYMBOLICATE_MAX_FRAMES, err);
		if (n < 0)
			return n;
	}
	if (outer_symbol)
		*outer_symbol = false;
	if (n == 0 || (n == 1 && !df[0].function && !df[0].file))
		return symbol_frame(s, im, addr, frames);
	for (int i = 0; i < n; i++) {
		frames[i] = (struct sw_frame){
		    .function = df[i].function,
		    .file = df[i].file,
		    .line = df[i].line,
		    .column = df[i].column,
		    .flags = SW_FRAME_DEBUG_INFO | (i + 1 < n ? SW_FRAME_INLINED : 0),
		};
	}
	/*
	 * As llvm-symbolizer does, the symbol table names the outermost
	 * function: it knows the clones (foo.constprop.0, foo.cold) that
	 * DWARF names after their origin, and it has the name -gmlt lacks.
	 */
	const struct sw_symbol *sym = sw_object_find_symbol_near(obj, addr, &im->symbol_hint);
	int last = (flags & SW_SYMBOLICATE_NO_INLINES) ? 0 : n - 1;
	if (sym && !(sym->flags & SW_SYMBOL_SYNTHETIC) && sym->name[0]) {
		frames[last].function = symbol_name(s, obj, sym);
		if (outer_symbol)
			*outer_symbol = true;
	}
	return n;
}

/* The names of frames as they are shown: demangled unless asked not to. */
static void show_names(struct sw_symbolicator *s, struct sw_frame *frames, size_t n)
{
	if (s->flags & SW_SYMBOLICATE_NO_DEMANGLE)
		return;
	for (size_t i = 0; i < n; i++)
		if (!(frames[i].flags & SW_FRAME_SYNTHETIC))
			frames[i].function = shown_name(s, frames[i].function);
}

/* The frames of file address addr in an image already open; max is at least 1. */
static int lookup(struct sw_symbolicator *s, struct image *im, uint64_t addr,
		  struct sw_frame *frames, size_t max, struct sw_error *err)
{
	int n;
	if (im->table && max >= SW_SYMBOLICATE_MAX_FRAMES)
		n = (int)sw_table_frames(im->table, addr, s->flags & SW_SYMBOLICATE_NO_INLINES,
					 frames);
	else if ((n = lookup_files(s, im, addr, s->flags, frames, max, NULL, err)) < 0)
		return n;
	show_names(s, frames, (size_t)n);
	return n;
}

int sw_symbolicate_table_frames(struct sw_symbolicator *s, const struct sw_symbolicate_table *t,
				uint32_t range, uint64_t file_addr, struct sw_frame *frames)
{
	size_t n =
	    sw_table_frames_at(t, range, file_addr, s->flags & SW_SYMBOLICATE_NO_INLINES, frames);
	show_names(s, frames, n);
	return (int)n;
}

int sw_symbolicate_file_addr(struct sw_symbolicator *s, const struct sw_image_ref *ref,
			     uint64_t addr, struct sw_frame *frames, size_t max,
			     struct sw_error *err)
{
	if (max == 0)
		return sw_error_set(err, -EINVAL, "no room for frames");
	int idx = find_or_open(s, ref, err);
	return idx < 0 ? idx : lookup(s, &s->images[idx], addr, frames, max, err);
}

int sw_symbolicate(struct sw_symbolicator *s, const struct sw_image_ref *ref, uint64_t addr,
		   bool return_address, struct sw_frame *frames, size_t max, struct sw_error *err)
{
	int idx = find_or_open(s, ref, err);
	if (idx < 0)
		return idx;
	const struct sw_object *obj = s->images[idx].obj;
	uint64_t vmaddr = ref->has_text_vmaddr ? ref->text_vmaddr : obj->text_vmaddr;
	uint64_t file_addr = addr - ref->load_addr + vmaddr;
	if (return_address)
		file_addr -= sw_symbolicate_return_adjust(obj->arch);
	return sw_symbolicate_file_addr(s, ref, file_addr, frames, max, err);
}

/* --- many addresses at once --- */

/* Batches this large share the reading of DWARF units out among threads. */
#define PARALLEL_BATCH 1024

struct order {
	uint64_t addr;
	size_t index;
};

/*
 * Sorts by address, ties in input order: a least-significant-byte-first
 * radix sort over the bytes in which the addresses differ (three for a few
 * megabytes of text), several times faster than qsort on 100,000 of them.
 */
static int sort_order(struct order *v, size_t n, struct order *tmp)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i < n; i++) {
		if (v[i].addr < lo)
			lo = v[i].addr;
		if (v[i].addr > hi)
			hi = v[i].addr;
	}
	if (n < 2 || lo == hi)
		return 0;
	struct order *src = v, *dst = tmp;
	for (unsigned shift = 0; shift < 64 && ((hi - lo) >> shift); shift += 8) {
		size_t count[257] = {0};
		for (size_t i = 0; i < n; i++)
			count[((src[i].addr - lo) >> shift & 0xff) + 1]++;
		for (int b = 0; b < 256; b++)
			count[b + 1] += count[b];
		for (size_t i = 0; i < n; i++)
			dst[count[(src[i].addr - lo) >> shift & 0xff]++] = src[i];
		struct order *t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	return 0;
}

static int batch_reserve(struct sw_symbolicate_batch *b, size_t n)
{
	if (n <= b->index_cap)
		return 0;
	size_t *first = realloc(b->first, n * sizeof(*first));
	if (first)
		b->first = first;
	size_t *count = realloc(b->count, n * sizeof(*count));
	if (count)
		b->count = count;
	if (!first || !count)
		return -ENOMEM;
	b->index_cap = n;
	return 0;
}

int sw_symbolicate_file_addrs(struct sw_symbolicator *s, const struct sw_image_ref *ref,
			      const uint64_t *addrs, size_t n, struct sw_symbolicate_batch *batch,
			      size_t *ret_done, struct sw_error *err)
{
	size_t used = 0, failed = n;
	int r = batch_reserve(batch, n + 1);
	/* twice n: the sort's scratch is the second half */
	if (r >= 0 && batch->order_cap < 2 * n) {
		void *p = realloc(batch->order, 2 * n * sizeof(struct order));
		if (p) {
			batch->order = p;
			batch->order_cap = 2 * n;
		} else {
			r = -ENOMEM;
		}
	}
	/* room for two frames an address at once: no copies while it grows */
	size_t want = 2 * n + SW_SYMBOLICATE_MAX_FRAMES;
	if (r >= 0 && batch->frames_cap < want) {
		struct sw_frame *p = realloc(batch->frames, want * sizeof(*p));
		if (p) {
			batch->frames = p;
			batch->frames_cap = want;
		}
	}
	struct order *order = batch->order;
	for (size_t i = 0; r >= 0 && i < n; i++) {
		order[i] = (struct order){addrs[i], i};
		batch->count[i] = 0;
	}
	if (r >= 0)
		sort_order(order, n, order + n);
	struct sw_error first_err = {0}, e;
	int idx = r >= 0 && n ? find_or_open(s, ref, &first_err) : 0;
	if (idx < 0) {
		/* every address fails alike: the first in input order names it */
		*ret_done = 0;
		if (err)
			*err = first_err;
		return idx;
	}
	/* a large batch reads the units it needs on every processor first */
	struct image *im = n ? &s->images[idx] : NULL;
	if (r >= 0 && im && !im->table && load_contents(s, im, NULL) >= 0 && im->dwarf &&
	    n >= PARALLEL_BATCH)
		sw_dwarf_read_units(im->dwarf, addrs, n, sw_processors());
	for (size_t k = 0; r >= 0 && k < n; k++) {
		size_t i = order[k].index;
		if (i > failed)
			continue;
		if (batch->frames_cap - used < SW_SYMBOLICATE_MAX_FRAMES) {
			size_t cap = batch->frames_cap ? batch->frames_cap * 2 : 4096;
			struct sw_frame *p = realloc(batch->frames, cap * sizeof(*p));
			if (!p) {
				r = -ENOMEM;
				break;
			}
			batch->frames = p;
			batch->frames_cap = cap;
		}
		/* the message is only read when the code is set: clearing 512 bytes
		 * per address cost 6% of the time */
		e.code = 0;
		e.msg[0] = '\0';
		int got = lookup(s, &s->images[idx], order[k].addr, batch->frames + used,
				 SW_SYMBOLICATE_MAX_FRAMES, &e);
		if (got < 0) {
			failed = i; /* the earliest failing address in input order wins */
			first_err = e;
			continue;
		}
		batch->first[i] = used;
		batch->count[i] = (size_t)got;
		used += (size_t)got;
	}
	if (r < 0)
		return sw_error_set(err, r, "out of memory");
	*ret_done = failed;
	if (failed < n) {
		if (err)
			*err = first_err;
		return first_err.code ? first_err.code : -EINVAL;
	}
	return 0;
}

void sw_symbolicate_batch_finish(struct sw_symbolicate_batch *batch)
{
	if (!batch)
		return;
	free(batch->frames);
	free(batch->first);
	free(batch->count);
	free(batch->order);
	*batch = (struct sw_symbolicate_batch){0};
}
