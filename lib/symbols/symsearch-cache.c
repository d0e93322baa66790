/*
 * The symbol index's disk cache: one text file, symindex-v1, under
 * $XDG_CACHE_HOME/stallwatch (or ~/.cache/stallwatch).  Each indexed file
 * is an "F size mtime_ns path" line followed by one "E kind macho arch id"
 * line per id it holds, so a later run reuses what it learned about every
 * file whose size and modification time did not change.  The cache is
 * input like any other: bounded, and a line that does not parse ends the
 * reading (what came before is kept).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symsearch-private.h"

#define CACHE_NAME      "symindex-v1"
#define CACHE_HEADER    "stallwatch-symindex 1\n"
#define MAX_CACHE_BYTES ((size_t)256 << 20)
#define MAX_CACHE_FILES 1000000

struct cfile {
	const char *path;
	uint64_t size;
	int64_t mtime_ns;
	size_t first, count;
	bool used;
};

struct sw_symsearch_cache {
	char *text;
	struct cfile *files;
	size_t nfiles;
	struct sw_symsearch_entry *entries;
	size_t nentries;
};

char *sw_symsearch_cache_default_dir(void)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char *dir = NULL;

	if (xdg && xdg[0] == '/') {
		if (asprintf(&dir, "%s/stallwatch", xdg) < 0)
			dir = NULL;
	} else if (home && home[0] == '/') {
		if (asprintf(&dir, "%s/.cache/stallwatch", home) < 0)
			dir = NULL;
	}
	return dir;
}

void sw_symsearch_cache_free(struct sw_symsearch_cache *c)
{
	if (!c)
		return;
	free(c->text);
	free(c->files);
	free(c->entries);
	free(c);
}

static char *read_all(const char *path)
{
	struct stat st;
	char *text;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > MAX_CACHE_BYTES) {
		close(fd);
		return NULL;
	}
	text = malloc((size_t)st.st_size + 1);
	if (text && read(fd, text, (size_t)st.st_size) != st.st_size) {
		free(text);
		text = NULL;
	}
	if (text)
		text[st.st_size] = 0;
	close(fd);
	return text;
}

static int hexbyte(const char *p)
{
	unsigned v;

	return sscanf(p, "%2x", &v) == 1 ? (int)v : -1;
}

/* "E kind macho arch idhex" into e; false when it does not parse. */
static bool parse_entry(char *line, struct sw_symsearch_entry *e)
{
	unsigned kind, macho;
	char arch[16], hex[65];
	size_t len;

	memset(e, 0, sizeof(*e));
	if (sscanf(line, "E %u %u %15s %64s", &kind, &macho, arch, hex) != 4 || kind == 0 ||
	    kind > 3 || macho > 1)
		return false;
	len = strlen(hex);
	if (len % 2 || len == 0 || len / 2 > sizeof(e->id))
		return false;
	for (size_t i = 0; i < len / 2; i++) {
		int v = hexbyte(hex + 2 * i);

		if (v < 0)
			return false;
		e->id[i] = (uint8_t)v;
	}
	e->id_len = (uint8_t)(len / 2);
	e->kind = (uint8_t)kind;
	e->macho = macho;
	snprintf(e->arch, sizeof(e->arch), "%s", strcmp(arch, "-") ? arch : "");
	return true;
}

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
	void *q;

	if (n < *cap)
		return 0;
	*cap = *cap ? *cap * 2 : 256;
	q = realloc(*p, *cap * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	return 0;
}

static int cfile_cmp(const void *a, const void *b)
{
	return strcmp(((const struct cfile *)a)->path, ((const struct cfile *)b)->path);
}

static int parse(struct sw_symsearch_cache *c)
{
	size_t fcap = 0, ecap = 0;
	char *line, *save = NULL;

	if (strncmp(c->text, CACHE_HEADER, strlen(CACHE_HEADER)) != 0)
		return 0;
	for (line = strtok_r(c->text + strlen(CACHE_HEADER), "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == 'F' && c->nfiles < MAX_CACHE_FILES) {
			struct cfile *f;
			uint64_t size;
			int64_t mtime;
			int off = 0;

			if (sscanf(line, "F %" SCNu64 " %" SCNd64 " %n", &size, &mtime, &off) !=
				2 ||
			    off == 0 || line[off] != '/')
				break;
			if (grow((void **)&c->files, &fcap, c->nfiles, sizeof(*c->files)) < 0)
				return -ENOMEM;
			f = &c->files[c->nfiles++];
			*f = (struct cfile){.path = line + off,
					    .size = size,
					    .mtime_ns = mtime,
					    .first = c->nentries};
		} else if (line[0] == 'E' && c->nfiles) {
			struct sw_symsearch_entry e;

			if (!parse_entry(line, &e))
				break;
			if (grow((void **)&c->entries, &ecap, c->nentries, sizeof(e)) < 0)
				return -ENOMEM;
			c->entries[c->nentries++] = e;
			c->files[c->nfiles - 1].count++;
		} else {
			break;
		}
	}
	if (c->nfiles > 1)
		qsort(c->files, c->nfiles, sizeof(*c->files), cfile_cmp);
	return 0;
}

int sw_symsearch_cache_load(const char *dir, struct sw_symsearch_cache **ret)
{
	struct sw_symsearch_cache *c = calloc(1, sizeof(*c));
	char *path = NULL;
	int r = 0;

	if (!c)
		return -ENOMEM;
	if (asprintf(&path, "%s/" CACHE_NAME, dir) < 0) {
		free(c);
		return -ENOMEM;
	}
	c->text = read_all(path);
	free(path);
	if (c->text)
		r = parse(c);
	if (r < 0) {
		sw_symsearch_cache_free(c);
		return r;
	}
	*ret = c;
	return 0;
}

int sw_symsearch_cache_lookup(struct sw_symsearch_cache *c, const char *path, uint64_t size,
			      int64_t mtime_ns,
			      int (*add)(void *ctx, const struct sw_symsearch_entry *e), void *ctx)
{
	struct cfile key = {.path = path}, *f;
	int r;

	if (!c || !c->nfiles)
		return 0;
	f = bsearch(&key, c->files, c->nfiles, sizeof(*c->files), cfile_cmp);
	if (!f)
		return 0;
	f->used = true;
	if (f->size != size || f->mtime_ns != mtime_ns)
		return 0;
	for (size_t i = 0; i < f->count; i++) {
		r = add(ctx, &c->entries[f->first + i]);
		if (r < 0)
			return r;
	}
	return 1;
}

static void write_entry(FILE *out, const struct sw_symsearch_entry *e)
{
	fprintf(out, "E %u %u %s ", e->kind, e->macho ? 1u : 0u, e->arch[0] ? e->arch : "-");
	for (size_t i = 0; i < e->id_len; i++)
		fprintf(out, "%02x", e->id[i]);
	fputc('\n', out);
}

static void write_file(FILE *out, const char *path, uint64_t size, int64_t mtime,
		       const struct sw_symsearch_entry *e, size_t n)
{
	if (path[0] != '/' || strchr(path, '\n'))
		return;
	fprintf(out, "F %" PRIu64 " %" PRId64 " %s\n", size, mtime, path);
	for (size_t i = 0; i < n; i++)
		write_entry(out, &e[i]);
}

int sw_symsearch_cache_save(const char *dir, const struct sw_symsearch_cache *old,
			    const struct sw_symsearch_index *ix)
{
	char *tmp = NULL, *final = NULL;
	size_t written = 0;
	FILE *out;
	int fd, r = 0;

	if (mkdir(dir, 0700) < 0 && errno == ENOENT) {
		/* ~/.cache itself may not exist yet. */
		char *parent = strdup(dir), *slash = parent ? strrchr(parent, '/') : NULL;

		if (slash && slash != parent) {
			*slash = 0;
			mkdir(parent, 0700);
		}
		free(parent);
		mkdir(dir, 0700);
	}
	if (asprintf(&tmp, "%s/" CACHE_NAME ".XXXXXX", dir) < 0 ||
	    asprintf(&final, "%s/" CACHE_NAME, dir) < 0) {
		free(tmp);
		return -ENOMEM;
	}
	fd = mkstemp(tmp);
	out = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!out) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		goto done;
	}
	fputs(CACHE_HEADER, out);
	for (size_t i = 0; i < ix->nfilelist && written < MAX_CACHE_FILES; i++, written++) {
		const struct sw_symsearch_file *f = &ix->filelist[i];

		write_file(out, ix->paths + f->path, f->size, f->mtime_ns, ix->entries + f->first,
			   f->count);
	}
	for (size_t i = 0; old && i < old->nfiles && written < MAX_CACHE_FILES; i++) {
		const struct cfile *f = &old->files[i];

		if (f->used)
			continue;
		write_file(out, f->path, f->size, f->mtime_ns, old->entries + f->first, f->count);
		written++;
	}
	if (fclose(out) != 0)
		r = -EIO;
	if (r == 0 && rename(tmp, final) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
done:
	free(tmp);
	free(final);
	return r;
}
