/*
 * Perf maps (perf-map.h): read whole lines as the file grows, each read's
 * text kept in a block of its own so that names handed out stay valid, the
 * entries sorted by start for a binary search.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perf-map.h"

struct entry {
	uint64_t start, end;
	uint32_t seq; /* the line's number in the file: a later line wins */
	const char *name;
};

struct block {
	struct block *next;
	char text[];
};

struct sw_perf_map {
	char *path;
	off_t consumed; /* bytes of whole lines read */
	uint32_t lines;
	struct entry *entries;
	size_t n, cap;
	struct block *blocks;
	int64_t not_before;
};

/* How far left of an address a lookup looks for an older, longer line covering it. */
#define OVERLAP_SCAN 64

int sw_perf_map_new(const char *path, int64_t not_before, struct sw_perf_map **ret)
{
	struct sw_perf_map *m = calloc(1, sizeof(*m));
	if (!m || !(m->path = strdup(path))) {
		free(m);
		return -ENOMEM;
	}
	m->not_before = not_before;
	*ret = m;
	return 0;
}

void sw_perf_map_free(struct sw_perf_map *m)
{
	if (!m)
		return;
	while (m->blocks) {
		struct block *next = m->blocks->next;
		free(m->blocks);
		m->blocks = next;
	}
	free(m->entries);
	free(m->path);
	free(m);
}

const char *sw_perf_map_path(const struct sw_perf_map *m)
{
	return m->path;
}

/* A hexadecimal number with an optional 0x, then blanks; NULL when there is none. */
static char *hex_field(char *p, uint64_t *ret)
{
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(p, &end, 16);
	if (end == p || errno || (*end != ' ' && *end != '\t'))
		return NULL;
	*ret = v;
	while (*end == ' ' || *end == '\t')
		end++;
	return end;
}

static bool add_line(struct sw_perf_map *m, char *line)
{
	uint64_t start, size;
	char *p = hex_field(line, &start);
	if (p)
		p = hex_field(p, &size);
	m->lines++;
	if (!p || !*p || !size || start + size < start)
		return true; /* not a line of a perf map: skipped */
	size_t len = strlen(p);
	if (len && p[len - 1] == '\r')
		p[len - 1] = '\0';
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 1024;
		struct entry *e = realloc(m->entries, cap * sizeof(*e));
		if (!e)
			return false;
		m->entries = e;
		m->cap = cap;
	}
	m->entries[m->n++] = (struct entry){start, start + size, m->lines, p};
	return true;
}

static int by_start(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Reads the whole lines the file gained since the last read. */
static void read_more(struct sw_perf_map *m)
{
	int fd = open(m->path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (int64_t)st.st_mtime < m->not_before) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if (st.st_size < m->consumed) {
		/* rewritten (the pid's next process): what it said before is void */
		m->n = 0;
		m->lines = 0;
		m->consumed = 0;
	}
	size_t want = (size_t)(st.st_size - m->consumed);
	struct block *b = want ? malloc(sizeof(*b) + want + 1) : NULL;
	size_t got = 0;
	while (b && got < want) {
		ssize_t r = pread(fd, b->text + got, want - got, m->consumed + (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	/* whole lines only: the JIT may be writing the next one */
	while (got && b->text[got - 1] != '\n')
		got--;
	if (!b || !got) {
		free(b);
		return;
	}
	b->text[got] = '\0';
	b->next = m->blocks;
	m->blocks = b;
	m->consumed += (off_t)got;
	size_t before = m->n;
	for (char *line = b->text; *line;) {
		char *nl = strchr(line, '\n');
		*nl = '\0';
		if (!add_line(m, line))
			break; /* out of memory: what was read still names */
		line = nl + 1;
	}
	if (m->n > before)
		qsort(m->entries, m->n, sizeof(*m->entries), by_start);
}

/* The latest line covering addr, or NULL. */
static const struct entry *find(const struct sw_perf_map *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n; /* the first entry starting past addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->entries[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	const struct entry *best = NULL;
	for (size_t i = lo, k = 0; i-- > 0 && k < OVERLAP_SCAN; k++) {
		const struct entry *e = &m->entries[i];
		if (addr < e->end && (!best || e->seq > best->seq))
			best = e;
	}
	return best;
}

const char *sw_perf_map_lookup(struct sw_perf_map *m, uint64_t addr, uint64_t *ret_start)
{
	const struct entry *e = find(m, addr);
	if (!e) {
		read_more(m);
		e = find(m, addr);
	}
	if (!e)
		return NULL;
	*ret_start = e->start;
	return e->name;
}
