/*
 * --format folded: the collapsed-stack lines of Brendan Gregg's
 * stackcollapse scripts, which flamegraph.pl and inferno read:
 *
 *   #3;main;run_loop;compute 30000000
 *
 * one line per distinct call path (stacks merged by function, as trees
 * merge them), heaviest first, frames from the root separated by ';',
 * then a space and the path's self weight in microseconds, rounded (a count
 * for MetricKit trees without a duration).  Nanoseconds made flame graph
 * tools show "899,841,936 samples" for a second; microseconds keep the
 * samples' weights (MetricKit spreads a hang's duration over its paths)
 * and read as such with flamegraph.pl --countname=us.  The first frame is
 * the stall's label, so stalls stay apart and each line can be grepped
 * alone; with --thread all the second names the thread.  An unknown
 * function is "??? (libfoo.so)": there is no other place for its image.
 * --min-percent does not apply: the lines add up to the stall's sampled
 * time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"
#include "util/time-units.h"

#define NONE UINT32_MAX

static char folded_char(char c)
{
	if (c == ';')
		return ':';
	return c == '\n' || c == '\r' || c == '\t' ? ' ' : c;
}

/*
 * A frame as folded text: ';' would split it and a newline end the line.
 * Copied into room made for 64 bytes at once, not appended a byte at a
 * time (the names of every node of every tree are most of the output);
 * near the buffer's ceiling, a byte at a time.
 */
static int put_frame(struct sw_buf *b, const char *s)
{
	while (*s) {
		if (sw_buf_reserve(b, 64) < 0) {
			int r = 0;
			for (; *s && r >= 0; s++)
				r = sw_buf_putc(b, folded_char(*s));
			return r;
		}
		char *p = (char *)b->data + b->len, *end = p + 64;
		for (; p < end && *s; s++)
			*p++ = folded_char(*s);
		b->len = (size_t)(p - (char *)b->data);
	}
	return 0;
}

/*
 * The frames' names as folded prints them, each after its ';', kept for
 * the whole rendering: a frame's text is made once, not at each of the
 * thousands of lines that name it, and copied whole.  Frames met first in
 * a later stall are added as it comes.
 */
struct sw_folded {
	bool full;
	struct name_ref {
		uint32_t off, len;
	} * refs; /* by frame id */
	size_t nrefs;
	/* the texts, with COPY bytes past the last that a copy may read */
	struct sw_buf text;
	/*
	 * each text by the name it was made from (names are interned: one per
	 * text) and, for an unknown function, by its image
	 */
	struct seen_name {
		const char *name;
		uint32_t image; /* + 1; 0: the name alone */
		struct name_ref ref;
	} * seen;
	size_t nseen, seen_cap;
};

/* A text this long or shorter is copied as COPY bytes, its end overwritten by the next. */
#define COPY 32

int sw_folded_new(const struct sw_render_options *o, struct sw_folded **ret)
{
	struct sw_folded *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->full = o->tree.full_names;
	sw_buf_init(&c->text, 0);
	*ret = c;
	return 0;
}

void sw_folded_free(struct sw_folded *c)
{
	if (!c)
		return;
	free(c->refs);
	free(c->seen);
	sw_buf_finish(&c->text);
	free(c);
}

static size_t hash_name(const void *p, uint32_t image)
{
	uint64_t v = ((uintptr_t)p ^ (uint64_t)image << 48) * 0x9e3779b97f4a7c15ull;
	return (size_t)(v >> 32);
}

/*
 * The text of name, made when new; with image (+ 1; 0: none), of an
 * unknown function in that image.  Lines have no column for the image, as
 * trees do: "???" alone would make a stripped library's frames and an
 * app's one name, and their lines the same text.  "??? (libfoo.so)" keeps
 * them apart.
 */
static int name_text(struct sw_folded *c, const struct sw_profile *p, const char *name,
		     uint32_t image, struct name_ref *ret)
{
	if (c->nseen * 2 >= c->seen_cap) {
		size_t cap = c->seen_cap ? c->seen_cap * 2 : 1024;
		struct seen_name *t = calloc(cap, sizeof(*t));
		if (!t)
			return -ENOMEM;
		for (size_t i = 0; i < c->seen_cap; i++) {
			if (!c->seen[i].name)
				continue;
			size_t j = hash_name(c->seen[i].name, c->seen[i].image) & (cap - 1);
			while (t[j].name)
				j = (j + 1) & (cap - 1);
			t[j] = c->seen[i];
		}
		free(c->seen);
		c->seen = t;
		c->seen_cap = cap;
	}
	size_t j = hash_name(name, image) & (c->seen_cap - 1);
	for (; c->seen[j].name; j = (j + 1) & (c->seen_cap - 1))
		if (c->seen[j].name == name && c->seen[j].image == image) {
			*ret = c->seen[j].ref;
			return 0;
		}
	size_t off = c->text.len;
	int r = sw_buf_putc(&c->text, ';');
	if (r >= 0)
		r = put_frame(&c->text, name);
	const struct sw_tree_image *img = sw_profile_get_image(p, image);
	if (r >= 0 && img && (r = sw_buf_puts(&c->text, " (")) >= 0 &&
	    (r = put_frame(&c->text, img->name)) >= 0)
		r = sw_buf_putc(&c->text, ')');
	if (r < 0)
		return r;
	if (c->text.len > UINT32_MAX)
		return -E2BIG;
	*ret = (struct name_ref){(uint32_t)off, (uint32_t)(c->text.len - off)};
	c->seen[j] = (struct seen_name){name, image, *ret};
	c->nseen++;
	return 0;
}

/* Texts for every frame the profile has so far. */
static int name_frames(struct sw_folded *c, const struct sw_profile *p)
{
	size_t n = sw_profile_nframes(p);
	if (n <= c->nrefs)
		return 0;
	struct name_ref *refs = realloc(c->refs, n * sizeof(*refs));
	if (!refs)
		return -ENOMEM;
	c->refs = refs;
	int r = 0;
	for (; c->nrefs < n && r >= 0; c->nrefs++) {
		const struct sw_tree_frame *f = sw_profile_get_frame(p, (uint32_t)c->nrefs);
		bool unknown = f->image && !f->name && !f->linkage;
		r = name_text(c, p, sw_profile_frame_name(p, (uint32_t)c->nrefs, c->full),
			      unknown ? f->image : 0, &c->refs[c->nrefs]);
	}
	/* the bytes a copy reads past the last text: room, and zero */
	if (r >= 0 && (r = sw_buf_reserve(&c->text, COPY)) >= 0)
		memset(c->text.data + c->text.len, 0, COPY);
	return r;
}

/* The paths' order: heavier first, then as they first appeared. */
static int compare_lines(const void *a, const void *b)
{
	const struct sw_tree_path *x = *(const struct sw_tree_path *const *)a;
	const struct sw_tree_path *y = *(const struct sw_tree_path *const *)b;
	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return x < y ? -1 : x > y;
}

/*
 * The lines of a thread's paths, one per call path as a tree would merge
 * them (by function), heaviest first.  No tree is built: it would add only
 * an order, at the cost of every node of every path.
 */
static int paths_folded(struct sw_folded *c, struct sw_tree_paths *ps, const char *prefix,
			struct sw_buf *out)
{
	int r = sw_tree_paths_merge(ps);
	if (r < 0)
		return r;
	const struct sw_tree_path **order = malloc((ps->n + 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < ps->n; i++)
		order[i] = &ps->paths[i];
	qsort(order, ps->n, sizeof(*order), compare_lines);
	size_t prefix_len = strlen(prefix);
	const struct name_ref *refs = c->refs;
	for (size_t i = 0; i < ps->n && r >= 0; i++) {
		const struct sw_tree_path *path = order[i];
		if (i + 2 < ps->n) /* the frames of the line after next, 64 bytes at a time */
			for (uint32_t d = 0; d < order[i + 2]->depth; d += 16)
				__builtin_prefetch(order[i + 2]->path + d);
		uint64_t count = ps->counts_only ? path->weight
						 : (path->weight + SW_NS_PER_US / 2) / SW_NS_PER_US;
		if (!count)
			continue;
		/* the line's length first, then its texts into the room made */
		size_t len = prefix_len;
		for (uint32_t d = 0; d < path->depth; d++)
			len += refs[path->path[d]].len;
		if ((r = sw_buf_reserve(out, len + COPY)) < 0)
			break;
		uint8_t *q = out->data + out->len;
		memcpy(q, prefix, prefix_len);
		q += prefix_len;
		const uint8_t *text = c->text.data;
		for (uint32_t d = 0; d < path->depth; d++) {
			struct name_ref t = refs[path->path[d]];
			if (t.len <= COPY)
				memcpy(q, text + t.off, COPY);
			else
				memcpy(q, text + t.off, t.len);
			q += t.len;
		}
		out->len = (size_t)(q - out->data);
		if ((r = sw_buf_putc(out, ' ')) >= 0 && (r = sw_buf_put_u64(out, count)) >= 0)
			r = sw_buf_putc(out, '\n');
	}
	free(order);
	return r;
}

int sw_folded_stall(struct sw_folded *c, struct sw_profile *p, struct sw_tree_stall *s,
		    const struct sw_render_options *o, struct sw_buf *out)
{
	char label[96];
	sw_tree_stall_label(s, o->qualify, label, sizeof(label));
	int r = name_frames(c, p);
	if (r < 0)
		return r;
	struct sw_tree_paths *paths[64];
	long threads[64];
	int n = sw_render_stall_paths(p, s, &o->tree, paths, threads, 64);
	if (n < 0)
		return n;
	struct sw_buf prefix;
	sw_buf_init(&prefix, 8192);
	for (int k = 0; k < n && r >= 0; k++) {
		sw_buf_reset(&prefix);
		r = put_frame(&prefix, label);
		if (r >= 0 && o->tree.thread == SW_THREAD_ALL) {
			const struct sw_tree_thread *th = &s->threads[threads[k]];
			r = sw_buf_puts(&prefix, ";thread ");
			if (r >= 0)
				r = th->name[0] ? put_frame(&prefix, th->name)
						: sw_buf_printf(&prefix, "%llu",
								(unsigned long long)th->id);
		}
		if (r >= 0)
			r = paths_folded(c, paths[k], sw_buf_str(&prefix), out);
	}
	sw_buf_finish(&prefix);
	for (int k = 0; k < n; k++)
		sw_tree_paths_free(paths[k]);
	return r;
}

int sw_render_folded_stall(struct sw_profile *p, struct sw_tree_stall *s,
			   const struct sw_render_options *o, struct sw_buf *out)
{
	struct sw_folded *c = NULL;
	int r = sw_folded_new(o, &c);
	if (r >= 0)
		r = sw_folded_stall(c, p, s, o, out);
	sw_folded_free(c);
	return r;
}
