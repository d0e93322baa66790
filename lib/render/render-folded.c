/*
 * --format folded: the collapsed-stack lines of Brendan Gregg's
 * stackcollapse scripts, which flamegraph.pl and inferno read:
 *
 *   #3;main;run_loop;compute 30000000
 *
 * one line per distinct call path, frames from the root separated by ';',
 * then a space and the path's self weight in microseconds, rounded (a count
 * for MetricKit trees without a duration).  Nanoseconds made flame graph
 * tools show "899,841,936 samples" for a second; microseconds keep the
 * samples' weights (MetricKit spreads a hang's duration over its paths)
 * and read as such with flamegraph.pl --countname=us.  The first frame is
 * the stall's label, so stalls stay apart and each line can be grepped
 * alone; with --thread all the second names the thread.  --min-percent
 * does not apply: the lines add up to the stall's sampled time.
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
 * The lines of a tree in preorder, heaviest first: the text of the path to
 * the node being visited is kept, each node's name appended once when it
 * is reached, instead of walking up from every node with self weight.
 */
static int tree_folded(struct sw_tree *t, const struct sw_render_options *o, const char *prefix,
		       struct sw_buf *out)
{
	/* at[d]: the length of the path text above a node at depth d */
	size_t *at = malloc((SW_TREE_MAX_DEPTH + 1) * sizeof(*at));
	struct sw_buf line;
	sw_buf_init(&line, 0);
	int r = at ? sw_buf_puts(&line, prefix) : -ENOMEM;
	bool full = o->tree.full_names;
	for (uint32_t i = t->first_root; i != NONE && r >= 0;
	     i = sw_tree_preorder_next(t, i, true)) {
		const struct sw_tree_node *n = &t->nodes[i];
		/* a path's nodes are mostly made one after another: the name of one a few on */
		if (i + 8 < t->nnodes)
			sw_profile_frame_name_prefetch(t->profile, t->nodes[i + 8].frame, full);
		uint32_t d = n->depth < SW_TREE_MAX_DEPTH ? n->depth : SW_TREE_MAX_DEPTH;
		if (d == 0)
			line.len = strlen(prefix);
		else
			line.len = at[d];
		r = sw_buf_putc(&line, ';');
		if (r >= 0)
			r = put_frame(&line, sw_profile_frame_name(t->profile, n->frame, full));
		if (d < SW_TREE_MAX_DEPTH)
			at[d + 1] = line.len;
		uint64_t count =
		    t->counts_only ? n->self : (n->self + SW_NS_PER_US / 2) / SW_NS_PER_US;
		if (r < 0 || !count)
			continue;
		r = sw_buf_append(out, line.data, line.len);
		if (r >= 0 && (r = sw_buf_putc(out, ' ')) >= 0 &&
		    (r = sw_buf_put_u64(out, count)) >= 0)
			r = sw_buf_putc(out, '\n');
	}
	free(at);
	sw_buf_finish(&line);
	return r;
}

int sw_render_folded_stall(struct sw_profile *p, struct sw_tree_stall *s,
			   const struct sw_render_options *o, struct sw_buf *out)
{
	char label[96];
	sw_tree_stall_label(s, o->qualify, label, sizeof(label));
	struct sw_tree *trees[64];
	long threads[64];
	int n = sw_render_stall_trees(p, s, &o->tree, 0, trees, threads, 64); /* every node */
	if (n < 0)
		return n;
	int r = 0;
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
			r = tree_folded(trees[k], o, sw_buf_str(&prefix), out);
	}
	sw_buf_finish(&prefix);
	for (int k = 0; k < n; k++)
		sw_tree_free(trees[k]);
	return r;
}
