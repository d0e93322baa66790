/*
 * The wire format's encoder, shared with the agent.
 *
 * Everything here writes into the caller's buffer and keeps its state in the
 * caller's struct sw_wire_encoder: no allocation, no lock, no library call
 * beyond memcpy/memmove/memcmp, so the agent may encode anywhere.  The field
 * order of every message is specified in stallwatch-format(5).
 */
#include <errno.h>
#include <string.h>

#include "wire-private.h"

struct writer {
	uint8_t *p;
	uint8_t *end;
	bool overflow;
};

static void put_byte(struct writer *w, uint8_t b)
{
	if (w->p < w->end)
		*w->p++ = b;
	else
		w->overflow = true;
}

static void put_uleb(struct writer *w, uint64_t v)
{
	do {
		uint8_t b = v & 0x7f;
		v >>= 7;
		put_byte(w, v ? b | 0x80 : b);
	} while (v);
}

static void put_sleb(struct writer *w, int64_t v)
{
	put_uleb(w, sw_wire_zigzag(v));
}

static void put_bytes(struct writer *w, const void *data, size_t len)
{
	if ((size_t)(w->end - w->p) < len) {
		w->overflow = true;
		return;
	}
	if (len)
		memcpy(w->p, data, len);
	w->p += len;
}

/* Strings longer than the format allows make the message invalid. */
static bool put_str(struct writer *w, const char *s)
{
	size_t len = s ? strlen(s) : 0;
	if (len > SW_WIRE_MAX_STRING)
		return false;
	put_uleb(w, len);
	put_bytes(w, s, len);
	return true;
}

static void put_config(struct writer *w, const struct sw_wire_config *c)
{
	put_uleb(w, c->present);
	put_uleb(w, c->threshold_ms);
	put_uleb(w, c->interval_us);
	put_uleb(w, c->flags);
	put_uleb(w, c->max_depth);
}

static bool put_hello(struct writer *w, const struct sw_wire_hello *h)
{
	struct sw_wire_config config = h->config;
	config.present = SW_CONFIG_ALL_FIELDS;

	put_bytes(w, SW_WIRE_AGENT_MAGIC, 4);
	put_uleb(w, h->protocol);
	put_uleb(w, h->platform);
	bool ok = put_str(w, h->agent_version) && put_str(w, h->arch) &&
		  put_str(w, h->os_version) && put_str(w, h->device_model) &&
		  put_str(w, h->process_name) && put_str(w, h->bundle_id);
	put_uleb(w, h->pid);
	put_uleb(w, h->clock_numer);
	put_uleb(w, h->clock_denom);
	put_uleb(w, h->clock_base);
	put_uleb(w, h->wall_ns);
	put_config(w, &config);
	return ok && put_str(w, h->passive ? h->passive : "") &&
	       put_str(w, h->bundle_version ? h->bundle_version : "");
}

static bool put_image(struct writer *w, const struct sw_wire_image *im)
{
	if (im->id_len > SW_WIRE_MAX_ID)
		return false;
	put_uleb(w, im->index);
	put_uleb(w, im->load_address);
	put_uleb(w, im->text_vmaddr);
	put_uleb(w, im->text_size);
	put_uleb(w, im->id_kind);
	put_uleb(w, im->id_len);
	put_bytes(w, im->id, im->id_len);
	if (!put_str(w, im->path) || !put_str(w, im->arch))
		return false;
	if (!im->nmore_text)
		return true; /* as before the field existed */
	if (im->nmore_text > SW_WIRE_MAX_MORE_TEXT)
		return false;
	put_uleb(w, im->nmore_text);
	for (uint32_t i = 0; i < im->nmore_text; i++) {
		put_uleb(w, im->more_text[i].vmaddr);
		put_uleb(w, im->more_text[i].size);
	}
	return true;
}

static struct sw_wire_encoder_thread *find_thread(struct sw_wire_encoder *enc, uint64_t tid)
{
	for (size_t i = 0; i < SW_WIRE_ENCODER_THREADS; i++)
		if (enc->threads[i].depth && enc->threads[i].thread_id == tid)
			return &enc->threads[i];
	return NULL;
}

static struct sw_wire_encoder_thread *oldest_thread(struct sw_wire_encoder *enc)
{
	struct sw_wire_encoder_thread *oldest = &enc->threads[0];
	for (size_t i = 0; i < SW_WIRE_ENCODER_THREADS; i++) {
		struct sw_wire_encoder_thread *t = &enc->threads[i];
		if (!t->depth)
			return t;
		if (t->last_use < oldest->last_use)
			oldest = t;
	}
	return oldest;
}

/*
 * Counts the frames at the root end that equal the previous stack's, and
 * encodes the others, leaf first, as deltas: from the frame at the same
 * distance from the root in the previous stack where there is one, else from
 * the frame encoded just before (the first from zero).
 */
static void put_frames(struct writer *w, const struct sw_wire_sample *s,
		       const struct sw_wire_encoder_thread *prev)
{
	uint32_t shared = 0;
	if (prev) {
		uint32_t limit = s->depth < prev->depth ? s->depth : prev->depth;
		while (shared < limit &&
		       s->frames[s->depth - 1 - shared] == prev->frames[prev->depth - 1 - shared])
			shared++;
		put_uleb(w, shared);
	}
	uint64_t last = 0;
	for (uint32_t i = 0; i < s->depth - shared; i++) {
		uint32_t from_root = s->depth - 1 - i;
		uint64_t base = last;
		if (prev && from_root < prev->depth)
			base = prev->frames[prev->depth - 1 - from_root];
		put_sleb(w, (int64_t)(s->frames[i] - base));
		last = s->frames[i];
	}
}

static void remember_thread(struct sw_wire_encoder *enc, struct sw_wire_encoder_thread *t,
			    const struct sw_wire_sample *s)
{
	if (s->depth == 0 || s->depth > SW_WIRE_ENCODER_FRAMES) {
		/* too deep to keep: the next sample of this thread goes whole */
		if (t)
			t->depth = 0;
		return;
	}
	if (!t)
		t = oldest_thread(enc);
	if (t->thread_id != s->thread_id || !t->depth)
		t->name[0] = '\0';
	t->thread_id = s->thread_id;
	t->last_use = ++enc->clock;
	t->depth = s->depth;
	memcpy(t->frames, s->frames, s->depth * sizeof(s->frames[0]));
	if (s->thread_name && s->thread_name[0]) {
		size_t n = strlen(s->thread_name);
		memcpy(t->name, s->thread_name, n + 1);
	}
}

static bool put_sample(struct sw_wire_encoder *enc, struct writer *w,
		       const struct sw_wire_sample *s, bool *ret_remember)
{
	if (s->depth > SW_WIRE_MAX_FRAMES || (s->depth && !s->frames))
		return false;
	size_t name_len = s->thread_name ? strlen(s->thread_name) : 0;
	if (name_len >= SW_WIRE_THREAD_NAME_MAX)
		return false;

	struct sw_wire_encoder_thread *prev = find_thread(enc, s->thread_id);
	uint32_t flags = s->flags & SW_SAMPLE_PUBLIC_MASK;
	if (name_len && !(prev && strcmp(prev->name, s->thread_name) == 0))
		flags |= SW_SAMPLE_WIRE_NAME;
	/* a recording's sample names an entry of its stack table, or sends the frames */
	bool table_ref = s->table && !s->table_add;
	if (table_ref)
		flags |= SW_SAMPLE_WIRE_TABLE_REF;
	else if (prev)
		flags |= SW_SAMPLE_WIRE_REF;
	if (s->table_add)
		flags |= SW_SAMPLE_WIRE_TABLE_ADD;

	put_uleb(w, s->stall_id);
	put_uleb(w, s->time);
	put_uleb(w, s->thread_id);
	put_uleb(w, flags);
	if (flags & SW_SAMPLE_WIRE_NAME)
		put_str(w, s->thread_name);
	put_uleb(w, s->depth);
	if (table_ref)
		put_uleb(w, s->table - 1);
	else
		put_frames(w, s, flags & SW_SAMPLE_WIRE_REF ? prev : NULL);
	if (flags & SW_SAMPLE_ELIDED) {
		if (s->elided_at > s->depth)
			return false;
		put_uleb(w, s->elided);
		put_uleb(w, s->elided_at);
	}
	put_bytes(w, s->rest, s->rest_len);
	*ret_remember = true;
	return true;
}

static bool put_body(struct sw_wire_encoder *enc, struct writer *w, const struct sw_wire_msg *m,
		     bool *ret_remember)
{
	switch (m->type) {
	case SW_MSG_HELLO:
		return put_hello(w, &m->hello);
	case SW_MSG_IMAGE_ADDED:
		return put_image(w, &m->image);
	case SW_MSG_IMAGE_REMOVED:
		put_uleb(w, m->image_removed.index);
		return true;
	case SW_MSG_STALL_BEGIN:
		put_uleb(w, m->stall_begin.stall_id);
		put_uleb(w, m->stall_begin.thread_id);
		put_uleb(w, m->stall_begin.start_time);
		put_uleb(w, m->stall_begin.detect_time);
		return put_str(w, m->stall_begin.context);
	case SW_MSG_STALL_END:
		put_uleb(w, m->stall_end.stall_id);
		put_uleb(w, m->stall_end.end_time);
		put_uleb(w, m->stall_end.duration_ns);
		put_uleb(w, m->stall_end.cpu_ns);
		put_uleb(w, m->stall_end.samples);
		put_uleb(w, m->stall_end.dropped);
		if (m->stall_end.has_late) {
			put_uleb(w, m->stall_end.late);
			put_uleb(w, m->stall_end.late_ns);
		}
		return true;
	case SW_MSG_SAMPLE:
		return enc && put_sample(enc, w, &m->sample, ret_remember);
	case SW_MSG_STATS:
		put_uleb(w, m->stats.samples);
		put_uleb(w, m->stats.dropped);
		put_uleb(w, m->stats.stalls);
		put_uleb(w, m->stats.agent_cpu_ns);
		if (m->stats.has_loop)
			put_uleb(w, m->stats.loop_first_wait);
		return true;
	case SW_MSG_SYMBOL_HINT:
		put_uleb(w, m->symbol_hint.image_index);
		put_uleb(w, m->symbol_hint.offset);
		put_uleb(w, m->symbol_hint.size);
		return put_str(w, m->symbol_hint.name);
	case SW_MSG_GOODBYE:
		put_uleb(w, m->goodbye.reason);
		return put_str(w, m->goodbye.text);
	case SW_MSG_CONFIG_REPLY:
		put_uleb(w, m->config_reply.accepted);
		if (!put_str(w, m->config_reply.reason))
			return false;
		put_config(w, &m->config_reply.config);
		return true;
	case SW_MSG_CLIENT_HELLO:
		put_bytes(w, SW_WIRE_CLIENT_MAGIC, 4);
		put_uleb(w, m->client_hello.protocol);
		return put_str(w, m->client_hello.token) &&
		       put_str(w, m->client_hello.client_version);
	case SW_MSG_CONFIG:
		put_config(w, &m->config);
		return true;
	case SW_MSG_RECORD_INFO:
		return put_str(w, m->record_info.key) && put_str(w, m->record_info.value);
	default:
		return false;
	}
}

void sw_wire_encoder_reset(struct sw_wire_encoder *enc)
{
	enc->clock = 0;
	for (size_t i = 0; i < SW_WIRE_ENCODER_THREADS; i++) {
		enc->threads[i].depth = 0;
		enc->threads[i].name[0] = '\0';
	}
}

void sw_wire_encoder_forget(struct sw_wire_encoder *enc, uint64_t thread_id)
{
	struct sw_wire_encoder_thread *t = find_thread(enc, thread_id);
	if (t) {
		t->depth = 0;
		t->name[0] = '\0';
	}
}

int sw_wire_encode(struct sw_wire_encoder *enc, uint8_t *buf, size_t cap,
		   const struct sw_wire_msg *msg)
{
	/* The body goes after room for the longest length prefix, then moves. */
	if (cap < 1 + SW_WIRE_LEN_BYTES)
		return -ENOSPC;
	struct writer w = {.p = buf + 1 + SW_WIRE_LEN_BYTES, .end = buf + cap};
	if (cap - 1 - SW_WIRE_LEN_BYTES > SW_WIRE_MAX_BODY)
		w.end = w.p + SW_WIRE_MAX_BODY;
	bool remember = false;
	if (!put_body(enc, &w, msg, &remember))
		return -EINVAL;
	if (w.overflow)
		return (size_t)(buf + cap - (buf + 1 + SW_WIRE_LEN_BYTES)) > SW_WIRE_MAX_BODY
			   ? -EINVAL
			   : -ENOSPC;

	size_t body = (size_t)(w.p - (buf + 1 + SW_WIRE_LEN_BYTES));
	uint8_t prefix[1 + SW_WIRE_LEN_BYTES];
	struct writer pw = {.p = prefix, .end = prefix + sizeof(prefix)};
	put_byte(&pw, (uint8_t)msg->type);
	put_uleb(&pw, body);
	size_t prefix_len = (size_t)(pw.p - prefix);
	memmove(buf + prefix_len, buf + 1 + SW_WIRE_LEN_BYTES, body);
	memcpy(buf, prefix, prefix_len);

	if (remember)
		remember_thread(enc, find_thread(enc, msg->sample.thread_id), &msg->sample);
	return (int)(prefix_len + body);
}
