/*
 * --format pprof: a gzipped profile.proto (github.com/google/pprof,
 * proto/profile.proto), which `go tool pprof`, Grafana Pyroscope and
 * others read.  The protobuf is written by hand: it only needs varints and
 * length-delimited fields.
 *
 * One profile holds every stall.  A sample is a distinct stack of a stall
 * as the options rewrite it (no tree is built: pprof's readers make their
 * own): values [samples, wall ns] (only [samples] when a MetricKit tree
 * has no time), labels "stall" ("run1#3") and "thread".  The samples of a
 * stack the options leave whole come together, stall by stall, after the
 * others (which come in the order their stacks were first sampled).  A
 * location is one address: a frame and the frames inlined into it become
 * the lines of one location, innermost first as the format wants.
 * Mappings are the images, with their build ids (UUID or GNU build-id in
 * hex).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "render.h"

#if SW_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif
#if SW_HAVE_ZLIB
#include <zlib.h>
#endif

#define NONE UINT32_MAX

/* struct loc_code's len for a frame inlined into its caller: no location alone */
#define LOC_INLINED 0x80

/* profile.proto field numbers */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUE_TYPE_TYPE = 1,
	VALUE_TYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1,
	SAMPLE_VALUE = 2,
	SAMPLE_LABEL = 3,
	LABEL_KEY = 1,
	LABEL_STR = 2,
	MAPPING_ID = 1,
	MAPPING_MEMORY_START = 2,
	MAPPING_MEMORY_LIMIT = 3,
	MAPPING_FILENAME = 5,
	MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7,
	MAPPING_HAS_FILENAMES = 8,
	MAPPING_HAS_LINE_NUMBERS = 9,
	MAPPING_HAS_INLINE_FRAMES = 10,
	LOCATION_ID = 1,
	LOCATION_MAPPING_ID = 2,
	LOCATION_ADDRESS = 3,
	LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1,
	LINE_LINE = 2,
	FUNCTION_ID = 1,
	FUNCTION_NAME = 2,
	FUNCTION_SYSTEM_NAME = 3,
	FUNCTION_FILENAME = 4,
};

static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v > 0x7f) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Writes v at p, which has room; returns the end. */
static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v > 0x7f) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static int pb_varint(struct sw_buf *b, uint64_t v)
{
	uint8_t tmp[10];
	return sw_buf_append(b, tmp, (size_t)(put_varint(tmp, v) - tmp));
}

static int pb_uint(struct sw_buf *b, unsigned field, uint64_t v)
{
	int r = pb_varint(b, (uint64_t)field << 3);
	return r < 0 ? r : pb_varint(b, v);
}

static int pb_bytes(struct sw_buf *b, unsigned field, const void *data, size_t len)
{
	int r = pb_varint(b, (uint64_t)field << 3 | 2);
	if (r >= 0)
		r = pb_varint(b, len);
	return r < 0 ? r : sw_buf_append(b, data, len);
}

/* Appends msg as field of b and empties msg for the next use. */
static int pb_message(struct sw_buf *b, unsigned field, struct sw_buf *msg)
{
	int r = pb_bytes(b, field, msg->data, msg->len);
	sw_buf_reset(msg);
	return r;
}

#if SW_HAVE_ZLIB
/*
 * The gzip stream, with ISA-L's igzip where the build found it: its level 1
 * compresses a profile (location ids, mostly) as small as zlib's fastest
 * level, in a seventh of the time, where zlib took 40% of the whole report.
 */
struct gzip {
#if SW_HAVE_ISAL
	struct isal_zstream s;
	uint8_t *level_buf;
#else
	z_stream s;
#endif
	bool open;
};

static int gzip_open(struct gzip *g)
{
#if SW_HAVE_ISAL
	g->level_buf = malloc(ISAL_DEF_LVL1_DEFAULT);
	if (!g->level_buf)
		return -ENOMEM;
	isal_deflate_init(&g->s);
	g->s.gzip_flag = IGZIP_GZIP;
	g->s.level = 1;
	g->s.level_buf = g->level_buf;
	g->s.level_buf_size = ISAL_DEF_LVL1_DEFAULT;
#else
	if (deflateInit2(&g->s, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
#endif
	g->open = true;
	return 0;
}

/* Compresses len bytes of in onto out; last ends the stream. */
static int gzip_write(struct gzip *g, const uint8_t *in, size_t len, bool last, struct sw_buf *out)
{
	enum { CHUNK = 1 << 16 };
	if (len > UINT32_MAX)
		return -E2BIG;
	g->s.next_in = (uint8_t *)(in ? in : (const uint8_t *)"");
	g->s.avail_in = (uint32_t)len;
#if SW_HAVE_ISAL
	g->s.end_of_stream = last;
	g->s.flush = NO_FLUSH;
#endif
	for (;;) {
		int r = sw_buf_reserve(out, CHUNK);
		if (r < 0)
			return r;
		g->s.next_out = out->data + out->len;
		g->s.avail_out = CHUNK;
#if SW_HAVE_ISAL
		bool failed = isal_deflate(&g->s) != COMP_OK;
		bool ended = g->s.internal_state.state == ZSTATE_END;
#else
		int z = deflate(&g->s, last ? Z_FINISH : Z_NO_FLUSH);
		bool failed = z == Z_STREAM_ERROR, ended = z == Z_STREAM_END;
#endif
		out->len += CHUNK - g->s.avail_out;
		if (failed)
			return -EIO;
		if (last ? ended : g->s.avail_in == 0 && g->s.avail_out != 0)
			return 0;
	}
}

static void gzip_close(struct gzip *g)
{
#if SW_HAVE_ISAL
	free(g->level_buf);
#else
	if (g->open)
		deflateEnd(&g->s);
#endif
	g->open = false;
}
#endif

struct pp {
	struct sw_profile *p;
	const struct sw_render_options *o;
	struct sw_buf out, msg, sub;
	/*
	 * The labels of each thread of each stall, encoded by its first
	 * sample: label i is labels[label_off[i], label_off[i + 1]).
	 */
	struct sw_buf labels;
	uint32_t *label_off;
	size_t nlabels, label_off_cap;
	bool labels_made;
	/*
	 * The samples of whole stacks, put off to be written together by
	 * stack once every stall has been read: a stack's samples then follow
	 * one another, and the compressor finds each one's location ids in
	 * the one before (on a large recording, a fifth of the output in a
	 * quarter of the time compressing).
	 */
	struct put_off {
		uint32_t stack, label;
		uint64_t count, weight;
	} * put_off;
	size_t nput_off, put_off_cap; /* at most MAX_PUT_OFF: the others are written at once */
	/* the string table */
	const char **strings;
	size_t nstrings, strings_cap;
	uint32_t *string_table;
	size_t string_table_cap;
	/* functions by profile frame id (id + 1, 0 none) */
	uint32_t *func_of_frame;
	uint64_t nfuncs;
	/* locations: runs of frame ids, keyed by hash */
	uint32_t *loc_pool;
	size_t loc_pool_len, loc_pool_cap;
	struct loc {
		uint64_t hash;
		uint32_t start, len;
	} * locs;
	size_t nlocs, locs_cap;
	uint32_t *loc_table;
	size_t loc_table_cap;
	/* a sample's locations, root first (sample()) */
	uint32_t *closed;
	/* per profile frame: whether it is inlined */
	uint8_t *inlined;
	/*
	 * Per profile frame, its location alone as a sample writes it: the
	 * varint of its id, and its length (0 until known, LOC_INLINED for an
	 * inlined frame, whose lone location is looked up each time: only a
	 * partial stack starts with one).  Eight bytes, so that a sample
	 * copies one whole and moves on by len.
	 */
	struct loc_code {
		uint8_t varint[7];
		uint8_t len;
	} * loc_code;
	/*
	 * Per whole stack of the profile (by id), its location ids as a sample
	 * writes them, once a sample has: a stack is in several stalls, and
	 * copying its ids whole reads a third of what its frames and their
	 * codes are.  len 0: not yet.
	 */
	struct stack_ids {
		uint32_t off, len;
	} * stack_ids;
	size_t nstack_ids;
	struct sw_buf ids; /* where stack_ids point */
	uint8_t *scratch;  /* a sample's ids being made */
	bool counts;
#if SW_HAVE_ZLIB
	/* out is compressed into gz as it fills: the whole profile is never held uncompressed */
	struct gzip z;
	struct sw_buf *gz;
#endif
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

/* The index of s in the string table, added when new ("" is 0). */
static int64_t str_index(struct pp *c, const char *s)
{
	if (!s || !s[0])
		return 0;
	if (c->nstrings * 2 >= c->string_table_cap) {
		size_t cap = c->string_table_cap ? c->string_table_cap * 2 : 256;
		uint32_t *t = calloc(cap, sizeof(*t));
		if (!t)
			return -ENOMEM;
		for (size_t i = 1; i < c->nstrings; i++) {
			size_t j = hash_str(c->strings[i]) & (cap - 1);
			while (t[j])
				j = (j + 1) & (cap - 1);
			t[j] = (uint32_t)i;
		}
		free(c->string_table);
		c->string_table = t;
		c->string_table_cap = cap;
	}
	size_t j = hash_str(s) & (c->string_table_cap - 1);
	while (c->string_table[j]) {
		if (strcmp(c->strings[c->string_table[j]], s) == 0)
			return c->string_table[j];
		j = (j + 1) & (c->string_table_cap - 1);
	}
	if (c->nstrings == c->strings_cap) {
		size_t cap = c->strings_cap * 2;
		const char **n = realloc(c->strings, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		c->strings = n;
		c->strings_cap = cap;
	}
	char *copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	c->strings[c->nstrings] = copy;
	c->string_table[j] = (uint32_t)c->nstrings;
	return (int64_t)c->nstrings++;
}

static int str_field(struct pp *c, struct sw_buf *b, unsigned field, const char *s)
{
	int64_t i = str_index(c, s);
	return i < 0 ? (int)i : pb_uint(b, field, (uint64_t)i);
}

/* The function of a frame, written to the profile the first time. */
static int function_id(struct pp *c, uint32_t frame, uint64_t *ret)
{
	if (c->func_of_frame[frame]) {
		*ret = c->func_of_frame[frame];
		return 0;
	}
	const struct sw_tree_frame *f = sw_profile_get_frame(c->p, frame);
	char scratch[32];
	uint64_t id = ++c->nfuncs;
	int r = pb_uint(&c->sub, FUNCTION_ID, id);
	if (r >= 0)
		r = str_field(
		    c, &c->sub, FUNCTION_NAME,
		    sw_tree_frame_name(c->p, f, c->o->tree.full_names, scratch, sizeof(scratch)));
	/*
	 * The system name is the linkage name, and none without one: pprof
	 * simplifies a name equal to its system name as demangled C++, and
	 * "<unwinding stopped>" lost all it had between its angle brackets.
	 */
	if (r >= 0 && f->linkage)
		r = str_field(c, &c->sub, FUNCTION_SYSTEM_NAME, f->linkage);
	if (r >= 0)
		r = str_field(c, &c->sub, FUNCTION_FILENAME, f->file);
	if (r >= 0)
		r = pb_message(&c->out, PROFILE_FUNCTION, &c->sub);
	if (r < 0)
		return r;
	c->func_of_frame[frame] = (uint32_t)id;
	*ret = id;
	return 0;
}

static int write_location(struct pp *c, uint64_t id, const uint32_t *frames, size_t n)
{
	const struct sw_tree_frame *inner = sw_profile_get_frame(c->p, frames[n - 1]);
	int r = pb_uint(&c->msg, LOCATION_ID, id);
	if (r >= 0 && inner->image)
		r = pb_uint(&c->msg, LOCATION_MAPPING_ID, inner->image);
	if (r >= 0)
		r = pb_uint(&c->msg, LOCATION_ADDRESS, inner->address);
	/* innermost first: the last line is the function the others were inlined into */
	for (size_t k = n; k-- > 0 && r >= 0;) {
		uint64_t fid;
		r = function_id(c, frames[k], &fid);
		if (r >= 0)
			r = pb_uint(&c->sub, LINE_FUNCTION_ID, fid);
		const struct sw_tree_frame *f = sw_profile_get_frame(c->p, frames[k]);
		if (r >= 0 && f->line)
			r = pb_uint(&c->sub, LINE_LINE, f->line);
		if (r >= 0)
			r = pb_message(&c->msg, LOCATION_LINE, &c->sub);
	}
	return r < 0 ? r : pb_message(&c->out, PROFILE_LOCATION, &c->msg);
}

/* The location id of frames[0..n) (a frame and those inlined into it). */
static int location_id(struct pp *c, const uint32_t *frames, size_t n, uint64_t *ret)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ frames[i]) * 0x100000001b3ull;
	if (c->nlocs * 2 >= c->loc_table_cap) {
		size_t cap = c->loc_table_cap ? c->loc_table_cap * 2 : 256;
		uint32_t *t = calloc(cap, sizeof(*t));
		if (!t)
			return -ENOMEM;
		for (size_t i = 0; i < c->nlocs; i++) {
			size_t j = c->locs[i].hash & (cap - 1);
			while (t[j])
				j = (j + 1) & (cap - 1);
			t[j] = (uint32_t)i + 1;
		}
		free(c->loc_table);
		c->loc_table = t;
		c->loc_table_cap = cap;
	}
	size_t j = h & (c->loc_table_cap - 1);
	while (c->loc_table[j]) {
		const struct loc *l = &c->locs[c->loc_table[j] - 1];
		if (l->hash == h && l->len == n &&
		    memcmp(c->loc_pool + l->start, frames, n * sizeof(*frames)) == 0) {
			*ret = c->loc_table[j];
			return 0;
		}
		j = (j + 1) & (c->loc_table_cap - 1);
	}
	if (c->nlocs == c->locs_cap) {
		size_t cap = c->locs_cap ? c->locs_cap * 2 : 256;
		struct loc *nl = realloc(c->locs, cap * sizeof(*nl));
		if (!nl)
			return -ENOMEM;
		c->locs = nl;
		c->locs_cap = cap;
	}
	if (c->loc_pool_len + n > c->loc_pool_cap) {
		size_t cap = c->loc_pool_cap ? c->loc_pool_cap : 1024;
		while (cap < c->loc_pool_len + n)
			cap *= 2;
		uint32_t *np = realloc(c->loc_pool, cap * sizeof(*np));
		if (!np)
			return -ENOMEM;
		c->loc_pool = np;
		c->loc_pool_cap = cap;
	}
	memcpy(c->loc_pool + c->loc_pool_len, frames, n * sizeof(*frames));
	c->locs[c->nlocs] = (struct loc){h, (uint32_t)c->loc_pool_len, (uint32_t)n};
	c->loc_pool_len += n;
	c->loc_table[j] = (uint32_t)++c->nlocs;
	*ret = c->nlocs;
	return write_location(c, c->nlocs, frames, n);
}

static int label(struct pp *c, const char *key, const char *value)
{
	int r = str_field(c, &c->sub, LABEL_KEY, key);
	if (r >= 0)
		r = str_field(c, &c->sub, LABEL_STR, value);
	return r < 0 ? r : pb_message(&c->msg, SAMPLE_LABEL, &c->sub);
}

/*
 * The location of frames[0..n), root first: a frame and the frames inlined
 * into it (at most 64 of them count), found once for a frame alone.
 */
static int group_location(struct pp *c, const uint32_t *frames, size_t n, uint32_t *ret)
{
	size_t g = n < 64 ? n : 64;
	struct loc_code *code = g == 1 ? &c->loc_code[frames[0]] : NULL;
	uint64_t lid = 0;
	if (code && code->len && !(code->len & LOC_INLINED)) {
		for (unsigned k = 0, shift = 0; k < code->len; k++, shift += 7)
			lid |= (uint64_t)(code->varint[k] & 0x7f) << shift;
		*ret = (uint32_t)lid;
		return 0;
	}
	int r = location_id(c, frames, g, &lid);
	if (code && !code->len && r >= 0)
		code->len = (uint8_t)(put_varint(code->varint, lid) - code->varint);
	*ret = (uint32_t)lid;
	return r;
}

/* The ids of a path's stack, when a sample of it wrote them; else NULL. */
static const struct stack_ids *known_ids(const struct pp *c, const struct sw_tree_path *path)
{
	if (path->stack >= c->nstack_ids || !c->stack_ids[path->stack].len)
		return NULL;
	return &c->stack_ids[path->stack];
}

/*
 * The location ids of a path, leaf first, as a sample writes them, into
 * c->scratch; returns their length, or -errno.  Locations first named here
 * are written to the profile.
 */
static long make_ids(struct pp *c, const struct sw_tree_path *path)
{
	const uint32_t *f = path->path;
	uint8_t *q = c->scratch;
	/*
	 * Mostly, every frame is a location alone already written: its code is
	 * copied whole, and the next goes after its length.
	 */
	unsigned bad = 0;
	for (uint32_t d = path->depth; d-- > 0;) {
		const struct loc_code *code = &c->loc_code[f[d]];
		memcpy(q, code, sizeof(*code));
		bad |= code->len - 1u >= 7u; /* not yet, or inlined */
		q += code->len & 7;
	}
	if (!bad)
		return q - c->scratch;
	/* otherwise by group, a frame and the frames inlined into it */
	uint32_t *locs = c->closed, n = 0, g = 0;
	int r = 0;
	for (uint32_t d = 1; d <= path->depth && r >= 0; d++)
		if (d == path->depth || !c->inlined[f[d]]) {
			r = group_location(c, f + g, d - g, &locs[n++]);
			g = d;
		}
	if (r < 0)
		return r;
	q = c->scratch;
	for (uint32_t k = n; k-- > 0;)
		q = put_varint(q, locs[k]);
	return q - c->scratch;
}

/* The most bytes of ids kept: past them, a stack's are made each time. */
#define MAX_KEPT_IDS ((size_t)64 << 20)

/* Keeps the ids of a whole stack that c->scratch holds, while there is room. */
static int keep_ids(struct pp *c, uint32_t stack, size_t len)
{
	if (c->ids.len + len > MAX_KEPT_IDS)
		return 0;
	if (stack >= c->nstack_ids) {
		size_t n = sw_profile_dense_stacks(c->p);
		if (stack >= n)
			return 0; /* a stack of the trie */
		struct stack_ids *t = realloc(c->stack_ids, n * sizeof(*t));
		if (!t)
			return -ENOMEM;
		memset(t + c->nstack_ids, 0, (n - c->nstack_ids) * sizeof(*t));
		c->stack_ids = t;
		c->nstack_ids = n;
	}
	c->stack_ids[stack] = (struct stack_ids){(uint32_t)c->ids.len, (uint32_t)len};
	return sw_buf_append(&c->ids, c->scratch, len);
}

/* Writes a sample: its location ids (leaf first), values and labels. */
static int write_sample(struct pp *c, const uint8_t *ids, size_t locs_len, uint64_t count,
			uint64_t weight, uint32_t label)
{
	const uint8_t *labels = c->labels.data + c->label_off[label];
	size_t labels_len = c->label_off[label + 1] - c->label_off[label];
	/*
	 * Written straight to the output, its lengths counted first: a sample
	 * is most of the profile, and building it in nested buffers copied it
	 * twice.  Samples go after the locations they name: order is free in
	 * protobuf.
	 */
	size_t values_len = varint_len(count) + (c->counts ? 0 : varint_len(weight));
	size_t len = 1 + varint_len(locs_len) + locs_len + 1 + varint_len(values_len) + values_len +
		     labels_len;
	int r = sw_buf_reserve(&c->out, 1 + varint_len(len) + len);
	if (r < 0)
		return r;
	uint8_t *q = c->out.data + c->out.len;
	*q++ = PROFILE_SAMPLE << 3 | 2;
	q = put_varint(q, len);
	*q++ = SAMPLE_LOCATION_ID << 3 | 2;
	q = put_varint(q, locs_len);
	memcpy(q, ids, locs_len);
	q += locs_len;
	*q++ = SAMPLE_VALUE << 3 | 2;
	q = put_varint(q, values_len);
	q = put_varint(q, count);
	if (!c->counts)
		q = put_varint(q, weight);
	memcpy(q, labels, labels_len);
	c->out.len = (size_t)(q + labels_len - c->out.data);
	return 0;
}

/* The labels of the thread's samples, made by its first: their strings join the table here. */
static int make_labels(struct pp *c, const char *stall, const char *thread)
{
	if (c->labels_made)
		return 0;
	if (c->nlabels + 2 > c->label_off_cap) {
		size_t cap = c->label_off_cap ? c->label_off_cap * 2 : 64;
		uint32_t *n = realloc(c->label_off, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		c->label_off = n;
		c->label_off_cap = cap;
	}
	if (!c->nlabels)
		c->label_off[0] = 0;
	int r = label(c, "stall", stall);
	if (r >= 0 && thread)
		r = label(c, "thread", thread);
	if (r >= 0 && c->labels.len + c->msg.len > UINT32_MAX)
		r = -E2BIG;
	if (r >= 0)
		r = sw_buf_append(&c->labels, c->msg.data, c->msg.len);
	sw_buf_reset(&c->msg);
	if (r < 0)
		return r;
	c->label_off[++c->nlabels] = (uint32_t)c->labels.len;
	c->labels_made = true;
	return 0;
}

/* The most samples put off (64 MB of them): a bound on what grouping costs. */
#define MAX_PUT_OFF (((size_t)64 << 20) / sizeof(struct put_off))

/*
 * One sample for a path: its locations, each a frame and the frames inlined
 * into it (the frames below it that are inlined), leaf first.  A whole
 * stack's sample is put off (grouped_samples()); the others are written.
 */
static int sample(struct pp *c, const struct sw_tree_path *path, const char *stall,
		  const char *thread)
{
	const struct stack_ids *known = known_ids(c, path);
	const uint8_t *ids = NULL;
	size_t locs_len = 0;
	int r = 0;
	if (known) {
		ids = c->ids.data + known->off;
		locs_len = known->len;
	} else {
		long n = make_ids(c, path);
		if (n < 0)
			return (int)n;
		if (path->stack && n && (r = keep_ids(c, path->stack, (size_t)n)) < 0)
			return r;
		ids = c->scratch;
		locs_len = (size_t)n;
	}
	if ((r = make_labels(c, stall, thread)) < 0)
		return r;
	uint32_t label = (uint32_t)c->nlabels - 1;
	/* only a stack whose ids are kept can wait, while there is room */
	if (!known_ids(c, path) || c->nput_off == MAX_PUT_OFF)
		return write_sample(c, ids, locs_len, path->count, path->weight, label);
	if (c->nput_off == c->put_off_cap) {
		size_t cap = c->put_off_cap ? c->put_off_cap * 2 : 4096;
		struct put_off *n = realloc(c->put_off, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		c->put_off = n;
		c->put_off_cap = cap;
	}
	c->put_off[c->nput_off++] = (struct put_off){path->stack, label, path->count, path->weight};
	return 0;
}

#if SW_HAVE_ZLIB
/*
 * Compresses what c->out holds onto the gzip output and empties it; last
 * ends the stream.  A megabyte of output goes to the drain, if there is one:
 * the compressed profile (95 MB of a million samples) is not held whole.
 */
static int deflate_out(struct pp *c, bool last)
{
	int r = gzip_write(&c->z, c->out.data, c->out.len, last, c->gz);
	sw_buf_reset(&c->out);
	if (r >= 0 && c->o->drain && (last || c->gz->len >= ((size_t)1 << 20)))
		r = c->o->drain(c->o->drain_ctx, c->gz);
	return r;
}
#endif

/* Past a megabyte of profile, compresses it. */
static int spill(struct pp *c)
{
#if SW_HAVE_ZLIB
	return c->out.len < ((size_t)1 << 20) ? 0 : deflate_out(c, false);
#else
	(void)c;
	return 0;
#endif
}

static int stall_samples(struct pp *c, struct sw_tree_stall *s)
{
	struct sw_tree_paths *paths[64];
	long threads[64];
	int n = sw_render_stall_paths(c->p, s, &c->o->tree, paths, threads, 64);
	if (n < 0)
		return n;
	char lbl[96], thname[96];
	sw_tree_stall_label(s, true, lbl, sizeof(lbl));
	int r = 0;
	for (int k = 0; k < n && r >= 0; k++) {
		c->labels_made = false;
		const char *thread = "main";
		if (threads[k] >= 0 && !s->threads[threads[k]].main) {
			const struct sw_tree_thread *th = &s->threads[threads[k]];
			if (th->name[0])
				thread = th->name;
			else {
				snprintf(thname, sizeof(thname), "%llu",
					 (unsigned long long)th->id);
				thread = thname;
			}
		}
		const struct sw_tree_paths *ps = paths[k];
		for (size_t i = 0; i < ps->n && r >= 0; i++) {
			/*
			 * Two paths on, where its ids are kept; one on, when it has
			 * none yet, its frames' codes.
			 */
			if (i + 2 < ps->n) {
				const struct sw_tree_path *ahead = &ps->paths[i + 2];
				if (ahead->stack < c->nstack_ids)
					__builtin_prefetch(&c->stack_ids[ahead->stack]);
				else
					for (uint32_t d = 0; d < ahead->depth; d += 16)
						__builtin_prefetch(ahead->path + d);
			}
			if (i + 1 < ps->n && !known_ids(c, &ps->paths[i + 1])) {
				const struct sw_tree_path *next = &ps->paths[i + 1];
				for (uint32_t d = 0; d < next->depth; d++)
					__builtin_prefetch(&c->loc_code[next->path[d]]);
			}
			if (ps->paths[i].depth > SW_TREE_MAX_DEPTH) {
				r = -E2BIG;
				break;
			}
			if ((r = sample(c, &ps->paths[i], lbl, thread)) >= 0)
				r = spill(c);
		}
	}
	for (int k = 0; k < n; k++)
		sw_tree_paths_free(paths[k]);
	return r;
}

/*
 * Writes the samples put off, grouped by stack (stacks in the order of
 * their ids, each one's samples in the order of their stalls and
 * threads): one counting sort by stack.
 */
static int grouped_samples(struct pp *c)
{
	size_t nstacks = c->nstack_ids;
	if (!c->nput_off)
		return 0;
	uint32_t *start = calloc(nstacks + 1, sizeof(*start));
	uint32_t *order = malloc(c->nput_off * sizeof(*order));
	if (!start || !order) {
		free(start);
		free(order);
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->nput_off; i++)
		start[c->put_off[i].stack + 1]++;
	for (size_t s = 0; s < nstacks; s++)
		start[s + 1] += start[s];
	for (size_t i = 0; i < c->nput_off; i++)
		order[start[c->put_off[i].stack]++] = (uint32_t)i;
	/* every stack put off has its ids kept (sample()) */
	int r = 0;
	for (size_t k = 0; k < c->nput_off && r >= 0; k++) {
		if (k + 8 < c->nput_off)
			__builtin_prefetch(&c->put_off[order[k + 8]]);
		const struct put_off *po = &c->put_off[order[k]];
		const struct stack_ids *ids = &c->stack_ids[po->stack];
		r = write_sample(c, c->ids.data + ids->off, ids->len, po->count, po->weight,
				 po->label);
		if (r >= 0)
			r = spill(c);
	}
	free(start);
	free(order);
	return r;
}

static int value_type(struct pp *c, unsigned field, const char *type, const char *unit)
{
	int r = str_field(c, &c->msg, VALUE_TYPE_TYPE, type);
	if (r >= 0)
		r = str_field(c, &c->msg, VALUE_TYPE_UNIT, unit);
	return r < 0 ? r : pb_message(&c->out, field, &c->msg);
}

static int mappings(struct pp *c)
{
	int r = 0;
	for (size_t i = 0; i < sw_profile_nimages(c->p) && r >= 0; i++) {
		const struct sw_tree_image *img = sw_profile_get_image(c->p, (uint32_t)i + 1);
		char hex[2 * sizeof(img->id) + 1];
		for (uint32_t k = 0; k < img->id_len; k++)
			snprintf(hex + 2 * k, 3, "%02x", img->id[k]);
		hex[2 * img->id_len] = 0;
		r = pb_uint(&c->msg, MAPPING_ID, i + 1);
		if (r >= 0)
			r = pb_uint(&c->msg, MAPPING_MEMORY_START, img->load_address);
		if (r >= 0 && img->text_size)
			r = pb_uint(&c->msg, MAPPING_MEMORY_LIMIT,
				    img->load_address + img->text_size);
		if (r >= 0)
			r = str_field(c, &c->msg, MAPPING_FILENAME,
				      img->path ? img->path : img->name);
		if (r >= 0)
			r = str_field(c, &c->msg, MAPPING_BUILD_ID, hex);
		for (unsigned f = MAPPING_HAS_FUNCTIONS; f <= MAPPING_HAS_INLINE_FRAMES && r >= 0;
		     f++)
			r = pb_uint(&c->msg, f, 1);
		if (r >= 0)
			r = pb_message(&c->out, PROFILE_MAPPING, &c->msg);
	}
	return r;
}

static int header(struct pp *c)
{
	uint64_t duration = 0, start = 0;
	for (size_t i = 0; i < sw_profile_nstalls(c->p); i++) {
		const struct sw_tree_stall *s = sw_profile_stall(c->p, i);
		c->counts |= s->info.counts_only;
		duration += s->info.duration_ns;
		if (s->info.start_wall_ns && (!start || s->info.start_wall_ns < start))
			start = s->info.start_wall_ns;
	}
	int r = value_type(c, PROFILE_SAMPLE_TYPE, "samples", "count");
	if (r >= 0 && !c->counts)
		r = value_type(c, PROFILE_SAMPLE_TYPE, "wall", "nanoseconds");
	if (r >= 0 && !c->counts)
		r = value_type(c, PROFILE_PERIOD_TYPE, "wall", "nanoseconds");
	if (r >= 0 && start)
		r = pb_uint(&c->out, PROFILE_TIME_NANOS, start);
	if (r >= 0 && duration)
		r = pb_uint(&c->out, PROFILE_DURATION_NANOS, duration);
	if (r >= 0)
		r = str_field(c, &c->out, PROFILE_DEFAULT_SAMPLE_TYPE,
			      c->counts ? "samples" : "wall");
	return r < 0 ? r : mappings(c);
}

static int finish(struct pp *c)
{
	/* the string table goes last: it is complete only now */
	int r = 0;
	for (size_t i = 0; i < c->nstrings && r >= 0; i++)
		r = pb_bytes(&c->out, PROFILE_STRING_TABLE, c->strings[i], strlen(c->strings[i]));
	if (r >= 0) {
		char comment[64];
		snprintf(comment, sizeof(comment), "stallwatch %s", c->o->tool_version);
		int64_t ci = str_index(c, comment);
		r = ci < 0 ? (int)ci
			   : pb_bytes(&c->out, PROFILE_STRING_TABLE, comment, strlen(comment));
		if (r >= 0)
			r = pb_uint(&c->out, PROFILE_COMMENT, (uint64_t)ci);
	}
	return r;
}

int sw_render_pprof(struct sw_profile *p, const struct sw_render_options *o, struct sw_buf *out)
{
#if SW_HAVE_ZLIB
	struct pp c = {.p = p, .o = o};
	sw_buf_init(&c.out, 0);
	sw_buf_init(&c.msg, 0);
	sw_buf_init(&c.sub, 0);
	sw_buf_init(&c.labels, 0);
	c.strings_cap = 64;
	c.strings = malloc(c.strings_cap * sizeof(*c.strings));
	size_t nframes = sw_profile_nframes(p);
	c.func_of_frame = calloc(nframes + 1, sizeof(*c.func_of_frame));
	c.inlined = malloc(nframes + 1);
	c.loc_code = calloc(nframes + 1, sizeof(*c.loc_code));
	c.closed = malloc(SW_TREE_MAX_DEPTH * sizeof(*c.closed));
	/* a whole code a frame, the last one's 8 bytes at most 7 from its start */
	c.scratch = malloc(SW_TREE_MAX_DEPTH * sizeof(struct loc_code) + 8);
	sw_buf_init(&c.ids, 0);
	int r = c.strings && c.func_of_frame && c.inlined && c.loc_code && c.closed && c.scratch
		    ? 0
		    : -ENOMEM;
	for (size_t i = 0; i < nframes && r >= 0; i++) {
		c.inlined[i] = sw_profile_get_frame(p, (uint32_t)i)->inlined;
		if (c.inlined[i])
			c.loc_code[i].len = LOC_INLINED;
	}
	c.gz = out;
	if (r >= 0)
		r = gzip_open(&c.z);
	if (r >= 0) {
		c.strings[0] = strdup("");
		c.nstrings = 1;
		r = c.strings[0] ? header(&c) : -ENOMEM;
	}
	for (size_t i = 0; i < sw_profile_nstalls(p) && r >= 0; i++)
		r = stall_samples(&c, sw_profile_stall(p, i));
	if (r >= 0)
		r = grouped_samples(&c);
	if (r >= 0)
		r = finish(&c);
	if (r >= 0)
		r = deflate_out(&c, true);
	gzip_close(&c.z);
	for (size_t i = 0; i < c.nstrings; i++)
		free((char *)c.strings[i]);
	free(c.strings);
	free(c.string_table);
	free(c.func_of_frame);
	free(c.loc_code);
	free(c.inlined);
	free(c.loc_pool);
	free(c.locs);
	free(c.loc_table);
	free(c.closed);
	free(c.scratch);
	free(c.label_off);
	free(c.put_off);
	free(c.stack_ids);
	sw_buf_finish(&c.ids);
	sw_buf_finish(&c.out);
	sw_buf_finish(&c.msg);
	sw_buf_finish(&c.sub);
	sw_buf_finish(&c.labels);
	return r;
#else
	(void)p;
	(void)o;
	(void)out;
	return -ENOTSUP;
#endif
}
