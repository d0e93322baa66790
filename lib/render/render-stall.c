/*
 * Stalls as NDJSON (see render-stall.h), before symbolication.  Identical
 * stacks of one thread are counted once with their weight, heaviest first.
 * Frames stay raw addresses; each object lists the images its frames fall in
 * (path, build id, load address, file address of the text segment), enough
 * to symbolicate later on another machine.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "render-stall.h"
#include "util/json-write.h"
#include "util/time-units.h"

struct stack {
	const struct sw_stall_sample *first;
	uint64_t count;
};

void sw_stall_figures(const struct sw_stalls *c, const struct sw_stall *s,
		      struct sw_stall_figures *ret)
{
	const struct sw_stalls_info *in = sw_stalls_info(c);
	uint64_t duration = s->duration_ns;
	uint64_t main_samples = 0, blocked = 0;
	bool truncated = false;
	ret->unwinding_stopped = 0;
	for (size_t i = 0; i < s->nsamples; i++) {
		if (s->sample[i].thread_id == s->thread_id) {
			main_samples++;
			if (s->sample[i].flags & SW_SAMPLE_BLOCKED)
				blocked++;
			if (sw_stalls_sample_stopped(c, &s->sample[i]))
				ret->unwinding_stopped++;
		}
		if (s->sample[i].flags & SW_SAMPLE_TRUNCATED)
			truncated = true;
	}
	if (!s->ended && s->nsamples) /* cut off: as long as we saw it */
		duration = sw_stalls_ns(c, s->sample[s->nsamples - 1].time - s->start_time);
	ret->interval_ms = in->config.interval_us / (double)SW_US_PER_MS;
	ret->duration_ms = sw_ns_to_ms(duration);
	ret->cpu_ms = sw_ns_to_ms(s->cpu_ns);
	ret->main_samples = s->ended ? s->samples : main_samples;
	ret->sampled_ms = (double)ret->main_samples * ret->interval_ms;
	/*
	 * Busy when the thread had the CPU half the time, or when most samples
	 * found it runnable rather than waiting in the kernel: a busy thread
	 * starved by other processes is still busy, not blocked.
	 */
	bool runnable = main_samples && blocked * 2 < main_samples;
	ret->kind = s->cpu_ns * 2 >= duration || runnable ? "busy" : "blocked";
	ret->truncated = truncated;
}

static bool same_stack(const struct sw_stall_sample *a, const struct sw_stall_sample *b)
{
	return a->thread_id == b->thread_id && a->depth == b->depth && a->elided == b->elided &&
	       a->elided_at == b->elided_at &&
	       (a->flags & SW_SAMPLE_TRUNCATED) == (b->flags & SW_SAMPLE_TRUNCATED) &&
	       (a->frames == b->frames ||
		memcmp(a->frames, b->frames, a->depth * sizeof(uint64_t)) == 0);
}

/* The stalled thread's stacks first, then by weight. */
static int by_weight(const void *x, const void *y, void *ctx)
{
	const struct stack *a = x, *b = y;
	uint64_t main_tid = *(const uint64_t *)ctx;
	bool am = a->first->thread_id == main_tid, bm = b->first->thread_id == main_tid;
	if (am != bm)
		return am ? -1 : 1;
	if (a->count != b->count)
		return a->count < b->count ? 1 : -1;
	return a->first < b->first ? -1 : a->first > b->first;
}

/* From the collector's hash of the frames, when it has one. */
static uint64_t stack_hash(const struct sw_stall_sample *x)
{
	uint64_t h = x->hash ? x->hash : sw_stalls_stack_hash(x->frames, x->depth);
	h ^= x->thread_id * 0x9e3779b97f4a7c15ull ^ x->elided_at ^
	     ((uint64_t)(x->flags & SW_SAMPLE_TRUNCATED) << 40);
	h *= 0xff51afd7ed558ccdull;
	return h ^ h >> 32;
}

/*
 * Groups identical stacks through an open-addressed table of group
 * numbers (a linear search made 100k distinct stacks quadratic); the
 * caller frees *ret.
 */
static int group(const struct sw_stall *s, struct stack **ret, size_t *ret_n)
{
	size_t cap = 16;
	while (cap < s->nsamples * 2)
		cap *= 2;
	struct stack *st = calloc(s->nsamples ? s->nsamples : 1, sizeof(*st));
	uint32_t *table = malloc(cap * sizeof(*table));
	if (!st || !table) {
		free(st);
		free(table);
		return -ENOMEM;
	}
	memset(table, 0xff, cap * sizeof(*table));
	size_t n = 0;
	for (size_t i = 0; i < s->nsamples; i++) {
		size_t j = stack_hash(&s->sample[i]) & (cap - 1);
		while (table[j] != UINT32_MAX && !same_stack(st[table[j]].first, &s->sample[i]))
			j = (j + 1) & (cap - 1);
		if (table[j] == UINT32_MAX) {
			table[j] = (uint32_t)n;
			st[n++].first = &s->sample[i];
		}
		st[table[j]].count++;
	}
	free(table);
	uint64_t main_tid = s->thread_id;
	qsort_r(st, n, sizeof(*st), by_weight, &main_tid);
	*ret = st;
	*ret_n = n;
	return 0;
}

static void json_str(struct sw_buf *out, const char *s)
{
	sw_buf_putc(out, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			sw_buf_printf(out, "\\%c", *p);
		else if (*p < 0x20)
			sw_buf_printf(out, "\\u%04x", *p);
		else
			sw_buf_putc(out, (char)*p);
	}
	sw_buf_putc(out, '"');
}

#if !defined(__SSE2__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
/*
 * The 8 hexadecimal digits of h, most significant first, as 8 bytes in
 * memory order: one nibble spread to each byte, then each made a digit.
 */
static uint64_t hex8(uint32_t h)
{
	uint64_t x = h;
	x = (x | x << 16) & 0x0000ffff0000ffffull;
	x = (x | x << 8) & 0x00ff00ff00ff00ffull;
	x = (x | x << 4) & 0x0f0f0f0f0f0f0f0full; /* nibble k in byte k */
	/* '0' + x, and 'a' - '0' - 10 more where x > 9 */
	x +=
	    0x3030303030303030ull + ((x + 0x0606060606060606ull) >> 4 & 0x0101010101010101ull) * 39;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	x = __builtin_bswap64(x);
#endif
	return x;
}
#endif

/*
 * The 16 digits of v as hi and lo (8 bytes each, in memory order).  With
 * SSE2 (every x86-64), 16 nibbles become digits in one register.
 */
static void hex16(uint64_t v, uint64_t *hi, uint64_t *lo)
{
#if defined(__SSE2__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	__m128i x = _mm_cvtsi64_si128((long long)__builtin_bswap64(v)); /* most significant first */
	__m128i m = _mm_set1_epi8(0x0f);
	__m128i nib =
	    _mm_unpacklo_epi8(_mm_and_si128(_mm_srli_epi16(x, 4), m), _mm_and_si128(x, m));
	__m128i letters = _mm_and_si128(_mm_cmpgt_epi8(nib, _mm_set1_epi8(9)), _mm_set1_epi8(39));
	__m128i d = _mm_add_epi8(_mm_add_epi8(nib, _mm_set1_epi8('0')), letters);
	*hi = (uint64_t)_mm_cvtsi128_si64(d);
	*lo = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(d, d));
#else
	*hi = hex8((uint32_t)(v >> 32));
	*lo = hex8((uint32_t)v);
#endif
}

/* x with its bytes moved s bits toward lower addresses (EARLIER) or higher (LATER) */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define EARLIER(x, s) ((x) >> (s))
#define LATER(x, s)   ((x) << (s))
#else
#define EARLIER(x, s) ((x) << (s))
#define LATER(x, s)   ((x) >> (s))
#endif

/*
 * Stores the 16 digits hi and lo hold (in memory order) from digit z on at
 * p, in 16 bytes: those past the 16 - z digits are for the caller to
 * overwrite.  Shifted in registers: storing the digits to copy them out
 * again from an offset left every load waiting on the two stores.
 */
static void put_digits(char *p, uint64_t hi, uint64_t lo, unsigned z)
{
	uint64_t w0 = hi, w1 = lo;
	if (z >= 8) {
		w0 = EARLIER(lo, 8 * (z - 8));
	} else if (z) {
		w0 = EARLIER(hi, 8 * z) | LATER(lo, 64 - 8 * z);
		w1 = EARLIER(lo, 8 * z);
	}
	memcpy(p, &w0, 8);
	memcpy(p + 8, &w1, 8);
}

/*
 * "0x1a2b","0x..." as "0x%" PRIx64 prints them, without printf or a loop
 * per digit: raw stacks are most of a long recording's NDJSON.
 */
static void hex_frames(struct sw_buf *out, const uint64_t *frames, uint32_t depth)
{
	/* a frame is at most 21 bytes; the last writes 16 digits where it keeps fewer */
	if (sw_buf_reserve(out, (size_t)depth * 22 + 16) < 0)
		return;
	char *p = (char *)out->data + out->len;
	for (uint32_t k = 0; k < depth; k++) {
		uint64_t v = frames[k];
		unsigned n = (64 - (unsigned)__builtin_clzll(v | 1) + 3) / 4; /* digits */
		memcpy(p, k ? ",\"0x" : "\"0x\"", 4);
		p += k ? 4 : 3;
		uint64_t hi, lo;
		hex16(v, &hi, &lo);
		put_digits(p, hi, lo, 16 - n);
		p += n;
		*p++ = '"';
	}
	out->len = (size_t)(p - (char *)out->data);
}

static void json_flags(struct sw_buf *out, uint32_t flags)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} names[] = {
	    {SW_SAMPLE_TRUNCATED, "truncated"},
	    {SW_SAMPLE_LEAF_FROM_LR, "leaf_from_lr"},
	    {SW_SAMPLE_CFI, "cfi"},
	    {SW_SAMPLE_ASYNC, "async"},
	    {SW_SAMPLE_BLOCKED, "blocked"},
	    {SW_SAMPLE_SIGNAL_BLOCKED, "signal_blocked"},
	    {SW_SAMPLE_NO_SIGNAL, "no_signal"},
	    {SW_SAMPLE_PASSIVE, "passive"},
	    {SW_SAMPLE_SMALL_ALTSTACK, "small_altstack"},
	    {SW_SAMPLE_ELIDED, "elided"},
	    {SW_SAMPLE_COPY_SHORT, "copy_short"},
	};
	bool first = true;
	sw_buf_putc(out, '[');
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(flags & names[i].bit))
			continue;
		sw_buf_printf(out, "%s\"%s\"", first ? "" : ",", names[i].name);
		first = false;
	}
	sw_buf_putc(out, ']');
}

/* Returns the last append's result: the buffer reached its ceiling when it fails. */
static int json_images(struct sw_buf *out, const struct sw_stalls *c, const struct stack *st,
		       size_t n)
{
	const struct sw_stall_image *seen[256];
	size_t nseen = 0, all = sw_stalls_nimages(c);
	sw_buf_puts(out, "\"images\":[");
	/* once every image is in, no frame can add one: most stalls get there early */
	for (size_t i = 0; i < n && nseen < all && nseen < 256; i++) {
		/*
		 * Frames at the root end that the stack before has too add no
		 * image: the distinct stacks of a stall share most of theirs.
		 */
		const struct sw_stall_sample *x = st[i].first, *prev = i ? st[i - 1].first : NULL;
		uint32_t depth = x->depth;
		while (prev && depth && prev->depth >= x->depth - depth + 1 &&
		       x->frames[depth - 1] == prev->frames[prev->depth - (x->depth - depth) - 1])
			depth--;
		for (uint32_t f = 0; f < depth; f++) {
			uint64_t a = x->frames[f];
			const struct sw_stall_image *im = sw_stalls_image_at(c, a);
			size_t k = 0;
			while (k < nseen && seen[k] != im)
				k++;
			if (!im || k < nseen || nseen == 256)
				continue;
			seen[nseen++] = im;
			sw_buf_printf(out, "%s{\"index\":%u,\"path\":", nseen > 1 ? "," : "",
				      im->index);
			json_str(out, im->path);
			sw_buf_printf(out,
				      ",\"arch\":\"%s\",\"load_address\":\"0x%" PRIx64
				      "\",\"text_vmaddr\":\"0x%" PRIx64 "\",\"text_size\":%" PRIu64
				      ",\"%s\":\"",
				      im->arch, im->load_address, im->text_vmaddr, im->text_size,
				      im->id_kind == SW_ID_UUID ? "uuid" : "build_id");
			for (uint32_t b = 0; b < im->id_len; b++)
				sw_buf_printf(out, "%02x", im->id[b]);
			sw_buf_puts(out, "\"}");
		}
	}
	return sw_buf_putc(out, ']');
}

int sw_render_ndjson_stall(struct sw_buf *out, const struct sw_stalls *c, const struct sw_stall *s)
{
	sw_buf_printf(out, "{\"schema\":%d,\"type\":\"stall\",", SW_NDJSON_SCHEMA);
	int r = sw_render_ndjson_stall_fields(out, c, s);
	if (r >= 0)
		r = sw_buf_puts(out, "}\n");
	return r < 0 ? r : 0;
}

int sw_render_ndjson_stall_fields(struct sw_buf *out, const struct sw_stalls *c,
				  const struct sw_stall *s)
{
	const struct sw_stalls_info *in = sw_stalls_info(c);
	struct sw_stall_figures f;
	sw_stall_figures(c, s, &f);
	struct stack *st;
	size_t n;
	int r = group(s, &st, &n);
	if (r < 0)
		return r;
	sw_buf_printf(out, "\"id\":%" PRIu64 ",\"pid\":%" PRIu64 ",\"process\":", s->id, in->pid);
	json_str(out, in->process_name);
	sw_buf_puts(out, ",\"bundle_id\":");
	json_str(out, in->bundle_id);
	sw_buf_puts(out, ",\"bundle_version\":");
	if (in->bundle_version[0])
		json_str(out, in->bundle_version);
	else
		sw_buf_puts(out, "null");
	/* agents from before the late samples do not say: null */
	char late_rounds[24] = "null", late_ms[32] = "null";
	if (s->has_late) {
		snprintf(late_rounds, sizeof(late_rounds), "%" PRIu64, s->late);
		snprintf(late_ms, sizeof(late_ms), "%.3f", sw_ns_to_ms(s->late_ns));
	}
	sw_buf_printf(
	    out,
	    ",\"thread\":%" PRIu64 ",\"context\":\"%s\",\"start_ns\":%" PRIu64
	    ",\"monotonic_start_ns\":%" PRIu64 ",\"duration_ms\":%.3f"
	    ",\"sampled_ms\":%.3f,\"cpu_ms\":%.3f,\"samples\":%" PRIu64
	    ",\"interval_ms\":%.3f,\"dropped\":%" PRIu64 ",\"late_rounds\":%s,\"late_ms\":%s"
	    ",\"kind\":\"%s\",\"complete\":%s,\"truncated\":%s,\"unwinding_stopped\":%" PRIu64
	    ",\"sample_times_ms\":[",
	    s->thread_id, s->context, sw_stalls_ns(c, s->start_time),
	    in->clock_base + sw_stalls_ns(c, s->start_time), f.duration_ms, f.sampled_ms, f.cpu_ms,
	    f.main_samples, f.interval_ms, s->dropped, late_rounds, late_ms, f.kind,
	    s->ended ? "true" : "false", f.truncated ? "true" : "false", f.unwinding_stopped);
	bool first = true;
	for (size_t i = 0; i < s->nsamples; i++) {
		if (s->sample[i].thread_id != s->thread_id)
			continue;
		if (!first)
			sw_buf_putc(out, ',');
		sw_json_ms3(out, sw_stalls_ns(c, s->sample[i].time - s->start_time));
		first = false;
	}
	sw_buf_puts(out, "],\"stacks\":[");
	for (size_t i = 0; i < n; i++) {
		const struct sw_stall_sample *x = st[i].first;
		/*
		 * The stacks lie anywhere (in the recording's stack table, or in
		 * the stall's blocks): fetch the frames of the one after next,
		 * whose sample was fetched two stacks before.
		 */
		if (i + 4 < n)
			__builtin_prefetch(st[i + 4].first);
		if (i + 2 < n) {
			const struct sw_stall_sample *ahead = st[i + 2].first;
			const char *from = (const char *)ahead->frames;
			const char *to = (const char *)(ahead->frames + ahead->depth);
			for (; from < to; from += 64)
				__builtin_prefetch(from);
		}
		/* once a distinct stack: without printf */
		sw_buf_puts(out, i ? ",{\"count\":" : "{\"count\":");
		sw_buf_put_u64(out, st[i].count);
		sw_buf_puts(out, ",\"thread\":");
		sw_buf_put_u64(out, x->thread_id);
		sw_buf_puts(out, ",\"thread_name\":");
		json_str(out, x->thread_name);
		sw_buf_puts(out, ",\"flags\":");
		json_flags(out, x->flags);
		sw_buf_puts(out, ",\"frames\":[");
		hex_frames(out, x->frames, x->depth);
		sw_buf_puts(out, "]");
		if (x->flags & SW_SAMPLE_ELIDED)
			sw_buf_printf(out, ",\"elided\":%" PRIu32 ",\"elided_at\":%" PRIu32,
				      x->elided, x->elided_at);
		sw_buf_puts(out, "}");
	}
	sw_buf_puts(out, "],");
	r = json_images(out, c, st, n);
	free(st);
	return r < 0 ? r : 0;
}

int sw_render_ndjson_summary(struct sw_buf *out, const struct sw_stalls *c, uint64_t stalls)
{
	const struct sw_stalls_info *in = sw_stalls_info(c);
	sw_buf_printf(out, "{\"schema\":%d,\"type\":\"summary\",\"pid\":%" PRIu64 ",\"process\":",
		      SW_NDJSON_SCHEMA, in->pid);
	json_str(out, in->process_name);
	sw_buf_printf(out,
		      ",\"stalls\":%" PRIu64 ",\"agent_stalls\":%" PRIu64 ",\"samples\":%" PRIu64
		      ",\"dropped\":%" PRIu64 ",\"orphans\":%" PRIu64 ",\"agent_cpu_ms\":%.3f"
		      ",\"goodbye\":",
		      stalls, in->stats.stalls, in->stats.samples, in->stats.dropped, in->orphans,
		      sw_ns_to_ms(in->stats.agent_cpu_ns));
	if (in->have_goodbye)
		json_str(out, in->goodbye_text);
	else
		sw_buf_puts(out, "null");
	static const char *const watched[] = {"null", "\"watched\"", "\"never-waited\"",
					      "\"late\""};
	uint64_t first_ns;
	enum sw_stalls_watched w = sw_stalls_watched(c, &first_ns);
	sw_buf_printf(out, ",\"loop\":%s,\"loop_first_wait_ms\":", watched[w]);
	if (w == SW_WATCHED_YES || w == SW_WATCHED_LATE)
		sw_buf_printf(out, "%.3f", first_ns / 1e6);
	else
		sw_buf_puts(out, "null");
	sw_buf_puts(out, ",\"advice\":");
	if (sw_stalls_watched_advice(w))
		json_str(out, sw_stalls_watched_advice(w));
	else
		sw_buf_puts(out, "null");
	return sw_buf_puts(out, "}\n") < 0 ? -ENOMEM : 0;
}
