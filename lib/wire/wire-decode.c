/*
 * The wire format's decoder, for the host.
 *
 * Input is hostile: every length, count and index is checked against the
 * body it sits in and against the format's ceilings, and every error names
 * the stream offset where it was found.  The decoder keeps, per stream, the
 * previous stack and the name of the threads sampled most recently (at least
 * SW_WIRE_DECODER_KEEP of them, far more than an encoder refers back to).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stalls.h"
#include "table-frames.h"
#include "util/buf.h"
#include "util/error.h"
#include "wire-private.h"

#define SW_WIRE_DECODER_THREADS 256
#define SW_WIRE_DECODER_KEEP    128

/*
 * A thread's last stack, which the next one may refer to: frames, or the
 * stack table's entry the sample named.  A sample is decoded into spare,
 * then the two swap: no copy of a deep stack.
 */
struct thread_state {
	uint64_t last_use;
	uint32_t depth;
	uint32_t cap, spare_cap;
	const uint64_t *last; /* depth frames */
	uint64_t *frames, *spare;
	char name[SW_WIRE_THREAD_NAME_MAX];
};

/* A recording's stack table: entries whose frames stay put until the decoder is freed. */
struct table_entry {
	const uint64_t *frames;
	uint32_t depth;
	uint64_t hash;
};

struct sw_wire_decoder {
	uint64_t clock;
	size_t nthreads;
	size_t last; /* the slot found last, tried first */
	uint64_t tids[SW_WIRE_DECODER_THREADS];
	struct thread_state threads[SW_WIRE_DECODER_THREADS];
	struct sw_buf strings;
	bool table_on; /* a recording of format version 2: samples may use the table */
	struct table_entry *entries;
	size_t nentries, entries_cap, table_frames;
	struct sw_table_frames copies; /* the entries' frames */
};

struct reader {
	const uint8_t *p, *start, *end;
	uint64_t offset;  /* stream offset of start */
	const char *what; /* the message being read, for errors */
	struct sw_wire_decoder *dec;
	struct sw_error *err;
	bool failed;
	int code; /* the error when it is not -EBADMSG */
};

static bool fail(struct reader *r, const char *problem)
{
	if (!r->failed)
		sw_error_set(r->err, -EBADMSG, "%s in %s message at offset %llu", problem, r->what,
			     (unsigned long long)(r->offset + (uint64_t)(r->p - r->start)));
	r->failed = true;
	return false;
}

static bool out_of_memory(struct reader *r)
{
	sw_error_set(r->err, -ENOMEM, "out of memory");
	r->failed = true;
	return false;
}

/* The number in word x, whose bytes past its last one are zero: seven bits a byte. */
static inline uint64_t uleb_gather(uint64_t x)
{
	/* gathered in pairs of bytes, then pairs of pairs, then of quads */
	x = (x & 0x007f007f007f007full) | (x & 0x7f007f007f007f00ull) >> 1;
	x = (x & 0x00003fff00003fffull) | (x & 0x3fff00003fff0000ull) >> 2;
	return (x & 0x000000000fffffffull) | (x & 0x0fffffff00000000ull) >> 4;
}

/*
 * A number of up to eight bytes read as one word at p, without a branch
 * per byte: most numbers are stack deltas of one to five bytes, whose
 * lengths a per-byte loop mispredicts.  Returns the bytes it took, 0 when
 * the word holds no last byte (get_uleb() reads those).  p has eight bytes.
 */
static inline unsigned uleb_word_at(const uint8_t *p, uint64_t *ret)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t x;
	memcpy(&x, p, 8);
	uint64_t last = ~x & 0x8080808080808080ull; /* bytes without the continuation bit */
	if (!last)
		return 0;
	*ret = uleb_gather(x & (last ^ (last - 1))); /* the bytes up to the last one */
	return ((unsigned)__builtin_ctzll(last) + 1) / 8;
#else
	(void)p;
	(void)ret;
	return 0;
#endif
}

static inline bool uleb_word(struct reader *r, uint64_t *ret)
{
	unsigned n = r->end - r->p >= 8 ? uleb_word_at(r->p, ret) : 0;
	r->p += n;
	return n;
}

static bool get_uleb(struct reader *r, uint64_t *ret)
{
	if (uleb_word(r, ret))
		return true;
	uint64_t v = 0;
	if (r->end - r->p >= 10) {
		/* room for the longest number: no bounds check per byte (most of decoding) */
		const uint8_t *p = r->p;
		for (unsigned shift = 0; shift < 63; shift += 7) {
			uint8_t b = *p++;
			v |= (uint64_t)(b & 0x7f) << shift;
			if (!(b & 0x80)) {
				r->p = p;
				*ret = v;
				return true;
			}
		}
		v = 0; /* ten bytes: the checks below judge the last one */
	}
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end)
			return fail(r, "truncated number");
		uint8_t b = *r->p++;
		if (shift == 63 && b > 1)
			return fail(r, "number out of range");
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return true;
		}
	}
	return fail(r, "number out of range");
}

static bool get_u32(struct reader *r, uint32_t *ret)
{
	uint64_t v;
	if (!get_uleb(r, &v))
		return false;
	if (v > UINT32_MAX)
		return fail(r, "number out of range");
	*ret = (uint32_t)v;
	return true;
}

/* Copies a string into the decoder's string space, NUL-terminated. */
static bool get_str_max(struct reader *r, const char **ret, size_t max)
{
	uint64_t len;
	if (!get_uleb(r, &len))
		return false;
	if (len > max)
		return fail(r, "string too long");
	if (len > (uint64_t)(r->end - r->p))
		return fail(r, "truncated string");
	struct sw_buf *s = &r->dec->strings;
	/* space was reserved for the whole body, so this never moves */
	char *copy = (char *)s->data + s->len;
	memcpy(copy, r->p, len);
	copy[len] = '\0';
	s->len += len + 1;
	r->p += len;
	*ret = copy;
	return true;
}

static bool get_str(struct reader *r, const char **ret)
{
	return get_str_max(r, ret, SW_WIRE_MAX_STRING);
}

static bool get_magic(struct reader *r, const char *magic)
{
	if (r->end - r->p < 4 || memcmp(r->p, magic, 4) != 0)
		return fail(r, "bad magic");
	r->p += 4;
	return true;
}

static bool get_config(struct reader *r, struct sw_wire_config *c)
{
	return get_u32(r, &c->present) && get_u32(r, &c->threshold_ms) &&
	       get_u32(r, &c->interval_us) && get_u32(r, &c->flags) && get_u32(r, &c->max_depth);
}

/*
 * The magic and the protocol open the hello in every version, so a reader
 * can name a version it does not read instead of misreading what follows.
 */
static bool get_protocol(struct reader *r, uint32_t *protocol)
{
	if (!get_magic(r, SW_WIRE_AGENT_MAGIC) || !get_u32(r, protocol))
		return false;
	if (*protocol > SW_WIRE_PROTOCOL)
		r->code = sw_error_set(r->err, -EPROTONOSUPPORT,
				       "agent speaks protocol %u, newer than this stallwatch's %u: "
				       "upgrade stallwatch",
				       *protocol, SW_WIRE_PROTOCOL);
	else if (*protocol < SW_WIRE_PROTOCOL_OLDEST)
		r->code = sw_error_set(
		    r->err, -EPROTONOSUPPORT,
		    "agent speaks protocol %u, older than this stallwatch reads (%u to %u)",
		    *protocol, SW_WIRE_PROTOCOL_OLDEST, SW_WIRE_PROTOCOL);
	else
		return true;
	r->failed = true;
	return false;
}

static bool get_hello(struct reader *r, struct sw_wire_hello *h)
{
	h->passive = h->bundle_version = NULL;
	return get_protocol(r, &h->protocol) && get_u32(r, &h->platform) &&
	       get_str(r, &h->agent_version) && get_str(r, &h->arch) &&
	       get_str(r, &h->os_version) && get_str(r, &h->device_model) &&
	       get_str(r, &h->process_name) && get_str(r, &h->bundle_id) && get_uleb(r, &h->pid) &&
	       get_uleb(r, &h->clock_numer) && get_uleb(r, &h->clock_denom) &&
	       get_uleb(r, &h->clock_base) && get_uleb(r, &h->wall_ns) &&
	       get_config(r, &h->config) && (r->p == r->end || get_str(r, &h->passive)) &&
	       (r->p == r->end || get_str(r, &h->bundle_version));
}

static bool get_image(struct reader *r, struct sw_wire_image *im)
{
	if (!get_u32(r, &im->index) || !get_uleb(r, &im->load_address) ||
	    !get_uleb(r, &im->text_vmaddr) || !get_uleb(r, &im->text_size) ||
	    !get_u32(r, &im->id_kind) || !get_u32(r, &im->id_len))
		return false;
	if (im->id_len > SW_WIRE_MAX_ID)
		return fail(r, "image id too long");
	if (im->id_len > (size_t)(r->end - r->p))
		return fail(r, "truncated image id");
	memcpy(im->id, r->p, im->id_len);
	r->p += im->id_len;
	im->nmore_text = 0;
	if (!get_str(r, &im->path) || !get_str(r, &im->arch))
		return false;
	if (r->p == r->end)
		return true; /* an agent from before further segments */
	if (!get_u32(r, &im->nmore_text))
		return false;
	if (im->nmore_text > SW_WIRE_MAX_MORE_TEXT)
		return fail(r, "too many executable segments");
	for (uint32_t i = 0; i < im->nmore_text; i++)
		if (!get_uleb(r, &im->more_text[i].vmaddr) || !get_uleb(r, &im->more_text[i].size))
			return false;
	return true;
}

/* Finds the state of a thread, making room for it when asked. */
static struct thread_state *thread_state(struct sw_wire_decoder *dec, uint64_t tid, bool create);

/* Keeps the SW_WIRE_DECODER_KEEP most recently sampled threads. */
static void evict_threads(struct sw_wire_decoder *dec)
{
	size_t order[SW_WIRE_DECODER_THREADS];
	for (size_t i = 0; i < dec->nthreads; i++) {
		size_t j = i;
		while (j > 0 && dec->threads[order[j - 1]].last_use < dec->threads[i].last_use) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	for (size_t i = SW_WIRE_DECODER_KEEP; i < dec->nthreads; i++) {
		free(dec->threads[order[i]].frames);
		free(dec->threads[order[i]].spare);
	}

	struct thread_state moved[SW_WIRE_DECODER_KEEP];
	uint64_t tids[SW_WIRE_DECODER_KEEP];
	for (size_t i = 0; i < SW_WIRE_DECODER_KEEP; i++) {
		moved[i] = dec->threads[order[i]];
		tids[i] = dec->tids[order[i]];
	}
	memcpy(dec->threads, moved, sizeof(moved));
	memcpy(dec->tids, tids, sizeof(tids));
	dec->nthreads = SW_WIRE_DECODER_KEEP;
	dec->last = 0;
}

static struct thread_state *thread_state(struct sw_wire_decoder *dec, uint64_t tid, bool create)
{
	if (dec->last < dec->nthreads && dec->tids[dec->last] == tid)
		return &dec->threads[dec->last];
	for (size_t i = 0; i < dec->nthreads; i++) {
		if (dec->tids[i] == tid) {
			dec->last = i;
			return &dec->threads[i];
		}
	}
	if (!create)
		return NULL;
	if (dec->nthreads == SW_WIRE_DECODER_THREADS)
		evict_threads(dec);
	size_t i = dec->nthreads++;
	dec->tids[i] = tid;
	dec->threads[i] = (struct thread_state){0};
	dec->last = i;
	return &dec->threads[i];
}

/*
 * Decodes a stack into out, which has room for depth frames: each
 * frame a delta from the frame before it, or from the previous stack's
 * frame as far from the root when ref and that stack reaches so far.
 * Not inlined: in the message decoder's body its loop ran short of
 * registers (most of a recording's bytes are this loop's).
 */
__attribute__((noinline)) static bool get_frames(struct reader *r, struct thread_state *prev,
						 uint32_t depth, bool ref, uint64_t *out)
{
	uint64_t shared = 0;
	if (ref) {
		if (!get_uleb(r, &shared))
			return false;
		if (shared > depth || shared > prev->depth)
			return fail(r, "shared frame count out of range");
	}
	uint32_t n = depth - (uint32_t)shared;
	/* frames from 'from' on have one in the previous stack, at i + skip (mod 2^32) */
	uint32_t from = ref && prev->depth < depth ? depth - prev->depth : ref ? 0 : n;
	uint32_t skip = prev->depth - depth;
	const uint64_t *base = prev->last;
	const uint8_t *p = r->p, *end = r->end;
	uint64_t last = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t z;
		unsigned len = end - p >= 8 ? uleb_word_at(p, &z) : 0;
		p += len;
		if (!len) { /* near the end, or nine bytes or more */
			r->p = p;
			if (!get_uleb(r, &z))
				return false;
			p = r->p;
		}
		last = (i < from ? last : base[i + skip]) + (uint64_t)sw_wire_unzigzag(z);
		out[i] = last;
	}
	r->p = p;
	for (uint32_t k = 0; k < shared; k++)
		out[depth - 1 - k] = base[prev->depth - 1 - k];
	return true;
}

/* Makes room for depth frames in t->spare. */
static bool reserve_spare(struct reader *r, struct thread_state *t, uint32_t depth)
{
	if (depth <= t->spare_cap && t->spare)
		return true;
	uint32_t cap = t->spare_cap ? t->spare_cap : 64;
	while (cap < depth)
		cap *= 2;
	uint64_t *frames = realloc(t->spare, cap * sizeof(*frames));
	if (!frames)
		return out_of_memory(r);
	t->spare = frames;
	t->spare_cap = cap;
	return true;
}

/* The stack just decoded into t->spare becomes the thread's last. */
static void store_frames(struct thread_state *t, uint32_t depth, uint64_t clock)
{
	uint64_t *frames = t->frames;
	uint32_t cap = t->cap;
	t->frames = t->spare;
	t->cap = t->spare_cap;
	t->spare = frames;
	t->spare_cap = cap;
	t->last = t->frames;
	t->depth = depth;
	t->last_use = clock;
}

/*
 * Adds the depth frames just decoded into the room of the table's copies
 * (sw_table_frames_room()) at frames as the stack table's next entry.
 */
static bool add_entry(struct reader *r, const uint64_t *frames, uint32_t depth)
{
	struct sw_wire_decoder *dec = r->dec;
	if (dec->nentries == SW_WIRE_TABLE_MAX_STACKS ||
	    dec->table_frames + depth > SW_WIRE_TABLE_MAX_FRAMES)
		return fail(r, "stack table past its limit");
	if (dec->nentries == dec->entries_cap) {
		size_t cap = dec->entries_cap ? dec->entries_cap * 2 : 4096;
		struct table_entry *e = realloc(dec->entries, cap * sizeof(*e));
		if (!e)
			return out_of_memory(r);
		dec->entries = e;
		dec->entries_cap = cap;
	}
	sw_table_frames_keep(&dec->copies, depth);
	dec->table_frames += depth;
	dec->entries[dec->nentries++] =
	    (struct table_entry){frames, depth, sw_stalls_stack_hash(frames, depth)};
	return true;
}

/* A sample's stack is the table entry it names: the thread's last stack from now on. */
static bool get_table_ref(struct reader *r, struct thread_state *t, struct sw_wire_sample *s)
{
	uint64_t id;
	if (!get_uleb(r, &id))
		return false;
	if (id >= r->dec->nentries)
		return fail(r, "stack table entry out of range");
	const struct table_entry *e = &r->dec->entries[id];
	if (e->depth != s->depth)
		return fail(r, "frame count unlike its stack table entry's");
	t->last = e->frames;
	t->depth = e->depth;
	t->last_use = ++r->dec->clock;
	s->table = (uint32_t)id + 1;
	s->table_hash = e->hash;
	return true;
}

static bool get_sample(struct reader *r, struct sw_wire_sample *s)
{
	uint32_t flags;
	if (!get_uleb(r, &s->stall_id) || !get_uleb(r, &s->time) || !get_uleb(r, &s->thread_id) ||
	    !get_u32(r, &flags))
		return false;
	const char *name = NULL;
	if ((flags & SW_SAMPLE_WIRE_NAME) && !get_str_max(r, &name, SW_WIRE_THREAD_NAME_MAX - 1))
		return false;
	if (!get_u32(r, &s->depth))
		return false;
	if (s->depth > SW_WIRE_MAX_FRAMES)
		return fail(r, "too many frames");

	struct thread_state *t = thread_state(r->dec, s->thread_id, true);
	bool ref = flags & SW_SAMPLE_WIRE_REF;
	bool table_ref = flags & SW_SAMPLE_WIRE_TABLE_REF,
	     table_add = flags & SW_SAMPLE_WIRE_TABLE_ADD;
	if ((table_ref || table_add) && !r->dec->table_on)
		return fail(r, "stack table entry outside a recording that has one");
	if (table_ref && (ref || table_add))
		return fail(r, "stack table entry named beside frames");
	if (ref && !t->last_use)
		return fail(r, "reference to an unknown previous stack");
	if (table_ref) {
		if (!get_table_ref(r, t, s))
			return false;
	} else if (table_add) {
		/* decoded where the entry keeps them, which outlive the next sample */
		uint64_t *room = sw_table_frames_room(&r->dec->copies, s->depth);
		if (!room)
			return out_of_memory(r);
		if (!get_frames(r, t, s->depth, ref, room) || !add_entry(r, room, s->depth))
			return false;
		const struct table_entry *e = &r->dec->entries[r->dec->nentries - 1];
		t->last = e->frames;
		t->depth = s->depth;
		t->last_use = ++r->dec->clock;
		s->table = (uint32_t)r->dec->nentries;
		s->table_add = true;
		s->table_hash = e->hash;
	} else {
		if (!reserve_spare(r, t, s->depth) || !get_frames(r, t, s->depth, ref, t->spare))
			return false;
		store_frames(t, s->depth, ++r->dec->clock);
	}
	if (name)
		memcpy(t->name, name, strlen(name) + 1);
	s->elided = 0;
	s->elided_at = 0;
	if ((flags & SW_SAMPLE_ELIDED) && (!get_uleb(r, &s->elided) || !get_u32(r, &s->elided_at)))
		return false;
	if (s->elided_at > s->depth)
		return fail(r, "frames left out past the stack");
	s->flags = flags & SW_SAMPLE_PUBLIC_MASK;
	s->thread_name = t->name;
	s->frames = t->last;
	s->rest = r->p;
	s->rest_len = (size_t)(r->end - r->p);
	return true;
}

static bool get_body(struct reader *r, struct sw_wire_msg *m)
{
	switch (m->type) {
	case SW_MSG_HELLO:
		return get_hello(r, &m->hello);
	case SW_MSG_IMAGE_ADDED:
		return get_image(r, &m->image);
	case SW_MSG_IMAGE_REMOVED:
		return get_u32(r, &m->image_removed.index);
	case SW_MSG_STALL_BEGIN:
		return get_uleb(r, &m->stall_begin.stall_id) &&
		       get_uleb(r, &m->stall_begin.thread_id) &&
		       get_uleb(r, &m->stall_begin.start_time) &&
		       get_uleb(r, &m->stall_begin.detect_time) &&
		       get_str(r, &m->stall_begin.context);
	case SW_MSG_STALL_END:
		if (!get_uleb(r, &m->stall_end.stall_id) || !get_uleb(r, &m->stall_end.end_time) ||
		    !get_uleb(r, &m->stall_end.duration_ns) || !get_uleb(r, &m->stall_end.cpu_ns) ||
		    !get_uleb(r, &m->stall_end.samples) || !get_uleb(r, &m->stall_end.dropped))
			return false;
		m->stall_end.has_late = r->p < r->end; /* absent from older agents */
		m->stall_end.late = m->stall_end.late_ns = 0;
		return !m->stall_end.has_late ||
		       (get_uleb(r, &m->stall_end.late) && get_uleb(r, &m->stall_end.late_ns));
	case SW_MSG_SAMPLE:
		return get_sample(r, &m->sample);
	case SW_MSG_STATS:
		if (!get_uleb(r, &m->stats.samples) || !get_uleb(r, &m->stats.dropped) ||
		    !get_uleb(r, &m->stats.stalls) || !get_uleb(r, &m->stats.agent_cpu_ns))
			return false;
		m->stats.has_loop = r->p < r->end; /* absent from older agents */
		m->stats.loop_first_wait = 0;
		return !m->stats.has_loop || get_uleb(r, &m->stats.loop_first_wait);
	case SW_MSG_SYMBOL_HINT:
		return get_u32(r, &m->symbol_hint.image_index) &&
		       get_uleb(r, &m->symbol_hint.offset) && get_uleb(r, &m->symbol_hint.size) &&
		       get_str(r, &m->symbol_hint.name);
	case SW_MSG_GOODBYE:
		return get_u32(r, &m->goodbye.reason) && get_str(r, &m->goodbye.text);
	case SW_MSG_CONFIG_REPLY: {
		uint64_t accepted;
		if (!get_uleb(r, &accepted) || !get_str(r, &m->config_reply.reason) ||
		    !get_config(r, &m->config_reply.config))
			return false;
		m->config_reply.accepted = accepted != 0;
		return true;
	}
	case SW_MSG_CLIENT_HELLO:
		return get_magic(r, SW_WIRE_CLIENT_MAGIC) &&
		       get_u32(r, &m->client_hello.protocol) &&
		       get_str(r, &m->client_hello.token) &&
		       get_str(r, &m->client_hello.client_version);
	case SW_MSG_CONFIG:
		return get_config(r, &m->config);
	case SW_MSG_RECORD_INFO:
		return get_str(r, &m->record_info.key) && get_str(r, &m->record_info.value);
	default:
		return true; /* unknown: skipped by its length */
	}
}

int sw_wire_decoder_new(struct sw_wire_decoder **ret)
{
	struct sw_wire_decoder *dec = calloc(1, sizeof(*dec));
	if (!dec)
		return -ENOMEM;
	sw_buf_init(&dec->strings, SW_WIRE_MAX_BODY * 2);
	*ret = dec;
	return 0;
}

void sw_wire_decoder_reset(struct sw_wire_decoder *dec)
{
	for (size_t i = 0; i < dec->nthreads; i++) {
		free(dec->threads[i].frames);
		free(dec->threads[i].spare);
	}
	dec->nthreads = 0;
	dec->last = 0;
	dec->clock = 0;
}

void sw_wire_decoder_use_table(struct sw_wire_decoder *dec)
{
	dec->table_on = true;
}

void sw_wire_decoder_free(struct sw_wire_decoder *dec)
{
	if (!dec)
		return;
	sw_wire_decoder_reset(dec);
	sw_table_frames_free(&dec->copies);
	free(dec->entries);
	sw_buf_finish(&dec->strings);
	free(dec);
}

/* A number at *p, before end; false past end or past ten bytes. */
static bool peek_uleb(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
	uint64_t v = 0;
	for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return true;
		}
	}
	return false;
}

size_t sw_wire_decoder_prefetch(const struct sw_wire_decoder *dec, const uint8_t *buf, size_t len)
{
	const uint8_t *p = buf + 1, *end = buf + len;
	uint64_t body, v, flags, id;
	if (len < 2 || !peek_uleb(&p, end, &body) || body > (uint64_t)(end - p))
		return 0;
	size_t size = (size_t)(p - buf) + (size_t)body;
	if (!dec->nentries || buf[0] != SW_MSG_SAMPLE)
		return size;
	end = p + body;
	/* stall, time, thread, flags, the name when there is one, depth, then the entry */
	for (int i = 0; i < 3; i++)
		if (!peek_uleb(&p, end, &v))
			return size;
	if (!peek_uleb(&p, end, &flags) || !(flags & SW_SAMPLE_WIRE_TABLE_REF))
		return size;
	if (flags & SW_SAMPLE_WIRE_NAME) {
		if (!peek_uleb(&p, end, &v) || v > (uint64_t)(end - p))
			return size;
		p += v;
	}
	if (peek_uleb(&p, end, &v) && peek_uleb(&p, end, &id) && id < dec->nentries)
		__builtin_prefetch(&dec->entries[id]);
	return size;
}

int sw_wire_decode(struct sw_wire_decoder *dec, const uint8_t *buf, size_t len,
		   uint64_t stream_offset, struct sw_wire_msg *msg, struct sw_error *err)
{
	/* the length is ULEB128 in at most SW_WIRE_LEN_BYTES bytes */
	uint64_t body_len = 0;
	size_t header = 1;
	for (;;) {
		if (header >= len)
			return 0;
		uint8_t b = buf[header];
		body_len |= (uint64_t)(b & 0x7f) << (7 * (header - 1));
		header++;
		if (!(b & 0x80))
			break;
		if (header > SW_WIRE_LEN_BYTES)
			return sw_error_set(err, -EBADMSG, "bad message length at offset %llu",
					    (unsigned long long)stream_offset + 1);
	}
	if (body_len > SW_WIRE_MAX_BODY)
		return sw_error_set(err, -EBADMSG,
				    "message length %llu over the limit of %u at offset %llu",
				    (unsigned long long)body_len, SW_WIRE_MAX_BODY,
				    (unsigned long long)stream_offset + 1);
	if (len - header < body_len)
		return 0;

	/*
	 * Most messages are samples: only a sample's 96 bytes are cleared for
	 * one, not the union's 232 (an image's).  Copied from a zero sample:
	 * GCC stores a copy inline, where it clears with a `rep stos` whose
	 * start-up was a quarter of this function's time on a long recording.
	 */
	static const struct sw_wire_sample no_sample;
	if (buf[0] == SW_MSG_SAMPLE)
		memcpy(&msg->sample, &no_sample, sizeof(no_sample));
	else
		memset(msg, 0, sizeof(*msg));
	msg->type = buf[0];
	if (msg->type == SW_MSG_HELLO)
		sw_wire_decoder_reset(dec);
	sw_buf_reset(&dec->strings);
	int rr = sw_buf_reserve(&dec->strings, body_len + 64);
	if (rr < 0)
		return rr;
	struct reader r = {.p = buf + header,
			   .start = buf,
			   .end = buf + header + body_len,
			   .offset = stream_offset,
			   .what = sw_wire_type_name(buf[0]),
			   .dec = dec,
			   .err = err};
	if (!get_body(&r, msg))
		return r.code ? r.code : r.err && r.err->code ? r.err->code : -EBADMSG;
	/* a body may hold fields newer than this reader: they are skipped */
	return (int)(header + body_len);
}

const char *sw_wire_type_name(uint32_t type)
{
	switch (type) {
	case SW_MSG_HELLO:
		return "hello";
	case SW_MSG_IMAGE_ADDED:
		return "image-added";
	case SW_MSG_IMAGE_REMOVED:
		return "image-removed";
	case SW_MSG_STALL_BEGIN:
		return "stall-begin";
	case SW_MSG_STALL_END:
		return "stall-end";
	case SW_MSG_SAMPLE:
		return "sample";
	case SW_MSG_STATS:
		return "stats";
	case SW_MSG_SYMBOL_HINT:
		return "symbol-hint";
	case SW_MSG_GOODBYE:
		return "goodbye";
	case SW_MSG_CONFIG_REPLY:
		return "config-reply";
	case SW_MSG_CLIENT_HELLO:
		return "client-hello";
	case SW_MSG_CONFIG:
		return "config";
	case SW_MSG_RECORD_INFO:
		return "record-info";
	default:
		return "unknown";
	}
}
