/*
 * Symbol search (see symsearch.h): the order of the places looked at, the
 * ELF debug-file conventions, and the list of misses.  The index of the
 * search paths (symsearch-index.c) is built on the first query that needs
 * it; the host's places come from lib/host/.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/buf.h"
#include "host/host.h"
#include "objfile/macho.h"
#include "symsearch-private.h"
#include "symsearch.h"

#define MAX_ROOTS  4096
#define MAX_MISSES 100000

struct sw_symsearch {
	char **roots;
	size_t nroots;
	char **prefixes;
	size_t nprefixes;
	char *debug_root;
	bool debuginfod;
	struct sw_symsearch_index ix;
	struct sw_symsearch_miss *misses;
	size_t nmisses, misses_cap;
	uint32_t *miss_table; /* miss index + 1 by hash of the id, 0: empty */
	size_t miss_table_cap;
};

int sw_symsearch_new(struct sw_symsearch **ret)
{
	struct sw_symsearch *s = calloc(1, sizeof(*s));
	const char *urls = getenv("DEBUGINFOD_URLS");

	if (!s)
		return -ENOMEM;
	s->debug_root = strdup("/usr/lib/debug");
	if (!s->debug_root) {
		free(s);
		return -ENOMEM;
	}
	s->debuginfod = urls && *urls;
	sw_symsearch_index_init(&s->ix);
	s->ix.cache_dir = sw_symsearch_cache_default_dir();
	*ret = s;
	return 0;
}

static void free_list(char **list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

void sw_symsearch_free(struct sw_symsearch *s)
{
	if (!s)
		return;
	free_list(s->roots, s->nroots);
	free_list(s->prefixes, s->nprefixes);
	free(s->debug_root);
	sw_symsearch_index_finish(&s->ix);
	free(s->ix.cache_dir);
	for (size_t i = 0; i < s->nmisses; i++)
		free(s->misses[i].path);
	free(s->misses);
	free(s->miss_table);
	free(s);
}

static int push(char ***list, size_t *n, const char *path)
{
	char **l;
	char *copy;

	if (*n >= MAX_ROOTS)
		return -E2BIG;
	copy = strdup(path);
	l = realloc(*list, (*n + 1) * sizeof(**list));
	if (!copy || !l) {
		free(copy);
		if (l)
			*list = l;
		return -ENOMEM;
	}
	l[(*n)++] = copy;
	*list = l;
	return 0;
}

int sw_symsearch_add_path(struct sw_symsearch *s, const char *path)
{
	struct sw_buf b;
	char cwd[4096];
	int r;

	if (!path || !*path)
		return -EINVAL;
	/* A later query must see the new path: rebuild the index then. */
	sw_symsearch_index_finish(&s->ix);
	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return push(&s->roots, &s->nroots, path);
	/* Absolute, so that what is found (and cached) names the file from anywhere. */
	sw_buf_init(&b, 8192);
	r = sw_buf_printf(&b, "%s/%s", cwd, path);
	if (r >= 0)
		r = push(&s->roots, &s->nroots, sw_buf_str(&b));
	sw_buf_finish(&b);
	return r;
}

int sw_symsearch_add_env(struct sw_symsearch *s)
{
	const char *env = getenv("STALLWATCH_SYMBOLS");
	char *copy, *p, *save = NULL;
	int n = 0, r = 0;

	if (!env || !*env)
		return 0;
	copy = strdup(env);
	if (!copy)
		return -ENOMEM;
	for (p = strtok_r(copy, ":", &save); p && r >= 0; p = strtok_r(NULL, ":", &save)) {
		r = sw_symsearch_add_path(s, p);
		n++;
	}
	free(copy);
	return r < 0 ? r : n;
}

int sw_symsearch_add_prefix(struct sw_symsearch *s, const char *dir)
{
	if (!dir || !*dir)
		return -EINVAL;
	return push(&s->prefixes, &s->nprefixes, dir);
}

int sw_symsearch_add_host(struct sw_symsearch *s)
{
	struct sw_host_dir *dirs = NULL;
	size_t n = 0;
	int r = sw_host_symbol_dirs(&dirs, &n);

	for (size_t i = 0; i < n; i++) {
		if (r >= 0)
			r = dirs[i].kind == SW_HOST_DIR_PREFIX
				? push(&s->prefixes, &s->nprefixes, dirs[i].path)
				: sw_symsearch_add_path(s, dirs[i].path);
		free(dirs[i].path);
	}
	free(dirs);
	return r < 0 ? r : (int)n;
}

int sw_symsearch_set_debug_root(struct sw_symsearch *s, const char *root)
{
	char *copy = strdup(root ? root : "");

	if (!copy)
		return -ENOMEM;
	free(s->debug_root);
	s->debug_root = copy;
	return 0;
}

int sw_symsearch_set_cache_dir(struct sw_symsearch *s, const char *dir)
{
	char *copy = dir && *dir ? strdup(dir) : NULL;

	if (dir && *dir && !copy)
		return -ENOMEM;
	free(s->ix.cache_dir);
	s->ix.cache_dir = copy;
	return 0;
}

size_t sw_symsearch_cache_hits(const struct sw_symsearch *s)
{
	return s->ix.cache_hits;
}

void sw_symsearch_set_debuginfod(struct sw_symsearch *s, bool enabled)
{
	s->debuginfod = enabled;
}

void sw_symsearch_id_str(const uint8_t *id, size_t len, bool macho, char out[65])
{
	static const char hex[] = "0123456789abcdef";

	if (macho && len == 16) {
		sw_macho_uuid_str(id, out);
		return;
	}
	if (len > 32)
		len = 32;
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = hex[id[i] >> 4];
		out[2 * i + 1] = hex[id[i] & 15];
	}
	out[2 * len] = 0;
}

/* What one candidate file holds for the query. */
struct matching {
	const struct sw_symsearch_query *q;
	unsigned kinds;
	char arch[16];
};

static int match_entry(void *ctx, const struct sw_symsearch_entry *e)
{
	struct matching *m = ctx;

	if (e->id_len != m->q->id_len || memcmp(e->id, m->q->id, e->id_len) != 0)
		return 0;
	if (e->macho && m->q->arch && strcmp(e->arch, m->q->arch) != 0)
		return 0;
	if (!m->kinds && e->macho)
		memcpy(m->arch, e->arch, sizeof(m->arch));
	m->kinds |= e->kind;
	return 0;
}

static unsigned match_file(const struct sw_symsearch_query *q, const char *path, char arch[16])
{
	struct matching m = {.q = q};

	sw_symsearch_identify(path, match_entry, &m);
	if (m.kinds && arch && m.arch[0])
		memcpy(arch, m.arch, 16);
	return m.kinds;
}

/* Takes path for whichever of ret's files are still missing and it holds. */
static void take(struct sw_symsearch_result *ret, const char *path, unsigned kinds)
{
	if ((kinds & SW_SYMFILE_BINARY) && !ret->binary)
		ret->binary = strdup(path);
	if ((kinds & SW_SYMFILE_DEBUG) && !ret->debug)
		ret->debug = strdup(path);
}

static unsigned missing(const struct sw_symsearch_result *r)
{
	return (r->binary ? 0 : SW_SYMFILE_BINARY) | (r->debug ? 0 : SW_SYMFILE_DEBUG);
}

static void try_file(const struct sw_symsearch_query *q, const char *path,
		     struct sw_symsearch_result *ret)
{
	unsigned want = missing(ret), kinds;

	if (!want)
		return;
	kinds = match_file(q, path, ret->arch);
	take(ret, path, kinds & want);
}

static void dir_of(const char *path, struct sw_buf *b)
{
	const char *slash = strrchr(path, '/');

	sw_buf_reset(b);
	if (!slash)
		sw_buf_puts(b, ".");
	else if (slash == path)
		sw_buf_puts(b, "/");
	else
		sw_buf_append(b, path, (size_t)(slash - path));
}

static void try_dsym(const struct sw_symsearch_query *q, struct sw_symsearch_result *ret,
		     struct sw_buf *b)
{
	char *found = NULL, arch[16];

	sw_buf_reset(b);
	sw_buf_printf(b, "%s.dSYM", q->path);
	if (sw_macho_dsym_find(sw_buf_str(b), q->id, q->arch, &found, arch, NULL) < 0) {
		dir_of(q->path, b);
		if (sw_macho_dsym_find(sw_buf_str(b), q->id, q->arch, &found, arch, NULL) < 0)
			return;
	}
	ret->debug = found;
	if (!ret->arch[0])
		memcpy(ret->arch, arch, sizeof(arch));
}

/* /usr/lib/debug/.build-id/xx/rest.debug, then .gnu_debuglink's three places. */
static void try_elf_conventions(struct sw_symsearch *s, const struct sw_symsearch_query *q,
				struct sw_symsearch_result *ret, struct sw_buf *b)
{
	char hex[65], dir[4096];
	const char *link = q->debuglink;
	struct sw_symsearch_elf elf;

	sw_symsearch_id_str(q->id, q->id_len, false, hex);
	if (s->debug_root[0] && q->id_len >= 2) {
		sw_buf_reset(b);
		sw_buf_printf(b, "%s/.build-id/%.2s/%s.debug", s->debug_root, hex, hex + 2);
		try_file(q, sw_buf_str(b), ret);
	}
	if (ret->debug || !q->path)
		return;
	if (!link && ret->binary) {
		int fd = open(ret->binary, O_RDONLY | O_CLOEXEC);
		struct stat st;

		if (fd >= 0 && fstat(fd, &st) == 0 &&
		    sw_symsearch_elf_peek(fd, (uint64_t)st.st_size, &elf) == 0 && elf.debuglink[0])
			link = elf.debuglink;
		if (fd >= 0)
			close(fd);
	}
	if (!link || strchr(link, '/'))
		return;
	dir_of(q->path, b);
	snprintf(dir, sizeof(dir), "%s", sw_buf_str(b));
	for (int i = 0; i < 3 && !ret->debug; i++) {
		sw_buf_reset(b);
		if (i == 0)
			sw_buf_printf(b, "%s/%s", dir, link);
		else if (i == 1)
			sw_buf_printf(b, "%s/.debug/%s", dir, link);
		else if (s->debug_root[0] && dir[0] == '/')
			sw_buf_printf(b, "%s%s/%s", s->debug_root, dir, link);
		else
			continue;
		try_file(q, sw_buf_str(b), ret);
	}
}

static int try_index(struct sw_symsearch *s, const struct sw_symsearch_query *q,
		     struct sw_symsearch_result *ret)
{
	const struct sw_symsearch_entry *e;
	int r;

	if (!missing(ret) || s->nroots == 0)
		return 0;
	if (!s->ix.built) {
		r = sw_symsearch_index_build(&s->ix, s->roots, s->nroots);
		if (r < 0)
			return r;
	}
	for (unsigned kind = SW_SYMFILE_BINARY; kind <= SW_SYMFILE_DEBUG; kind <<= 1) {
		if (!(missing(ret) & kind))
			continue;
		e = sw_symsearch_index_find(&s->ix, q->id, q->id_len, q->arch, kind);
		if (!e)
			continue;
		take(ret, sw_symsearch_index_path(&s->ix, e), kind);
		if (e->macho && !ret->arch[0])
			memcpy(ret->arch, e->arch, sizeof(ret->arch));
	}
	return 0;
}

static uint64_t id_hash(const char *id)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *id; id++)
		h = (h ^ (unsigned char)*id) * 0x100000001b3ull;
	return h;
}

/* The table slot of id: its miss, or the empty slot where it goes. */
static size_t miss_slot(const struct sw_symsearch *s, const char *id)
{
	size_t j = id_hash(id) & (s->miss_table_cap - 1);
	while (s->miss_table[j] && strcmp(s->misses[s->miss_table[j] - 1].id, id) != 0)
		j = (j + 1) & (s->miss_table_cap - 1);
	return j;
}

/* Makes room for one more miss; false when out of memory. */
static bool grow_misses(struct sw_symsearch *s)
{
	if (s->nmisses == s->misses_cap) {
		size_t cap = s->misses_cap ? s->misses_cap * 2 : 16;
		struct sw_symsearch_miss *m = realloc(s->misses, cap * sizeof(*m));
		if (!m)
			return false;
		s->misses = m;
		s->misses_cap = cap;
	}
	if ((s->nmisses + 1) * 2 <= s->miss_table_cap)
		return true;
	size_t cap = s->miss_table_cap ? s->miss_table_cap * 2 : 64;
	uint32_t *t = calloc(cap, sizeof(*t));
	if (!t)
		return false;
	free(s->miss_table);
	s->miss_table = t;
	s->miss_table_cap = cap;
	for (size_t i = 0; i < s->nmisses; i++)
		t[miss_slot(s, s->misses[i].id)] = (uint32_t)i + 1;
	return true;
}

/* Notes what was not found for q's id, once per id (a table: there may be many). */
static void record_miss(struct sw_symsearch *s, const struct sw_symsearch_query *q, unsigned what)
{
	char id[65];

	sw_symsearch_id_str(q->id, q->id_len, q->macho, id);
	if (!grow_misses(s))
		return;
	size_t j = miss_slot(s, id);
	if (s->miss_table[j]) {
		s->misses[s->miss_table[j] - 1].missing &= what;
		return;
	}
	if (s->nmisses >= MAX_MISSES)
		return;
	struct sw_symsearch_miss *m = &s->misses[s->nmisses++];
	memset(m, 0, sizeof(*m));
	memcpy(m->id, id, sizeof(id));
	m->path = q->path ? strdup(q->path) : NULL;
	snprintf(m->arch, sizeof(m->arch), "%s", q->arch ? q->arch : "");
	m->missing = what;
	s->miss_table[j] = (uint32_t)s->nmisses;
}

static void search(struct sw_symsearch *s, const struct sw_symsearch_query *q,
		   struct sw_symsearch_result *ret, struct sw_buf *b, int *r)
{
	struct stat st;

	if (q->path && stat(q->path, &st) == 0 && S_ISREG(st.st_mode))
		try_file(q, q->path, ret);
	if (q->macho && q->path && !ret->debug)
		try_dsym(q, ret, b);
	if (!q->macho)
		try_elf_conventions(s, q, ret, b);
	for (size_t i = 0; q->path && q->path[0] == '/' && i < s->nprefixes && missing(ret); i++) {
		sw_buf_reset(b);
		sw_buf_printf(b, "%s%s", s->prefixes[i], q->path);
		try_file(q, sw_buf_str(b), ret);
	}
	*r = try_index(s, q, ret);
	if (*r >= 0 && !q->macho && !ret->debug && s->debuginfod) {
		char *path = NULL;

		if (sw_symsearch_debuginfod(q->id, q->id_len, &path, NULL) == 0) {
			/* Trust but verify: the file must carry the build-id asked for. */
			try_file(q, path, ret);
			free(path);
		}
	}
}

int sw_symsearch_find(struct sw_symsearch *s, const struct sw_symsearch_query *q,
		      struct sw_symsearch_result *ret, struct sw_error *err)
{
	struct sw_symsearch_result res;
	struct sw_buf b;
	char id[65];
	int r = 0;

	if (!q->id || q->id_len == 0 || q->id_len > 32)
		return sw_error_set(err, -EINVAL, "image without an id");
	memset(&res, 0, sizeof(res));
	sw_buf_init(&b, 16384);
	search(s, q, &res, &b, &r);
	sw_buf_finish(&b);
	if (r < 0) {
		sw_symsearch_result_finish(&res);
		return sw_error_set(err, r, "cannot index the symbol search paths: %s",
				    strerror(-r));
	}
	if (missing(&res))
		record_miss(s, q, missing(&res));
	if (!res.binary && !res.debug) {
		sw_symsearch_id_str(q->id, q->id_len, q->macho, id);
		return sw_error_set(err, -ENOENT, "no binary or debug file for %s%s%s%s", id,
				    q->path ? " (" : "", q->path ? q->path : "",
				    q->path ? ")" : "");
	}
	*ret = res;
	return 0;
}

void sw_symsearch_result_finish(struct sw_symsearch_result *r)
{
	if (!r)
		return;
	free(r->binary);
	free(r->debug);
	memset(r, 0, sizeof(*r));
}

size_t sw_symsearch_misses(const struct sw_symsearch *s, const struct sw_symsearch_miss **ret)
{
	*ret = s->misses;
	return s->nmisses;
}

size_t sw_symsearch_indexed(struct sw_symsearch *s)
{
	if (!s->ix.built && s->nroots)
		sw_symsearch_index_build(&s->ix, s->roots, s->nroots);
	return s->ix.files;
}
