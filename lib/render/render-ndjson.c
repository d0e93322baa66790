/*
 * The NDJSON stall and summary objects (stallwatch-output(7) is their
 * schema).  The json format wraps the same objects in one document
 * (render-json.c), so both stay in step.
 *
 * Tree node weights are integers in the stall's "weight_unit" ("ns", or
 * "samples" for MetricKit trees without a duration), so they add up
 * exactly: a node's "total" is its "self" plus its children's totals.
 * Trees are flat preorder lists whose nodes name their parent's index.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json-write.h"
#include "render.h"

#define NONE UINT32_MAX
/* Text this long goes to the drain rather than through the output buffer. */
#define LONG_TEXT ((size_t)64 << 10)
#define TRY(x)                                                                                     \
	do {                                                                                       \
		int r_ = (x);                                                                      \
		if (r_ < 0)                                                                        \
			return r_;                                                                 \
	} while (0)

static int frame_fields(const struct sw_profile *p, const struct sw_tree_frame *f, bool full,
			int *first, struct sw_buf *b)
{
	const struct sw_tree_image *img = sw_profile_get_image(p, f->image);
	char scratch[32];
	TRY(sw_json_key(b, first, "symbol"));
	TRY(sw_json_string(b, sw_tree_frame_name(p, f, full, scratch, sizeof(scratch))));
	TRY(sw_json_key(b, first, "linkage"));
	TRY(sw_json_string(b, f->linkage));
	TRY(sw_json_key(b, first, "image"));
	TRY(sw_json_string(b, img ? img->name : NULL));
	TRY(sw_json_key(b, first, "file"));
	TRY(sw_json_string(b, f->file));
	TRY(sw_json_key(b, first, "line"));
	TRY(f->line ? sw_json_u64(b, f->line) : sw_buf_puts(b, "null"));
	TRY(sw_json_key(b, first, "address"));
	TRY(sw_json_hex(b, f->address));
	TRY(sw_json_key(b, first, "inlined"));
	TRY(sw_buf_puts(b, f->inlined ? "true" : "false"));
	if (!f->hinted)
		return 0;
	TRY(sw_json_key(b, first, "hint"));
	return sw_buf_puts(b, "true");
}

/*
 * A node: its frame, weights, and where it sits.  Trees are flat lists in
 * preorder, each node naming its parent's index, so that deep stacks (a
 * recursion 4,000 frames deep) do not nest JSON past what readers accept.
 */
static int node_json(const struct sw_tree *t, uint32_t i, const struct sw_render_options *o,
		     long parent, struct sw_buf *b)
{
	const struct sw_tree_node *n = &t->nodes[i];
	int first = 1;
	TRY(sw_buf_putc(b, '{'));
	TRY(frame_fields(t->profile, sw_profile_get_frame(t->profile, n->frame), o->tree.full_names,
			 &first, b));
	TRY(sw_json_key(b, &first, "total"));
	TRY(sw_json_u64(b, n->total));
	TRY(sw_json_key(b, &first, "self"));
	TRY(sw_json_u64(b, n->self));
	TRY(sw_json_key(b, &first, "samples"));
	TRY(sw_json_u64(b, n->samples));
	TRY(sw_json_key(b, &first, "depth"));
	TRY(sw_json_u64(b, n->depth));
	TRY(sw_json_key(b, &first, "parent"));
	TRY(parent < 0 ? sw_buf_puts(b, "null") : sw_json_u64(b, (uint64_t)parent));
	return sw_buf_putc(b, '}');
}

/* The visible nodes in preorder, without recursion. */
static int tree_json(const struct sw_tree *t, const struct sw_render_options *o, struct sw_buf *b)
{
	long *index = malloc((t->nnodes ? t->nnodes : 1) * sizeof(*index));
	if (!index)
		return -ENOMEM;
	int r = sw_buf_putc(b, '[');
	long count = 0;
	uint32_t i = t->first_root;
	while (i != NONE && r >= 0) {
		const struct sw_tree_node *n = &t->nodes[i];
		/* siblings are sorted heaviest first: an invisible one ends the level */
		if (sw_tree_node_visible(t, n, &o->tree)) {
			if (count)
				r = sw_buf_putc(b, ',');
			if (r >= 0)
				r = node_json(t, i, o, n->parent == NONE ? -1 : index[n->parent],
					      b);
			index[i] = count++;
			if (n->first_child != NONE) {
				i = n->first_child;
				continue;
			}
		} else {
			i = n->parent;
			if (i == NONE)
				break;
		}
		while (i != NONE && t->nodes[i].next_sibling == NONE)
			i = t->nodes[i].parent;
		if (i != NONE)
			i = t->nodes[i].next_sibling;
	}
	free(index);
	return r < 0 ? r : sw_buf_putc(b, ']');
}

static int heaviest_json(struct sw_profile *p, struct sw_tree_stall *s,
			 const struct sw_render_options *o, struct sw_buf *b)
{
	struct sw_tree *t;
	TRY(sw_tree_stall_default_tree(p, s, SW_TREE_EXPAND_HEAVIEST, &t));
	int r = sw_buf_putc(b, '[');
	bool any = false;
	for (uint32_t i = t->first_root; i != NONE && r >= 0; i = t->nodes[i].first_child) {
		int first = 1;
		if (any)
			r = sw_buf_putc(b, ',');
		any = true;
		if (r >= 0)
			r = sw_buf_putc(b, '{');
		if (r >= 0)
			r = frame_fields(p, sw_profile_get_frame(p, t->nodes[i].frame),
					 o->tree.full_names, &first, b);
		if (r >= 0)
			r = sw_buf_putc(b, '}');
	}
	sw_tree_free(t);
	return r < 0 ? r : sw_buf_putc(b, ']');
}

static int thread_fields(const struct sw_tree_thread *th, int *first, struct sw_buf *b)
{
	TRY(sw_json_key(b, first, "id"));
	TRY(sw_json_u64(b, th->id));
	TRY(sw_json_key(b, first, "name"));
	TRY(sw_json_string(b, th->name));
	TRY(sw_json_key(b, first, "main"));
	return sw_buf_puts(b, th->main ? "true" : "false");
}

static int stall_trees(struct sw_profile *p, struct sw_tree_stall *s,
		       const struct sw_render_options *o, int *first, struct sw_buf *b)
{
	struct sw_tree *trees[64];
	long threads[64];
	int n = sw_render_stall_trees(p, s, &o->tree, o->tree.min_percent, trees, threads, 64);
	if (n < 0)
		return n;
	int r = sw_json_key(b, first, "tree");
	if (r >= 0)
		r = n > 0 ? tree_json(trees[0], o, b) : sw_buf_puts(b, "[]");
	if (r >= 0 && o->tree.thread == SW_THREAD_ALL) {
		r = sw_json_key(b, first, "threads");
		if (r >= 0)
			r = sw_buf_putc(b, '[');
		for (int k = 0; k < n && r >= 0; k++) {
			int f2 = 1;
			r = sw_buf_puts(b, k ? ",{" : "{");
			if (r >= 0)
				r = thread_fields(&s->threads[threads[k]], &f2, b);
			if (r >= 0)
				r = sw_json_key(b, &f2, "total");
			if (r >= 0)
				r = sw_json_u64(b, trees[k]->all);
			if (r >= 0)
				r = sw_json_key(b, &f2, "tree");
			if (r >= 0)
				r = tree_json(trees[k], o, b);
			if (r >= 0)
				r = sw_buf_putc(b, '}');
		}
		if (r >= 0)
			r = sw_buf_putc(b, ']');
	}
	for (int k = 0; k < n; k++)
		sw_tree_free(trees[k]);
	return r;
}

static int header_fields(const char *type, int *first, struct sw_buf *b)
{
	TRY(sw_json_key(b, first, "schema"));
	TRY(sw_buf_printf(b, "%d", SW_RENDER_SCHEMA));
	TRY(sw_json_key(b, first, "type"));
	return sw_json_string(b, type);
}

static const struct sw_tree_thread *main_thread(const struct sw_tree_stall *s)
{
	for (uint32_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].main)
			return &s->threads[i];
	return NULL;
}

/* The fields every stall has, unless the source's own (extra_json) cover them. */
static int common_fields(const struct sw_tree_stall *s, int *first, struct sw_buf *b)
{
	const struct sw_tree_stall_info *in = &s->info;
	TRY(sw_json_key(b, first, "id"));
	TRY(sw_json_u64(b, in->id));
	TRY(sw_json_key(b, first, "thread"));
	TRY(sw_json_u64(b, in->thread_id));
	TRY(sw_json_key(b, first, "context"));
	TRY(sw_json_string(b, in->mode));
	TRY(sw_json_key(b, first, "duration_ms"));
	TRY(in->duration_ns ? sw_json_ms(b, in->duration_ns) : sw_buf_puts(b, "null"));
	TRY(sw_json_key(b, first, "sampled_ms"));
	TRY(in->counts_only ? sw_buf_puts(b, "null") : sw_json_ms(b, s->sampled));
	TRY(sw_json_key(b, first, "cpu_ms"));
	TRY(in->cpu_ns ? sw_json_ms(b, in->cpu_ns) : sw_buf_puts(b, "null"));
	TRY(sw_json_key(b, first, "samples"));
	TRY(sw_json_u64(b, in->samples ? in->samples : s->main_samples));
	TRY(sw_json_key(b, first, "dropped"));
	TRY(sw_json_u64(b, in->dropped));
	TRY(sw_json_key(b, first, "kind"));
	return sw_json_string(b, in->kind);
}

/*
 * Appends len bytes of text: a long text (a stall's raw stacks, megabytes)
 * goes to the drain after what b holds, not copied into b, when there is one.
 */
static int put_long(struct sw_buf *b, const struct sw_render_options *o, const char *text,
		    size_t len)
{
	if (!o->drain || len < LONG_TEXT)
		return sw_buf_append(b, text, len);
	int r = o->drain(o->drain_ctx, b);
	struct sw_buf whole = {.data = (uint8_t *)text, .len = len};
	return r < 0 ? r : o->drain(o->drain_ctx, &whole);
}

int sw_render_json_stall(struct sw_profile *p, struct sw_tree_stall *s,
			 const struct sw_render_options *o, bool with_header, struct sw_buf *b)
{
	const struct sw_tree_stall_info *in = &s->info;
	const struct sw_tree_thread *th = main_thread(s);
	char label[96];
	int first = 1;
	sw_tree_stall_label(s, true, label, sizeof(label));
	TRY(sw_buf_putc(b, '{'));
	if (with_header)
		TRY(header_fields("stall", &first, b));
	if (in->extra_json && in->extra_json[0]) {
		TRY(sw_buf_puts(b, first ? "" : ","));
		TRY(put_long(b, o, in->extra_json,
			     s->extra_json_len ? s->extra_json_len : strlen(in->extra_json)));
		first = 0;
	} else {
		TRY(common_fields(s, &first, b));
	}
	TRY(sw_json_key(b, &first, "source"));
	TRY(sw_json_string(b, in->source));
	TRY(sw_json_key(b, &first, "label"));
	TRY(sw_json_string(b, label));
	TRY(sw_json_key(b, &first, "thread_name"));
	TRY(sw_json_string(b, th ? th->name : ""));
	TRY(sw_json_key(b, &first, "start_wall_ns"));
	TRY(in->start_wall_ns ? sw_json_u64(b, in->start_wall_ns) : sw_buf_puts(b, "null"));
	TRY(sw_json_key(b, &first, "weight_unit"));
	TRY(sw_json_string(b, in->counts_only ? "samples" : "ns"));
	if (in->metadata_json) {
		TRY(sw_json_key(b, &first, "metadata"));
		TRY(sw_buf_puts(b, in->metadata_json));
	}
	if (sw_tree_options_structural_default(&o->tree)) {
		/* the tree shown below first: the signature and the heaviest path read it too */
		struct sw_tree *t;
		TRY(sw_tree_stall_default_tree(p, s, o->tree.min_percent, &t));
		sw_tree_free(t);
	}
	TRY(sw_json_key(b, &first, "signature"));
	TRY(sw_buf_printf(b, "\"%016llx\"", (unsigned long long)sw_tree_stall_signature(p, s)));
	TRY(sw_json_key(b, &first, "signature_version"));
	TRY(sw_json_u64(b, SW_SIGNATURE_VERSION));
	TRY(sw_json_key(b, &first, "heaviest"));
	TRY(heaviest_json(p, s, o, b));
	TRY(stall_trees(p, s, o, &first, b));
	return sw_buf_putc(b, '}');
}

int sw_render_json_summary(struct sw_profile *p, const struct sw_summary *sum,
			   const struct sw_render_options *o, bool with_header, struct sw_buf *b)
{
	int first = 1;
	char label[96];
	const char *extra = sw_profile_summary_extra(p);
	TRY(sw_buf_putc(b, '{'));
	if (with_header)
		TRY(header_fields("summary", &first, b));
	if (extra && extra[0]) {
		TRY(sw_buf_puts(b, first ? "" : ","));
		TRY(sw_buf_puts(b, extra));
		first = 0;
	} else {
		TRY(sw_json_key(b, &first, "stalls"));
		TRY(sw_json_u64(b, sum->stalls));
	}
	TRY(sw_json_key(b, &first, "weight_unit"));
	TRY(sw_json_string(b, sum->counts_only ? "samples" : "ns"));
	TRY(sw_json_key(b, &first, "total"));
	TRY(sw_json_u64(b, sum->total_ns));
	TRY(sw_json_key(b, &first, "worst"));
	if (sum->worst) {
		sw_tree_stall_label(sum->worst, true, label, sizeof(label));
		TRY(sw_json_string(b, label));
	} else {
		TRY(sw_buf_puts(b, "null"));
	}
	TRY(sw_json_key(b, &first, "signatures"));
	TRY(sw_json_u64(b, sum->nsignatures));
	TRY(sw_json_key(b, &first, "signature_version"));
	TRY(sw_json_u64(b, SW_SIGNATURE_VERSION));
	TRY(sw_json_key(b, &first, "top"));
	TRY(sw_buf_putc(b, '['));
	for (size_t i = 0; i < sum->ntop; i++) {
		const struct sw_summary_sig *g = &sum->top[i];
		int f2 = 1;
		TRY(sw_buf_puts(b, i ? ",{" : "{"));
		TRY(sw_json_key(b, &f2, "signature"));
		TRY(sw_buf_printf(b, "\"%016llx\"", (unsigned long long)g->signature));
		TRY(sw_json_key(b, &f2, "stalls"));
		TRY(sw_json_u64(b, g->stalls));
		TRY(sw_json_key(b, &f2, "total"));
		TRY(sw_json_u64(b, g->total_ns));
		TRY(sw_json_key(b, &f2, "example"));
		sw_tree_stall_label(g->example, true, label, sizeof(label));
		TRY(sw_json_string(b, label));
		TRY(sw_buf_putc(b, '}'));
	}
	(void)p;
	(void)o;
	return sw_buf_puts(b, "]}");
}
