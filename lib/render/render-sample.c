/*
 * --format sample: the call-graph text of macOS `sample` and `spindump`,
 * so habits and scripts made for those keep working:
 *
 *   Call graph:
 *       41 Thread_100   main thread
 *       + 41 main  (in demo) + 24  [0x5555000011a0]  demo.c:88
 *       +   30 compute(int)  (in demo) + 16  [0x555500001010]  demo.c:40
 *       +   ! 20 ...
 *
 * Counts are samples, as in `sample`.  Each line's gutter holds one cell a
 * level; a cell shows the level's marker (cycling "+", "!", ":", "|") where
 * the tree branches below or continues after it, so the nesting can be
 * followed by eye; past SW_RENDER_MAX_INDENT levels the gutter stops growing
 * and the line names its depth, "[depth 80] ".  A "Sort by top of stack" list of the leaf functions
 * follows, as `sample` prints it.
 */
#include <stdio.h>
#include <string.h>

#include "render.h"

#define NONE UINT32_MAX

static const char markers[] = "+!:|";

/*
 * The gutter of node i, whose ancestors at each level (up to the deepest
 * level drawn) are in chain[]: the walk in call_graph() keeps it, so a line
 * costs its width, not its depth.
 */
static int gutter(const struct sw_tree *t, uint32_t i, const uint32_t *chain, struct sw_buf *out)
{
	const struct sw_tree_node *n = &t->nodes[i];
	uint32_t d = n->depth < SW_RENDER_MAX_INDENT ? n->depth : SW_RENDER_MAX_INDENT;
	char cells[4 + 2 * (SW_RENDER_MAX_INDENT + 1)], *c = cells;
	memset(c, ' ', 4);
	c += 4;
	for (uint32_t l = 0; l <= d; l++) {
		const struct sw_tree_node *a = &t->nodes[chain[l]];
		uint32_t first =
		    a->parent == NONE ? t->first_root : t->nodes[a->parent].first_child;
		bool branched = first != chain[l] || a->next_sibling != NONE;
		bool show = l == 0 || (l < d ? a->next_sibling != NONE : branched);
		*c++ = show ? markers[l % 4] : ' ';
		*c++ = ' ';
	}
	int r = sw_buf_append(out, cells, (size_t)(c - cells));
	if (r >= 0 && n->depth > SW_RENDER_MAX_INDENT && (r = sw_buf_puts(out, "[depth ")) >= 0 &&
	    (r = sw_buf_put_u64(out, n->depth)) >= 0)
		r = sw_buf_puts(out, "] ");
	return r;
}

static int node_line(const struct sw_tree *t, uint32_t i, const uint32_t *chain,
		     const struct sw_render_options *o, struct sw_buf *out)
{
	const struct sw_tree_node *n = &t->nodes[i];
	const struct sw_profile *p = t->profile;
	const struct sw_tree_frame *f = sw_profile_get_frame(p, n->frame);
	const struct sw_tree_image *img = sw_profile_get_image(p, f->image);
	char scratch[32], c1[4096], c2[1024], c3[1024];
	/* pieces, not printf: a deep tree prints millions of these lines */
	int r = gutter(t, i, chain, out);
	if (r >= 0 && (r = sw_buf_put_u64(out, t->counts_only ? n->total : n->samples)) >= 0)
		r = sw_buf_puts_all(out, " ",
				    sw_render_clean(sw_tree_frame_name(p, f, o->tree.full_names,
								       scratch, sizeof(scratch)),
						    c1, sizeof(c1)),
				    NULL);
	if (r >= 0 && sw_tree_frame_is_stopped(f))
		return sw_buf_putc(out, '\n'); /* a marker, not a place in the program */
	if (r >= 0)
		r = sw_buf_puts_all(out, "  (in ",
				    img ? sw_render_clean(img->name, c2, sizeof(c2)) : "???", ")",
				    NULL);
	if (r >= 0 && f->has_offset && (r = sw_buf_puts(out, " + ")) >= 0)
		r = sw_buf_put_u64(out, f->offset);
	if (r >= 0 && (r = sw_buf_puts(out, "  [")) >= 0 &&
	    (r = sw_buf_put_hex(out, f->address)) >= 0)
		r = sw_buf_putc(out, ']');
	if (r >= 0 && f->file &&
	    (r = sw_buf_puts_all(out, "  ",
				 sw_render_clean(sw_render_file_name(f->file), c3, sizeof(c3)), ":",
				 NULL)) >= 0)
		r = sw_buf_put_u64(out, f->line);
	return r < 0 ? r : sw_buf_putc(out, '\n');
}

static int call_graph(const struct sw_tree *t, const struct sw_render_options *o,
		      struct sw_buf *out)
{
	uint32_t chain[SW_RENDER_MAX_INDENT + 1];
	int r = 0;
	for (uint32_t i = t->first_root; i != NONE && r >= 0;) {
		bool visible = sw_tree_node_visible(t, &t->nodes[i], &o->tree);
		if (t->nodes[i].depth <= SW_RENDER_MAX_INDENT)
			chain[t->nodes[i].depth] = i; /* preorder: its ancestors came before */
		if (visible)
			r = node_line(t, i, chain, o, out);
		i = sw_tree_preorder_next(t, i, visible);
	}
	return r;
}

/* The leaf functions, most samples first: the roots of the inverted tree. */
static int top_of_stack(struct sw_profile *p, struct sw_tree_stall *s, long thread,
			const struct sw_render_options *o, struct sw_buf *out)
{
	struct sw_tree_options inv = o->tree;
	inv.invert = true;
	inv.max_depth = 1;
	struct sw_tree *t;
	int r = sw_tree_build(p, &s, 1, &inv, thread, &t);
	if (r < 0)
		return r;
	r = sw_buf_puts(out, "\nSort by top of stack, same collapsed:\n");
	for (uint32_t i = t->first_root; i != NONE && r >= 0; i = t->nodes[i].next_sibling) {
		const struct sw_tree_frame *f = sw_profile_get_frame(p, t->nodes[i].frame);
		const struct sw_tree_image *img = sw_profile_get_image(p, f->image);
		char scratch[32], c1[4096], c2[1024];
		if (!sw_tree_node_visible(t, &t->nodes[i], &o->tree))
			break;
		r = sw_buf_printf(
		    out, "        %s  (in %s)        %llu\n",
		    sw_render_clean(
			sw_tree_frame_name(p, f, o->tree.full_names, scratch, sizeof(scratch)), c1,
			sizeof(c1)),
		    img ? sw_render_clean(img->name, c2, sizeof(c2)) : "???",
		    (unsigned long long)(t->counts_only ? t->nodes[i].total : t->nodes[i].samples));
	}
	sw_tree_free(t);
	return r;
}

int sw_render_sample_stall(struct sw_profile *p, struct sw_tree_stall *s,
			   const struct sw_render_options *o, struct sw_buf *out)
{
	char label[96], w[32], clean[256];
	sw_tree_stall_label(s, o->qualify, label, sizeof(label));
	const struct sw_tree_stall_info *in = &s->info;
	struct sw_tree *trees[64];
	long threads[64];
	/* the trees first: the signature reads the same tree, not one of its own */
	int n = sw_render_stall_trees(p, s, &o->tree, o->tree.min_percent, trees, threads, 64);
	if (n < 0)
		return n;
	sw_render_weight(in->counts_only || !in->duration_ns ? s->sampled : in->duration_ns,
			 in->counts_only, w, sizeof(w));
	int r = sw_buf_printf(out, "Stall %s: %s %s, main thread", label, w, in->kind);
	if (r >= 0 && in->mode)
		r = sw_buf_printf(out, ", mode %s",
				  sw_render_clean(in->mode, clean, sizeof(clean)));
	if (r >= 0)
		r = sw_buf_printf(out, ", signature %016llx\n\nCall graph:\n",
				  (unsigned long long)sw_tree_stall_signature(p, s));
	for (int k = 0; k < n && r >= 0; k++) {
		const struct sw_tree_thread *th = NULL;
		for (uint32_t i = 0; i < s->nthreads; i++)
			if (threads[k] >= 0 ? (long)i == threads[k] : s->threads[i].main)
				th = &s->threads[i];
		r = sw_buf_printf(
		    out, "    %llu Thread_%llu   %s\n", (unsigned long long)trees[k]->nsamples,
		    (unsigned long long)(th ? th->id : in->thread_id),
		    th && !th->main && th->name[0] ? sw_render_clean(th->name, clean, sizeof(clean))
						   : (th && !th->main ? "" : "main thread"));
		if (r >= 0)
			r = call_graph(trees[k], o, out);
		if (r >= 0)
			r = top_of_stack(p, s, threads[k], o, out);
	}
	for (int k = 0; k < n; k++)
		sw_tree_free(trees[k]);
	return r < 0 ? r : sw_buf_putc(out, '\n');
}
