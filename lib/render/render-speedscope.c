/*
 * --format speedscope: speedscope's own JSON file format
 * (https://www.speedscope.app/file-format-schema.json), one "sampled"
 * profile per stall (per stall and thread with --thread all), frames
 * shared between them.  Each distinct call path of the stall's tree is one
 * sample, root first, weighing its self time in nanoseconds (unit "none"
 * for trees of sample counts), so the weights add up to the tree's total.
 *
 * The document streams: its head and "profiles" go out stall by stall,
 * and "shared" with the frames met so far comes last (JSON member order
 * means nothing to readers), so memory holds the frames, not the samples.
 *
 * Samples stay in time order, so speedscope's "Time Order" view shows the
 * stall as it unfolded, with consecutive samples of one stack merged into
 * one (40,000 copies of a 4096-deep stack were a 330 MB file); frames are
 * shared per function (as tree nodes are), so one function at several lines
 * is one frame.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json-write.h"
#include "render.h"

#define NONE UINT32_MAX

struct sw_speedscope {
	struct sw_profile *p;
	struct sw_buf *out; /* where profiles go */
	bool begun;
	const struct sw_render_options *o;
	/* function -> the first frame id seen for it, + 1 */
	struct func_slot {
		uint64_t func;
		uint32_t frame;
	} * funcs;
	size_t nfuncs, funcs_cap;
	uint32_t *stack;
	/* a profile's samples, as where their texts lie (struct sample_text), and weights */
	struct sw_buf samples, weights;
	uint32_t *frame_index; /* profile frame id -> shared index + 1 */
	size_t nframes_alloc;
	uint32_t *canon; /* profile frame id -> canonical() + 1 */
	size_t canon_cap;
	uint32_t next;
	struct sw_buf frames; /* the shared frames' JSON */
	bool any_profile;
	/*
	 * Each distinct stack's sample text ("[0,3,7]") once written, by profile
	 * stack: a recording repeats its stacks many times, and rewriting and
	 * naming the frames of every sample again cost most of the time.
	 */
	struct stack_slot {
		uint32_t stack; /* + 1; 0: empty slot */
		uint32_t len;   /* 0: the options drop the stack */
		size_t off;     /* in texts */
	} * stacks;
	size_t nstacks, stacks_cap;
	struct sw_buf texts;
};

/* Grows a by-frame array, zero where new, to hold index id. */
static int cover(uint32_t **array, size_t *cap, uint32_t id)
{
	if (id < *cap)
		return 0;
	size_t n = *cap ? *cap : 256;
	while (n <= id)
		n *= 2;
	uint32_t *a = realloc(*array, n * sizeof(*a));
	if (!a)
		return -ENOMEM;
	memset(a + *cap, 0, (n - *cap) * sizeof(*a));
	*array = a;
	*cap = n;
	return 0;
}

static int shared_frame(struct sw_speedscope *c, uint32_t id, uint32_t *ret)
{
	if (cover(&c->frame_index, &c->nframes_alloc, id) < 0)
		return -ENOMEM;
	if (c->frame_index[id]) {
		*ret = c->frame_index[id] - 1;
		return 0;
	}
	const struct sw_tree_frame *f = sw_profile_get_frame(c->p, id);
	const struct sw_tree_image *img = sw_profile_get_image(c->p, f->image);
	char scratch[32];
	int r = sw_buf_puts(&c->frames, c->next ? ",{\"name\":" : "{\"name\":");
	if (r >= 0)
		r = sw_json_string(&c->frames, sw_tree_frame_name(c->p, f, c->o->tree.full_names,
								  scratch, sizeof(scratch)));
	/* speedscope shows the file; without one the image says where the code is */
	if (r >= 0 && (f->file || img))
		r = sw_buf_puts(&c->frames, ",\"file\":");
	if (r >= 0 && (f->file || img))
		r = sw_json_string(&c->frames, f->file ? f->file : img->name);
	if (r >= 0 && f->file && f->line)
		r = sw_buf_printf(&c->frames, ",\"line\":%u", f->line);
	if (r >= 0)
		r = sw_buf_putc(&c->frames, '}');
	if (r < 0)
		return r;
	c->frame_index[id] = ++c->next;
	*ret = c->next - 1;
	return 0;
}

/* The frame id that stands for frame's function (the first one met). */
static int canonical(struct sw_speedscope *c, uint32_t frame, uint32_t *ret)
{
	/* once per frame: a stack's frames would otherwise each be read again */
	if (cover(&c->canon, &c->canon_cap, frame) < 0)
		return -ENOMEM;
	if (c->canon[frame]) {
		*ret = c->canon[frame] - 1;
		return 0;
	}
	uint64_t func = sw_profile_frame_func(c->p, frame);
	if (c->nfuncs * 2 >= c->funcs_cap) {
		size_t cap = c->funcs_cap ? c->funcs_cap * 2 : 1024;
		struct func_slot *t = calloc(cap, sizeof(*t));
		if (!t)
			return -ENOMEM;
		for (size_t i = 0; i < c->funcs_cap; i++) {
			if (!c->funcs[i].frame)
				continue;
			size_t j = (c->funcs[i].func * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
			while (t[j].frame)
				j = (j + 1) & (cap - 1);
			t[j] = c->funcs[i];
		}
		free(c->funcs);
		c->funcs = t;
		c->funcs_cap = cap;
	}
	size_t j = (func * 0x9e3779b97f4a7c15ull >> 20) & (c->funcs_cap - 1);
	for (; c->funcs[j].frame; j = (j + 1) & (c->funcs_cap - 1))
		if (c->funcs[j].func == func) {
			*ret = c->funcs[j].frame - 1;
			c->canon[frame] = *ret + 1;
			return 0;
		}
	c->funcs[j] = (struct func_slot){func, frame + 1};
	c->nfuncs++;
	*ret = frame;
	c->canon[frame] = frame + 1;
	return 0;
}

/* Where a profile stack's probe starts in the cache of sample texts (of cap slots). */
static size_t stack_home(uint32_t stack, size_t cap)
{
	return (size_t)(stack * 0x9e3779b97f4a7c15ull >> 24) & (cap - 1);
}

/* The slot of a profile stack in the cache of sample texts; NULL when out of memory. */
static struct stack_slot *stack_slot(struct sw_speedscope *c, uint32_t stack)
{
	if (c->nstacks * 2 >= c->stacks_cap) {
		size_t cap = c->stacks_cap ? c->stacks_cap * 2 : 4096;
		struct stack_slot *t = calloc(cap, sizeof(*t));
		if (!t)
			return NULL;
		for (size_t i = 0; i < c->stacks_cap; i++) {
			if (!c->stacks[i].stack)
				continue;
			size_t j = stack_home(c->stacks[i].stack, cap);
			while (t[j].stack)
				j = (j + 1) & (cap - 1);
			t[j] = c->stacks[i];
		}
		free(c->stacks);
		c->stacks = t;
		c->stacks_cap = cap;
	}
	size_t j = stack_home(stack + 1, c->stacks_cap);
	while (c->stacks[j].stack && c->stacks[j].stack != stack + 1)
		j = (j + 1) & (c->stacks_cap - 1);
	return &c->stacks[j];
}

/* A stack's sample text, rewritten and named the first time it is met. */
static int stack_text(struct sw_speedscope *c, struct sw_tree_rewriter *rw, uint32_t stack,
		      const struct stack_slot **ret)
{
	struct stack_slot *slot = stack_slot(c, stack);
	if (!slot)
		return -ENOMEM;
	*ret = slot;
	if (slot->stack)
		return 0;
	size_t depth = sw_profile_stack(c->p, stack, c->stack, SW_TREE_MAX_DEPTH);
	long n = depth <= SW_TREE_MAX_DEPTH ? sw_tree_rewrite(rw, c->stack, depth) : -1;
	size_t off = c->texts.len;
	int r = 0;
	if (n > 0) {
		/* the frames' entries all at once: one by one below, each waited for its miss */
		uint32_t top = 0;
		for (long k = 0; k < n; k++)
			top = c->stack[k] > top ? c->stack[k] : top;
		r = cover(&c->canon, &c->canon_cap, top);
		if (r >= 0)
			r = cover(&c->frame_index, &c->nframes_alloc, top);
		for (long k = 0; k < n && r >= 0; k++) {
			__builtin_prefetch(&c->canon[c->stack[k]]);
			__builtin_prefetch(&c->frame_index[c->stack[k]]);
		}
		if (r >= 0)
			r = sw_buf_putc(&c->texts, '[');
	}
	for (long k = 0; k < n && r >= 0; k++) {
		uint32_t id, idx;
		r = canonical(c, c->stack[k], &id);
		if (r >= 0)
			r = shared_frame(c, id, &idx);
		if (r >= 0 && k)
			r = sw_buf_putc(&c->texts, ',');
		if (r >= 0)
			r = sw_buf_put_u64(&c->texts, idx);
	}
	if (r >= 0 && n > 0)
		r = sw_buf_putc(&c->texts, ']');
	if (r < 0)
		return r;
	*slot = (struct stack_slot){stack + 1, (uint32_t)(c->texts.len - off), off};
	c->nstacks++;
	return 0;
}

/* How many samples ahead profile_json() fetches a sample's slot in the cache of texts. */
#define SLOT_AHEAD 8

/* A sample of a profile: its text, len bytes at off in texts. */
struct sample_text {
	size_t off, len;
};

/*
 * Appends a sample and its weight.  The text stays where it is, and is
 * copied once, into the output: it is most of the profile.
 */
static int sample_out(struct sw_speedscope *c, size_t off, size_t len, uint64_t weight, bool comma)
{
	struct sample_text st = {off, len};
	int r = sw_buf_append(&c->samples, &st, sizeof(st));
	if (r >= 0 && comma)
		r = sw_buf_putc(&c->weights, ',');
	return r < 0 ? r : sw_buf_put_u64(&c->weights, weight);
}

/*
 * One sampled profile: the stall's samples on thread, in time order;
 * consecutive samples of one stack are one sample weighing their sum, so a
 * thread that stays in one deep stack costs one copy of it.
 */
static int profile_json(struct sw_speedscope *c, struct sw_tree_stall *s, long thread,
			struct sw_tree_rewriter *rw, bool counts, const char *name)
{
	sw_buf_reset(&c->samples);
	sw_buf_reset(&c->weights);
	uint64_t total = 0, pending = 0;
	size_t last = SIZE_MAX, last_len = 0; /* the text of the sample pending */
	bool any = false;
	int r = 0;
	for (size_t i = 0; i < s->nsamples && r >= 0; i++) {
		const struct sw_tree_sample *smp = &s->samples[i];
		/* the cache's slots are read at random: a sample's is fetched SLOT_AHEAD before */
		if (i + SLOT_AHEAD < s->nsamples && c->stacks_cap)
			__builtin_prefetch(&c->stacks[stack_home(
			    s->samples[i + SLOT_AHEAD].stack + 1, c->stacks_cap)]);
		if (!sw_tree_sample_selected(s, smp, &c->o->tree, thread))
			continue;
		const struct stack_slot *t;
		r = stack_text(c, rw, smp->stack, &t);
		if (r < 0 || !t->len)
			continue;
		total += smp->weight;
		if (t->off == last) { /* the same stack again: one sample, heavier */
			pending += smp->weight;
			continue;
		}
		if (last != SIZE_MAX) {
			r = sample_out(c, last, last_len, pending, any);
			any = true;
		}
		last = t->off;
		last_len = t->len;
		pending = smp->weight;
	}
	if (r >= 0 && last != SIZE_MAX)
		r = sample_out(c, last, last_len, pending, any);
	struct sw_buf *b = c->out;
	if (r >= 0)
		r = sw_buf_puts(b, c->any_profile ? ",{\"type\":\"sampled\",\"name\":"
						  : "{\"type\":\"sampled\",\"name\":");
	c->any_profile = true;
	if (r >= 0)
		r = sw_json_string(b, name);
	if (r >= 0)
		r = sw_buf_printf(
		    b, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%llu,\"samples\":[",
		    counts ? "none" : "nanoseconds", (unsigned long long)total);
	const struct sample_text *st = (const struct sample_text *)c->samples.data;
	size_t n = c->samples.len / sizeof(*st);
	for (size_t i = 0; i < n && r >= 0; i++) {
		if (i)
			r = sw_buf_putc(b, ',');
		if (r >= 0)
			r = sw_buf_append(b, c->texts.data + st[i].off, st[i].len);
	}
	if (r >= 0)
		r = sw_buf_puts(b, "],\"weights\":[");
	if (r >= 0)
		r = sw_buf_append(b, c->weights.data, c->weights.len);
	return r < 0 ? r : sw_buf_puts(b, "]}");
}

static int stall_profiles(struct sw_speedscope *c, struct sw_tree_stall *s)
{
	struct sw_tree *trees[64];
	long threads[64];
	int n = sw_render_stall_trees(c->p, s, &c->o->tree, SW_TREE_EXPAND_HEAVIEST, trees, threads,
				      64); /* totals only */
	if (n < 0)
		return n;
	char label[96], w[32], name[512];
	sw_tree_stall_label(s, true, label, sizeof(label));
	int r = 0;
	struct sw_tree_rewriter *rw;
	r = sw_tree_rewriter_new(c->p, &c->o->tree, &rw);
	for (int k = 0; k < n && r >= 0; k++) {
		sw_render_weight(trees[k]->all, trees[k]->counts_only, w, sizeof(w));
		const struct sw_tree_thread *th = threads[k] >= 0 ? &s->threads[threads[k]] : NULL;
		if (th && !th->main)
			snprintf(name, sizeof(name), "%s %s %s thread %s", label, w, s->info.kind,
				 th->name[0] ? th->name : "?");
		else
			snprintf(name, sizeof(name), "%s %s %s main thread", label, w,
				 s->info.kind);
		r = profile_json(c, s, threads[k], rw, trees[k]->counts_only, name);
	}
	sw_tree_rewriter_free(rw);
	for (int k = 0; k < n; k++)
		sw_tree_free(trees[k]);
	return r;
}

int sw_speedscope_new(const struct sw_render_options *o, struct sw_speedscope **ret)
{
	struct sw_speedscope *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->o = o;
	sw_buf_init(&c->frames, 0);
	sw_buf_init(&c->samples, 0);
	sw_buf_init(&c->weights, 0);
	sw_buf_init(&c->texts, 0);
	c->stack = malloc(SW_TREE_MAX_DEPTH * sizeof(*c->stack));
	if (!c->stack) {
		free(c);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

void sw_speedscope_free(struct sw_speedscope *c)
{
	if (!c)
		return;
	sw_buf_finish(&c->frames);
	free(c->frame_index);
	free(c->canon);
	free(c->stack);
	free(c->funcs);
	sw_buf_finish(&c->samples);
	sw_buf_finish(&c->weights);
	sw_buf_finish(&c->texts);
	free(c->stacks);
	free(c);
}

static int begin(struct sw_speedscope *c, struct sw_buf *out)
{
	if (c->begun)
		return 0;
	c->begun = true;
	return sw_buf_puts(out,
			   "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
			   "\"profiles\":[");
}

int sw_speedscope_stall(struct sw_speedscope *c, struct sw_profile *p, struct sw_tree_stall *s,
			struct sw_buf *out)
{
	c->p = p;
	c->out = out;
	int r = begin(c, out);
	return r < 0 ? r : stall_profiles(c, s);
}

int sw_speedscope_end(struct sw_speedscope *c, struct sw_buf *out)
{
	int r = begin(c, out);
	if (r >= 0)
		r = sw_buf_puts(out, "],\"shared\":{\"frames\":[");
	if (r >= 0)
		r = sw_buf_append(out, c->frames.data, c->frames.len);
	if (r >= 0)
		r = sw_buf_printf(out,
				  "]},\"name\":\"stallwatch\",\"activeProfileIndex\":0,"
				  "\"exporter\":\"stallwatch %s\"}\n",
				  c->o->tool_version);
	return r;
}

int sw_render_speedscope(struct sw_profile *p, const struct sw_render_options *o,
			 struct sw_buf *out)
{
	struct sw_speedscope *c = NULL;
	int r = sw_speedscope_new(o, &c);
	for (size_t i = 0; i < sw_profile_nstalls(p) && r >= 0; i++)
		r = sw_speedscope_stall(c, p, sw_profile_stall(p, i), out);
	if (r >= 0)
		r = sw_speedscope_end(c, out);
	sw_speedscope_free(c);
	return r;
}
