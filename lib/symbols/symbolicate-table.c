/*
 * The range table: every answer an image's symbolication gives, by address
 * range, in a cache file beside the DWARF index.  An answer (the frames of
 * an address) changes only where a unit, a subroutine, a line row, a line
 * sequence or a symbol starts or ends, so the symbolicator is asked once
 * at each of those addresses; neighbouring ranges that answer alike are
 * one.  A lookup is then a bucket, a short search and one record, where
 * the DWARF index's walk reads nine tables.  It holds no answer for any
 * one address, only what ranges of them share.
 *
 * The file: a header, then five arrays each starting on an 8-byte
 * boundary:
 *   lo[nranges]        u32, each range's start minus base, rising
 *   bucket[nbuckets]   u32, the range holding base + (i << shift)
 *   ranges[nranges+1]  the innermost frame of each range, the last one for
 *                      the addresses below base
 *   frames[nframes]    the outer frames (inlined calls' callers), runs of
 *                      them shared by every range that has them
 *   str[nstr]          the names and paths, NUL-terminated
 * The file is input like any other: the header must match exactly, and
 * every index a record holds is checked as it is used, so a damaged file
 * gives wrong answers at worst, never a crash.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "symbolicate-private.h"
#include "util/buf.h"
#include "util/publish.h"

#define RT_MAGIC   "SWRANGE\n"
#define RT_VERSION 2 /* 2: with split units (see IX_VERSION) */
#define RT_ORDER   0x01020304u
#define RT_NONE    UINT32_MAX
#define RT_MAX     ((uint64_t)1 << 34) /* bytes of a table file */
/* A bucket holds about this many ranges: their starts share a cache line. */
#define RT_PER_BUCKET 4
/* ranges.outer's high bit: the outermost frame's name is the symbol table's */
#define RT_OUTER_SYMBOL 0x80u
#define RT_OUTER_COUNT  0x7fu

struct rt_header {
	char magic[8];
	uint32_t version, order;
	uint32_t header_size, key_len;
	uint8_t key[SW_TABLE_MAX_KEY];
	uint32_t range_size, frame_size, shift, pad;
	uint64_t base, file_size;
	uint64_t nranges, nbuckets, nframes, nstr;
};

/* A range's innermost frame. */
struct rt_range {
	uint32_t function; /* into str, RT_NONE: none */
	uint32_t file;
	uint32_t line;  /* SW_FRAME_SYMBOL: the symbol's address minus base */
	uint32_t first; /* its outer frames: frames[first .. first + (nouter & RT_OUTER_COUNT)) */
	uint16_t column;
	uint8_t flags; /* SW_FRAME_* */
	uint8_t nouter;
};

/* An outer frame: the caller an inlined call was inlined into. */
struct rt_frame {
	uint32_t function, file, line, column;
};

struct sw_symbolicate_table {
	void *map;
	size_t size;
	uint64_t base;
	unsigned shift;
	size_t nranges, nbuckets, nframes, nstr;
	const uint32_t *lo, *bucket;
	const struct rt_range *ranges;
	const struct rt_frame *frames;
	const char *str;
};

/* --- reading --- */

void sw_table_free(struct sw_symbolicate_table *t)
{
	if (!t)
		return;
	munmap(t->map, t->size);
	free(t);
}

static bool header_ok(const struct rt_header *h, size_t size, const uint8_t *key, size_t key_len)
{
	return memcmp(h->magic, RT_MAGIC, 8) == 0 && h->version == RT_VERSION &&
	       h->order == RT_ORDER && h->header_size == sizeof(*h) &&
	       h->range_size == sizeof(struct rt_range) &&
	       h->frame_size == sizeof(struct rt_frame) && h->key_len == key_len &&
	       memcmp(h->key, key, key_len) == 0 && h->file_size == size && h->shift < 64 &&
	       h->nranges >= 1 && h->nranges < UINT32_MAX && h->nbuckets >= 1 &&
	       h->nframes < UINT32_MAX && h->nstr >= 1 && h->nstr < UINT32_MAX &&
	       h->nbuckets <= RT_MAX && h->nranges <= RT_MAX;
}

/* Where each array starts; false when the counts do not add up to the file's size. */
static bool layout(struct sw_symbolicate_table *t, const struct rt_header *h)
{
	uint64_t sizes[] = {h->nranges * 4, h->nbuckets * 4,
			    (h->nranges + 1) * sizeof(struct rt_range),
			    h->nframes * sizeof(struct rt_frame), h->nstr};
	const void *starts[5];
	if (!sw_map_parts(t->map, t->size, sizeof(*h), sizes, 5, starts))
		return false;
	t->lo = starts[0];
	t->bucket = starts[1];
	t->ranges = starts[2];
	t->frames = starts[3];
	t->str = starts[4];
	return t->str[h->nstr - 1] == '\0';
}

int sw_table_open(const char *path, const uint8_t *key, size_t key_len,
		  struct sw_symbolicate_table **ret)
{
	if (key_len > SW_TABLE_MAX_KEY)
		return -EINVAL;
	void *map;
	size_t size;
	int r = sw_map_whole(path, sizeof(struct rt_header), RT_MAX, &map, &size);
	if (r < 0)
		return r;
	const struct rt_header *h = map;
	struct sw_symbolicate_table *t = calloc(1, sizeof(*t));
	if (!t) {
		munmap(map, size);
		return -ENOMEM;
	}
	*t = (struct sw_symbolicate_table){.map = map, .size = size};
	if (!header_ok(h, size, key, key_len) || !layout(t, h)) {
		sw_table_free(t);
		return -EINVAL;
	}
	t->base = h->base;
	t->shift = h->shift;
	t->nranges = h->nranges;
	t->nbuckets = h->nbuckets;
	t->nframes = h->nframes;
	t->nstr = h->nstr;
	*ret = t;
	return 0;
}

/* Addresses a group takes through each step together: their loads overlap. */
#define GROUP 32

/* The last start at or below off among lo..hi (lo's taken as given), hi checked by the caller. */
static size_t scan_range(const struct sw_symbolicate_table *t, size_t lo, size_t hi, uint64_t off)
{
	if (hi - lo <= 16) {
		while (lo < hi && t->lo[lo + 1] <= off)
			lo++;
		return lo;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo + 1) / 2;
		if (t->lo[mid] <= off)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* The ranges bucket b may hold: its first and the next bucket's, checked like any input. */
static void bucket_span(const struct sw_symbolicate_table *t, uint64_t b, size_t *ret_lo,
			size_t *ret_hi)
{
	size_t last = t->nranges - 1;
	size_t lo = b < t->nbuckets ? t->bucket[b] : t->bucket[t->nbuckets - 1];
	size_t hi = b + 1 < t->nbuckets ? t->bucket[b + 1] : last;
	if (hi > last)
		hi = last;
	*ret_lo = lo > hi ? hi : lo;
	*ret_hi = hi;
}

/* The range holding addr: nranges (the record below base) when it is below base. */
static size_t find_range(const struct sw_symbolicate_table *t, uint64_t addr)
{
	if (addr < t->base)
		return t->nranges;
	uint64_t off = addr - t->base;
	if (off > UINT32_MAX)
		return t->nranges - 1;
	size_t lo, hi;
	bucket_span(t, off >> t->shift, &lo, &hi);
	return scan_range(t, lo, hi, off);
}

/*
 * A group of addresses at a time through each step of the search (bucket,
 * starts, record), the loads of one step fetched for the whole group
 * before the next step reads them, so that a run of addresses in no order
 * waits on memory about once a group and a step, not once an address and
 * a step.  The records, their outer frames and their own names are
 * fetched too.
 */
void sw_symbolicate_table_find(const struct sw_symbolicate_table *t, const uint64_t *addrs,
			       size_t n, uint32_t *ret)
{
	/* each address's offset and bucket; UINT32_MAX: outside the buckets, found whole */
	uint32_t off[GROUP], b[GROUP], lo[GROUP], hi[GROUP];
	for (size_t at = 0; at < n; at += GROUP) {
		size_t k = n - at < GROUP ? n - at : GROUP;
		for (size_t i = 0; i < k; i++) {
			uint64_t a = addrs[at + i], o = a - t->base;
			if (a < t->base || o > UINT32_MAX || (o >> t->shift) + 1 >= t->nbuckets) {
				b[i] = UINT32_MAX;
				ret[at + i] = (uint32_t)find_range(t, a);
				continue;
			}
			off[i] = (uint32_t)o;
			b[i] = (uint32_t)(o >> t->shift);
			__builtin_prefetch(&t->bucket[b[i]]);
		}
		for (size_t i = 0; i < k; i++) {
			if (b[i] == UINT32_MAX)
				continue;
			size_t l, h;
			bucket_span(t, b[i], &l, &h);
			lo[i] = (uint32_t)l;
			hi[i] = (uint32_t)h;
			__builtin_prefetch(&t->lo[lo[i]]);
			__builtin_prefetch(&t->ranges[lo[i]]);
		}
		for (size_t i = 0; i < k; i++) {
			if (b[i] == UINT32_MAX)
				continue;
			ret[at + i] = (uint32_t)scan_range(t, lo[i], hi[i], off[i]);
			const char *r = (const char *)&t->ranges[ret[at + i]];
			__builtin_prefetch(r);
			__builtin_prefetch(r + sizeof(struct rt_range) - 1);
		}
		for (size_t i = 0; i < k; i++) {
			const struct rt_range *r = &t->ranges[ret[at + i]];
			if (r->first < t->nframes)
				__builtin_prefetch(&t->frames[r->first]);
			if (r->function < t->nstr)
				__builtin_prefetch(t->str + r->function);
			if (r->file < t->nstr)
				__builtin_prefetch(t->str + r->file);
		}
	}
}

/* The names of the range's outer frames, which sw_symbolicate_table_find() could not fetch. */
void sw_symbolicate_table_prefetch(const struct sw_symbolicate_table *t, uint32_t range)
{
	if (range > t->nranges)
		return;
	const struct rt_range *r = &t->ranges[range];
	size_t n = r->nouter & RT_OUTER_COUNT;
	if (r->first > t->nframes || n > t->nframes - r->first)
		return;
	for (const struct rt_frame *f = t->frames + r->first; n--; f++) {
		if (f->function < t->nstr)
			__builtin_prefetch(t->str + f->function);
		if (f->file < t->nstr)
			__builtin_prefetch(t->str + f->file);
	}
}

static const char *str_at(const struct sw_symbolicate_table *t, uint32_t off)
{
	return off < t->nstr ? t->str + off : NULL;
}

size_t sw_table_frames(const struct sw_symbolicate_table *t, uint64_t addr, bool no_inlines,
		       struct sw_frame *frames)
{
	return sw_table_frames_at(t, (uint32_t)find_range(t, addr), addr, no_inlines, frames);
}

size_t sw_table_frames_at(const struct sw_symbolicate_table *t, uint32_t range, uint64_t addr,
			  bool no_inlines, struct sw_frame *frames)
{
	const struct rt_range *r = &t->ranges[range <= t->nranges ? range : t->nranges];
	struct sw_frame *f = &frames[0];
	*f = (struct sw_frame){
	    .function = str_at(t, r->function),
	    .file = str_at(t, r->file),
	    .line = r->line,
	    .column = r->column,
	    .flags = r->flags,
	};
	if (r->flags & SW_FRAME_SYMBOL) {
		f->symbol_addr = t->base + r->line;
		f->offset = addr - f->symbol_addr;
		f->line = 0;
	}
	size_t nouter = r->nouter & RT_OUTER_COUNT;
	if (nouter >= SW_SYMBOLICATE_MAX_FRAMES || r->first > t->nframes ||
	    nouter > t->nframes - r->first)
		nouter = 0;
	const struct rt_frame *o = t->frames + r->first;
	if (no_inlines) {
		if ((r->nouter & RT_OUTER_SYMBOL) && nouter)
			f->function = str_at(t, o[nouter - 1].function);
		f->flags &= ~(unsigned)SW_FRAME_INLINED;
		return 1;
	}
	for (size_t i = 0; i < nouter; i++) {
		frames[i + 1] = (struct sw_frame){
		    .function = str_at(t, o[i].function),
		    .file = str_at(t, o[i].file),
		    .line = o[i].line,
		    .column = o[i].column,
		    .flags = SW_FRAME_DEBUG_INFO | (i + 1 < nouter ? SW_FRAME_INLINED : 0),
		};
	}
	return nouter + 1;
}

/* --- building --- */

/* Open-addressing sets of strings and of runs of outer frames, by content. */
struct slot {
	uint64_t hash;
	uint32_t at, len; /* len + 1: 0 is an empty slot */
};

struct builder {
	struct sw_buf str;
	struct slot *strs;
	size_t nstrs, strs_cap;
	struct rt_frame *frames;
	size_t nframes, frames_cap;
	struct slot *runs;
	size_t nruns, runs_cap;
	uint32_t *lo;
	struct rt_range *ranges;
	size_t nranges, ranges_cap;
};

static uint64_t hash_bytes(const void *p, size_t n)
{
	uint64_t h = sw_fnv64(p, n, SW_FNV64_OFFSET ^ n);
	return h ^ (h >> 32);
}

/* Grows a set to hold one more; set_find then finds a free slot. */
static int set_grow(struct slot **set, size_t n, size_t *cap)
{
	if (2 * (n + 1) <= *cap)
		return 0;
	size_t ncap = *cap ? 2 * *cap : 1024;
	struct slot *s = calloc(ncap, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < *cap; i++) {
		if (!(*set)[i].len)
			continue;
		size_t h = (*set)[i].hash & (ncap - 1);
		while (s[h].len)
			h = (h + 1) & (ncap - 1);
		s[h] = (*set)[i];
	}
	free(*set);
	*set = s;
	*cap = ncap;
	return 0;
}

/* The offset of s in the strings, added once. */
static int put_str(struct builder *b, const char *s, uint32_t *ret)
{
	if (!s) {
		*ret = RT_NONE;
		return 0;
	}
	size_t len = strlen(s);
	uint64_t h = hash_bytes(s, len);
	if (len >= UINT32_MAX - 1 || set_grow(&b->strs, b->nstrs, &b->strs_cap) < 0)
		return -ENOMEM;
	size_t i = h & (b->strs_cap - 1);
	for (; b->strs[i].len; i = (i + 1) & (b->strs_cap - 1)) {
		const struct slot *sl = &b->strs[i];
		if (sl->hash == h && sl->len == len + 1 &&
		    memcmp(b->str.data + sl->at, s, len) == 0) {
			*ret = sl->at;
			return 0;
		}
	}
	if (b->str.len + len + 1 >= UINT32_MAX)
		return -E2BIG;
	uint32_t at = (uint32_t)b->str.len;
	if (sw_buf_append(&b->str, s, len + 1) < 0)
		return -ENOMEM;
	b->strs[i] = (struct slot){.hash = h, .at = at, .len = (uint32_t)len + 1};
	b->nstrs++;
	*ret = at;
	return 0;
}

/* Where the run of outer frames o[0..n) starts in frames, added once. */
static int put_run(struct builder *b, const struct rt_frame *o, size_t n, uint32_t *ret)
{
	if (n == 0) {
		*ret = 0;
		return 0;
	}
	uint64_t h = hash_bytes(o, n * sizeof(*o));
	if (set_grow(&b->runs, b->nruns, &b->runs_cap) < 0)
		return -ENOMEM;
	size_t i = h & (b->runs_cap - 1);
	for (; b->runs[i].len; i = (i + 1) & (b->runs_cap - 1)) {
		const struct slot *sl = &b->runs[i];
		if (sl->hash == h && sl->len == n + 1 &&
		    memcmp(b->frames + sl->at, o, n * sizeof(*o)) == 0) {
			*ret = sl->at;
			return 0;
		}
	}
	if (b->nframes + n >= UINT32_MAX)
		return -E2BIG;
	if (b->nframes + n > b->frames_cap) {
		size_t cap = b->frames_cap ? 2 * b->frames_cap : 4096;
		while (cap < b->nframes + n)
			cap *= 2;
		struct rt_frame *p = realloc(b->frames, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		b->frames = p;
		b->frames_cap = cap;
	}
	memcpy(b->frames + b->nframes, o, n * sizeof(*o));
	b->runs[i] = (struct slot){.hash = h, .at = (uint32_t)b->nframes, .len = (uint32_t)n + 1};
	b->nruns++;
	*ret = (uint32_t)b->nframes;
	b->nframes += n;
	return 0;
}

/* The record of an answer: its innermost frame, its outer frames put in the table. */
static int encode(struct builder *b, uint64_t base, const struct sw_frame *fr, size_t n,
		  bool outer_symbol, struct rt_range *ret)
{
	struct rt_frame outer[SW_SYMBOLICATE_MAX_FRAMES];
	int r = 0;
	if (n == 0 || n > SW_SYMBOLICATE_MAX_FRAMES || fr[0].column > UINT16_MAX ||
	    fr[0].flags > UINT8_MAX)
		return -EINVAL;
	*ret =
	    (struct rt_range){.line = fr[0].line,
			      .column = (uint16_t)fr[0].column,
			      .flags = (uint8_t)fr[0].flags,
			      .nouter = (uint8_t)((n - 1) | (outer_symbol ? RT_OUTER_SYMBOL : 0))};
	if (fr[0].flags & SW_FRAME_SYMBOL) {
		if (fr[0].symbol_addr < base || fr[0].symbol_addr - base > UINT32_MAX)
			return -E2BIG;
		ret->line = (uint32_t)(fr[0].symbol_addr - base);
	}
	r = put_str(b, fr[0].function, &ret->function);
	if (r >= 0)
		r = put_str(b, fr[0].file, &ret->file);
	for (size_t i = 1; i < n && r >= 0; i++) {
		outer[i - 1] = (struct rt_frame){.line = fr[i].line, .column = fr[i].column};
		r = put_str(b, fr[i].function, &outer[i - 1].function);
		if (r >= 0)
			r = put_str(b, fr[i].file, &outer[i - 1].file);
	}
	return r < 0 ? r : put_run(b, outer, n - 1, &ret->first);
}

static int push_range(struct builder *b, uint32_t lo, const struct rt_range *rec)
{
	if (b->nranges == b->ranges_cap) {
		size_t cap = b->ranges_cap ? 2 * b->ranges_cap : 4096;
		uint32_t *l = realloc(b->lo, cap * sizeof(*l));
		if (l)
			b->lo = l;
		struct rt_range *g = realloc(b->ranges, (cap + 1) * sizeof(*g));
		if (g)
			b->ranges = g;
		if (!l || !g)
			return -ENOMEM;
		b->ranges_cap = cap;
	}
	b->lo[b->nranges] = lo;
	b->ranges[b->nranges++] = *rec;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Sorts and drops repeats: the count left. */
static size_t sort_unique(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (k == 0 || v[i] != v[k - 1])
			v[k++] = v[i];
	return k;
}

/* Asks fn at addr and encodes what it says. */
static int answer_at(struct builder *b, uint64_t base, uint64_t addr, sw_table_answer_fn fn,
		     void *ctx, struct rt_range *ret)
{
	struct sw_frame fr[SW_SYMBOLICATE_MAX_FRAMES];
	bool outer_symbol = false;
	int n = fn(ctx, addr, fr, &outer_symbol);
	return n < 0 ? n : encode(b, base, fr, (size_t)n, outer_symbol, ret);
}

/* The shift that gives about RT_PER_BUCKET ranges a bucket over span bytes. */
static unsigned bucket_shift(uint64_t span, size_t nranges)
{
	unsigned shift = 0;
	uint64_t want = nranges / RT_PER_BUCKET + 1;
	while (shift < 63 && (span >> shift) + 1 > want)
		shift++;
	return shift;
}

static int write_file(struct builder *b, uint64_t base, const uint8_t *key, size_t key_len,
		      const char *path)
{
	uint64_t span = b->lo[b->nranges - 1];
	unsigned shift = bucket_shift(span, b->nranges);
	size_t nbuckets = (size_t)(span >> shift) + 1;
	uint32_t *bucket = malloc(nbuckets * sizeof(*bucket));
	if (!bucket)
		return -ENOMEM;
	for (size_t i = 0, r = 0; i < nbuckets; i++) {
		uint64_t at = (uint64_t)i << shift;
		while (r + 1 < b->nranges && b->lo[r + 1] <= at)
			r++;
		bucket[i] = (uint32_t)r;
	}
	if (b->str.len == 0 && sw_buf_putc(&b->str, '\0') < 0) {
		free(bucket);
		return -ENOMEM;
	}
	struct rt_header h = {.version = RT_VERSION,
			      .order = RT_ORDER,
			      .header_size = sizeof(h),
			      .key_len = (uint32_t)key_len,
			      .range_size = sizeof(struct rt_range),
			      .frame_size = sizeof(struct rt_frame),
			      .shift = shift,
			      .base = base,
			      .nranges = b->nranges,
			      .nbuckets = nbuckets,
			      .nframes = b->nframes,
			      .nstr = b->str.len};
	memcpy(h.magic, RT_MAGIC, 8);
	memcpy(h.key, key, key_len);
	struct sw_part parts[] = {
	    {&h, sizeof(h)},
	    {b->lo, b->nranges * sizeof(*b->lo)},
	    {bucket, nbuckets * sizeof(*bucket)},
	    {b->ranges, (b->nranges + 1) * sizeof(*b->ranges)},
	    {b->frames, b->nframes * sizeof(*b->frames)},
	    {b->str.data, b->str.len},
	};
	uint64_t size = sw_padded_size(parts, sizeof(parts) / sizeof(parts[0]));
	h.file_size = size;
	int r =
	    size > RT_MAX ? -E2BIG : sw_publish(path, parts, sizeof(parts) / sizeof(parts[0]), 1);
	free(bucket);
	return r;
}

int sw_table_write(uint64_t *bounds, size_t n, sw_table_answer_fn fn, void *ctx, const uint8_t *key,
		   size_t key_len, const char *path)
{
	if (n == 0 || key_len > SW_TABLE_MAX_KEY)
		return -EINVAL;
	n = sort_unique(bounds, n);
	uint64_t base = bounds[0];
	if (bounds[n - 1] - base > UINT32_MAX)
		return -E2BIG;
	struct builder b = {0};
	sw_buf_init(&b.str, UINT32_MAX);
	struct rt_range below = {0}, rec;
	int r = 0;
	for (size_t i = 0; i < n && r >= 0; i++) {
		r = answer_at(&b, base, bounds[i], fn, ctx, &rec);
		/* a range that answers as the one before it is part of it */
		if (r >= 0 &&
		    (b.nranges == 0 || memcmp(&rec, &b.ranges[b.nranges - 1], sizeof(rec))))
			r = push_range(&b, (uint32_t)(bounds[i] - base), &rec);
	}
	/* below base: nothing starts or ends there, so 0 answers for all of it */
	if (r >= 0 && base > 0)
		r = answer_at(&b, base, 0, fn, ctx, &below);
	if (r >= 0) {
		b.ranges[b.nranges] = below;
		r = write_file(&b, base, key, key_len, path);
	}
	sw_buf_finish(&b.str);
	free(b.strs);
	free(b.frames);
	free(b.runs);
	free(b.lo);
	free(b.ranges);
	return r;
}
