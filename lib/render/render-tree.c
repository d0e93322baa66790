/*
 * The default output: Instruments-style call trees for people, one node a
 * line.  Every line starts with the stall's label ("#3", "run2#3") so that
 * grep keeps each line's context:
 *
 *   #3  412.0 ms  busy  main thread  mode poll  41 samples  sig 9f2c...
 *   #3     412.0 ms  100.0%      0.0 ms  main  (demo)  demo.c:88
 *   #3     400.0 ms   97.1%     10.0 ms    compute  (demo)  demo.c:40
 *
 * Columns: total weight, share of the thread's sampled time, self weight,
 * the symbol indented two spaces a level, its image, its file and line.
 * Past SW_RENDER_MAX_INDENT levels the indentation stops growing and the
 * symbol is preceded by its depth, "[depth 80] ".
 *
 * --invert is Instruments' Invert Call Tree: a root is a function the
 * samples ended in, so all its time is its own (self = total), and the
 * callers beneath it show the path to it, with no self time of theirs.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "render.h"

#define NONE UINT32_MAX

#define C_BOLD  "\033[1m"
#define C_DIM   "\033[2m"
#define C_CYAN  "\033[36m"
#define C_RESET "\033[0m"

static const char *thread_desc(const struct sw_tree_thread *th, char *buf, size_t size)
{
	char clean[256];
	if (th->main && (!th->name[0] || !strcmp(th->name, "main")))
		snprintf(buf, size, "main thread tid %llu", (unsigned long long)th->id);
	else if (th->name[0])
		snprintf(buf, size, "thread '%s' tid %llu",
			 sw_render_clean(th->name, clean, sizeof(clean)),
			 (unsigned long long)th->id);
	else
		snprintf(buf, size, "thread tid %llu", (unsigned long long)th->id);
	return buf;
}

static int header(struct sw_profile *p, struct sw_tree_stall *s, const struct sw_render_options *o,
		  const char *label, struct sw_buf *out)
{
	char w[32];
	const struct sw_tree_stall_info *in = &s->info;
	bool counts = in->counts_only;
	sw_render_weight(counts || !in->duration_ns ? s->sampled : in->duration_ns, counts, w,
			 sizeof(w));
	/* the stalled thread is the one running the main loop, whatever its name */
	const char *who = "main thread";
	int r =
	    sw_buf_printf(out, "%s%s  %s  %s  %s", o->color ? C_BOLD : "", label, w, in->kind, who);
	char clean[256];
	if (r >= 0 && in->mode && in->mode[0])
		r = sw_buf_printf(out, "  mode %s",
				  sw_render_clean(in->mode, clean, sizeof(clean)));
	uint64_t nsamples = in->samples ? in->samples : s->main_samples;
	if (r >= 0 && !counts)
		r = sw_buf_printf(out, "  %llu sample%s", (unsigned long long)nsamples,
				  nsamples == 1 ? "" : "s");
	if (r >= 0 && in->cpu_ns) {
		sw_render_weight(in->cpu_ns, false, w, sizeof(w));
		r = sw_buf_printf(out, "  cpu %s", w);
	}
	if (r >= 0 && in->dropped)
		r = sw_buf_printf(out, "  dropped %llu", (unsigned long long)in->dropped);
	if (r >= 0 && in->late) {
		sw_render_weight(in->late_ns, false, w, sizeof(w));
		r = sw_buf_printf(out, "  late %llu (%s)", (unsigned long long)in->late, w);
	}
	if (r >= 0)
		r = sw_buf_printf(out, "  sig %016llx%s\n",
				  (unsigned long long)sw_tree_stall_signature(p, s),
				  o->color ? C_RESET : "");
	return r;
}

/* s right-aligned in width columns, after gap spaces. */
static int right(struct sw_buf *out, size_t gap, const char *s, size_t width)
{
	size_t len = strlen(s);
	int r = sw_buf_pad(out, ' ', gap + (len < width ? width - len : 0));
	return r < 0 ? r : sw_buf_append(out, s, len);
}

/*
 * "LABEL  %12s %6.1f%%  %12s  " without printf, which was most of the time
 * of printing a deep tree.
 */
static int columns(struct sw_buf *out, const char *label, const char *total, double pct,
		   const char *self)
{
	char p[24], *e = p + sizeof(p);
	long long tenths = llrint(pct * 10.0);
	if (tenths < 0 || tenths > 9999999) {
		snprintf(p, sizeof(p), "%.1f%%", pct);
	} else {
		*--e = '\0';
		*--e = '%';
		*--e = (char)('0' + tenths % 10);
		*--e = '.';
		long long v = tenths / 10;
		do
			*--e = (char)('0' + v % 10);
		while (v /= 10);
		memmove(p, e, (size_t)(p + sizeof(p) - e));
	}
	int r = sw_buf_puts(out, label);
	if (r >= 0)
		r = right(out, 2, total, 12);
	if (r >= 0)
		r = right(out, 1, p, 7);
	if (r >= 0)
		r = right(out, 2, self, 12);
	return r < 0 ? r : sw_buf_pad(out, ' ', 2);
}

static int node_line(const struct sw_tree *t, uint32_t i, const struct sw_render_options *o,
		     const char *label, bool heavy, struct sw_buf *out)
{
	const struct sw_tree_node *n = &t->nodes[i];
	const struct sw_profile *p = t->profile;
	const struct sw_tree_frame *f = sw_profile_get_frame(p, n->frame);
	const struct sw_tree_image *img = sw_profile_get_image(p, f->image);
	char total[32], self[32], scratch[32], c1[4096], c2[1024], c3[1024];
	sw_render_weight(n->total, t->counts_only, total, sizeof(total));
	uint64_t own = o->tree.invert ? (n->depth == 0 ? n->total : 0) : n->self;
	sw_render_weight(own, t->counts_only, self, sizeof(self));
	double pct = t->all ? 100.0 * (double)n->total / (double)t->all : 0.0;
	const char *name = sw_render_clean(
	    sw_tree_frame_name(p, f, o->tree.full_names, scratch, sizeof(scratch)), c1, sizeof(c1));
	const char *b = o->color && heavy ? C_BOLD : "", *e = o->color ? C_RESET : "";
	bool deep = n->depth > SW_RENDER_MAX_INDENT;
	int r = columns(out, label, total, pct, self);
	if (r >= 0)
		r = sw_buf_pad(out, ' ', (deep ? SW_RENDER_MAX_INDENT : n->depth) * 2);
	/* pieces, not printf: a deep tree prints millions of these lines */
	if (r >= 0 && deep && (r = sw_buf_puts(out, "[depth ")) >= 0 &&
	    (r = sw_buf_put_u64(out, n->depth)) >= 0)
		r = sw_buf_puts(out, "] ");
	if (r >= 0)
		r = sw_buf_puts_all(out, b, name, f->inlined ? " [inlined]" : "",
				    o->color && heavy ? C_RESET : "", NULL);
	if (r >= 0 && img)
		r = sw_buf_puts_all(out, "  ", o->color ? C_DIM : "", "(",
				    sw_render_clean(img->name, c2, sizeof(c2)), ")", e, NULL);
	if (r >= 0 && f->file &&
	    (r = sw_buf_puts_all(out, "  ", o->color ? C_CYAN : "",
				 sw_render_clean(sw_render_file_name(f->file), c3, sizeof(c3)), ":",
				 NULL)) >= 0 &&
	    (r = sw_buf_put_u64(out, f->line)) >= 0)
		r = sw_buf_puts(out, e);
	return r < 0 ? r : sw_buf_putc(out, '\n');
}

/* Preorder over the visible nodes, without recursion. */
static int tree_lines(const struct sw_tree *t, const struct sw_render_options *o, const char *label,
		      struct sw_buf *out)
{
	uint32_t heavy = t->first_root;
	int r = 0;
	for (uint32_t i = t->first_root; i != NONE && r >= 0;) {
		bool visible = sw_tree_node_visible(t, &t->nodes[i], &o->tree);
		if (visible) {
			bool on_heavy = i == heavy;
			if (on_heavy)
				heavy = t->nodes[i].first_child;
			r = node_line(t, i, o, label, on_heavy, out);
		}
		i = sw_tree_preorder_next(t, i, visible);
	}
	return r;
}

int sw_render_tree_stall(struct sw_profile *p, struct sw_tree_stall *s,
			 const struct sw_render_options *o, struct sw_buf *out)
{
	char label[96], th[160], w[32];
	sw_tree_stall_label(s, o->qualify, label, sizeof(label));
	struct sw_tree *trees[64];
	long threads[64];
	/* the trees first: the header's signature reads the same tree, not one of its own */
	int n = sw_render_stall_trees(p, s, &o->tree, o->tree.min_percent, trees, threads, 64);
	if (n < 0)
		return n;
	int r = header(p, s, o, label, out);
	for (int k = 0; k < n && r >= 0; k++) {
		const struct sw_tree *t = trees[k];
		if (threads[k] >= 0 && (n > 1 || !s->threads[threads[k]].main)) {
			sw_render_weight(t->all, t->counts_only, w, sizeof(w));
			r = sw_buf_printf(out, "%s  %s  %s\n", label,
					  thread_desc(&s->threads[threads[k]], th, sizeof(th)), w);
		}
		bool filtered = o->tree.focus || o->tree.exclude;
		bool main = threads[k] < 0 || s->threads[threads[k]].main;
		/* samples without a stack weigh in the total but are under no root */
		uint64_t rooted = 0;
		for (uint32_t i = t->first_root; i != NONE; i = t->nodes[i].next_sibling)
			rooted += t->nodes[i].total;
		bool why = !filtered && main && s->info.unsampled;
		if (r >= 0 && t->first_root == NONE && why) {
			r = sw_buf_printf(out, "%s  (not sampled: %s)\n", label, s->info.unsampled);
		} else if (r >= 0 && t->first_root == NONE) {
			r = sw_buf_printf(out, "%s  (no samples%s)\n", label,
					  t->all && filtered ? " left by --focus/--exclude" : "");
		} else if (r >= 0 && why && t->total > rooted) {
			/* a few stacks (read while the thread was in a system call), the rest not
			 */
			sw_render_weight(t->total - rooted, t->counts_only, w, sizeof(w));
			r = sw_buf_printf(out, "%s  (%s not sampled: %s)\n", label, w,
					  s->info.unsampled);
		}
		if (r >= 0)
			r = tree_lines(t, o, label, out);
	}
	for (int k = 0; k < n; k++)
		sw_tree_free(trees[k]);
	return r;
}
