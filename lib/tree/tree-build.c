/*
 * Building call trees from a profile's samples under the display options,
 * and the heaviest path and signature of a stall (see tree.h).
 *
 * Samples are first summed per distinct stack, so the work per tree grows
 * with the number of distinct stacks, not of samples.  Each stack is then
 * rewritten by the options in a fixed order (focus and exclude decide
 * whether it stays; system frames are dropped; direct recursion is folded;
 * the stack is reversed for --invert; it is cut at --max-depth), and the
 * tree is built from the top down: the stacks through a node are grouped
 * by the function of their next frame, one child per group.  A child is
 * grouped in turn only when it is expanded (see expand_percent in tree.h),
 * so a tree for display costs what it shows, not the size of the stall.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tree-private.h"

#define NONE UINT32_MAX

struct agg {
	uint32_t stack;
	uint64_t weight, count;
};

/*
 * An item: a stack as the tree takes it (struct sw_tree_path in tree.h),
 * frames root first, already rewritten and cut.
 */

/* A group of the items through one node, while it is being split by the next frame. */
struct kid {
	uint32_t fid, frame, node;
	uint32_t ncont; /* items going deeper */
	uint64_t total, self, samples, self_samples;
	uint64_t frame_weight; /* the weight of the representative frame so far */
	size_t at;             /* where its deeper items go */
};

/* Expanding a node: the items [lo, hi) pass through node and have a frame at depth. */
struct task {
	uint32_t node, depth;
	size_t lo, hi;
	bool heavy; /* the node is on the heaviest path */
};

/* Rewritten stacks, in chunks that never move (items point into them). */
struct path_chunk {
	struct path_chunk *next;
	size_t used, cap;
	uint32_t frames[];
};

/* How many items ahead a pass over a group fetches their stacks. */
#define PREFETCH 32

struct builder {
	const struct sw_profile *p;
	const struct sw_tree_options *o;
	struct sw_tree *t;
	size_t nodes_cap;
	struct sw_tree_path *items, *tmp;
	uint32_t *item_kid; /* while a group is split: each item's child */
	size_t nitems;
	struct kid *kids;
	size_t kids_cap;
	uint32_t *order, *order_tmp;
	struct task *tasks;
	size_t ntasks, tasks_cap;
	/*
	 * per function: its kid + 1 in the group being split (per frame, its
	 * place in seen + 1 is the profile's frame_fid[].slot)
	 */
	uint32_t *fid_kid;
	struct seen {
		uint32_t frame, kid;
		uint64_t weight;
	} * seen;
	struct path_chunk *chunks;
	int8_t *match; /* per frame: 0 unknown, 1 no match, 2 match (focus); same for exclude */
	int8_t *xmatch;
};

void sw_tree_options_init(struct sw_tree_options *o)
{
	*o = (struct sw_tree_options){.min_percent = 0.5, .thread = SW_THREAD_MAIN};
}

const char *sw_tree_frame_name(const struct sw_profile *p, const struct sw_tree_frame *f, bool full,
			       char *scratch, size_t scratch_size)
{
	if (full && f->full_name)
		return f->full_name;
	if (f->name)
		return f->name;
	if (f->linkage)
		return f->linkage;
	/* unknown functions of a known image are one node (tree.c): no address fits */
	if (f->image)
		return "???";
	snprintf(scratch, scratch_size, "0x%llx", (unsigned long long)f->address);
	return scratch;
}

static bool frame_matches(const struct sw_profile *p, uint32_t id, const regex_t *re)
{
	const struct sw_tree_frame *f = &p->frames[id].f;
	const struct sw_tree_image *img = sw_profile_get_image(p, f->image);
	char scratch[32];
	const char *cands[] = {
	    sw_tree_frame_name(p, f, false, scratch, sizeof(scratch)),
	    f->full_name,
	    f->linkage,
	    img ? img->name : NULL,
	};
	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++)
		if (cands[i] && regexec(re, cands[i], 0, NULL, 0) == 0)
			return true;
	return false;
}

static bool cached_match(struct builder *b, int8_t *cache, uint32_t id, const regex_t *re)
{
	if (!cache[id])
		cache[id] = frame_matches(b->p, id, re) ? 2 : 1;
	return cache[id] == 2;
}

/* Grows the node array to at least min nodes, and to twice what it was. */
static int grow_nodes(struct builder *b, size_t min)
{
	size_t cap = b->nodes_cap ? b->nodes_cap * 2 : 256;
	while (cap < min)
		cap *= 2;
	if (cap > (size_t)SW_TREE_MAX_STACKS)
		return -E2BIG;
	struct sw_profile *p = (struct sw_profile *)b->p; /* the spare is not part of the value */
	if (!b->t->nodes) {
		b->t->nodes = sw_spare_take(&p->spare_nodes, cap, &b->nodes_cap);
		if (b->t->nodes)
			return 0;
	}
	struct sw_tree_node *n = realloc(b->t->nodes, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	b->t->nodes = n;
	b->nodes_cap = cap;
	return 0;
}

/* Rewrites frames[0..depth) by the options; returns the new depth or -1 to drop. */
static long rewrite(struct builder *b, uint32_t *frames, size_t depth)
{
	const struct sw_tree_options *o = b->o;
	const struct sw_profile *p = b->p;
	if (o->focus) {
		bool hit = false;
		for (size_t i = 0; i < depth && !hit; i++)
			hit = cached_match(b, b->match, frames[i], o->focus);
		if (!hit)
			return -1;
	}
	if (o->exclude)
		for (size_t i = 0; i < depth; i++)
			if (cached_match(b, b->xmatch, frames[i], o->exclude))
				return -1;
	size_t n = depth;
	/* only these read the frames: without them (speedscope's default) a stack stays whole */
	if (o->hide_system || o->flatten_recursion) {
		n = 0;
		for (size_t i = 0; i < depth; i++) {
			const struct sw_frame_entry *e = &p->frames[frames[i]];
			const struct sw_tree_image *img = sw_profile_get_image(p, e->f.image);
			/* the toolchain's library compiled into the app too (C++ headers, Rust's
			 * std) */
			if (o->hide_system && ((img && img->system) || e->toolchain))
				continue;
			if (o->flatten_recursion && n > 0 &&
			    p->frames[frames[n - 1]].func == p->frames[frames[i]].func)
				continue;
			frames[n++] = frames[i];
		}
		/* a stack of system frames only stays with its outermost frame */
		if (n == 0 && depth > 0)
			n = 1;
	}
	if (o->invert)
		for (size_t i = 0; i < n / 2; i++) {
			uint32_t tmp = frames[i];
			frames[i] = frames[n - 1 - i];
			frames[n - 1 - i] = tmp;
		}
	if (o->max_depth && n > o->max_depth)
		n = o->max_depth;
	return (long)n;
}

/*
 * Whether an inverted tree cut at max_depth needs only the innermost
 * max_depth frames of each stack (no option looks at the others): the
 * "top of stack" lists, which would otherwise copy every deep stack whole.
 */
static bool leaf_end_only(const struct sw_tree_options *o)
{
	return o->invert && o->max_depth && !o->hide_system && !o->flatten_recursion && !o->focus &&
	       !o->exclude;
}

/* The innermost frames of a stack, leaf first, at most max of them. */
static size_t leaf_end(const struct sw_profile *p, uint32_t stack, uint32_t *frames, size_t max)
{
	size_t n = 0;
	for (uint32_t s = stack & ~SW_STACK_TRIE; s && n < max; s = p->stacks[s].parent)
		frames[n++] = p->stacks[s].frame;
	return n;
}

/* Orders siblings: heavier first, then by image and function name. */
static int compare_nodes(const struct sw_tree *t, uint32_t a, uint32_t b)
{
	const struct sw_tree_node *na = &t->nodes[a], *nb = &t->nodes[b];
	if (na->total != nb->total)
		return na->total > nb->total ? -1 : 1;
	const struct sw_profile *p = t->profile;
	const struct sw_tree_frame *fa = &p->frames[na->frame].f, *fb = &p->frames[nb->frame].f;
	const struct sw_tree_image *ia = sw_profile_get_image(p, fa->image);
	const struct sw_tree_image *ib = sw_profile_get_image(p, fb->image);
	int c = strcmp(ia ? ia->name : "", ib ? ib->name : "");
	if (c)
		return c;
	const char *la = fa->linkage ? fa->linkage : fa->name ? fa->name : "";
	const char *lb = fb->linkage ? fb->linkage : fb->name ? fb->name : "";
	c = strcmp(la, lb);
	if (c)
		return c;
	return fa->address < fb->address ? -1 : fa->address > fb->address;
}

/* A merge sort with the tree as context (qsort_r differs between libcs). */
static void sort_nodes(const struct sw_tree *t, uint32_t *a, uint32_t *tmp, size_t n)
{
	if (n < 2)
		return;
	size_t h = n / 2;
	sort_nodes(t, a, tmp, h);
	sort_nodes(t, a + h, tmp, n - h);
	size_t i = 0, j = h, k = 0;
	while (i < h && j < n)
		tmp[k++] = compare_nodes(t, a[j], a[i]) < 0 ? a[j++] : a[i++];
	while (i < h)
		tmp[k++] = a[i++];
	while (j < n)
		tmp[k++] = a[j++];
	memcpy(a, tmp, n * sizeof(*a));
}

bool sw_tree_sample_selected(const struct sw_tree_stall *s, const struct sw_tree_sample *smp,
			     const struct sw_tree_options *o, long thread_filter)
{
	const struct sw_tree_thread *th = &s->threads[smp->thread];
	switch (o->thread) {
	case SW_THREAD_MAIN:
		return th->main;
	case SW_THREAD_NAME:
		return o->thread_name && strcmp(th->name, o->thread_name) == 0;
	case SW_THREAD_ALL:
		return thread_filter < 0 || (long)smp->thread == thread_filter;
	}
	return false;
}

/* Sums the selected samples per stack. */
static int aggregate(struct sw_tree *t, struct sw_tree_stall *const *stalls, size_t n,
		     const struct sw_tree_options *o, long thread_filter, struct agg **ret_aggs,
		     size_t *ret_n)
{
	for (size_t k = 0; k < n; k++)
		if (stalls[k]->samples_dropped)
			return -ESTALE; /* sw_tree_stall_drop_samples() let them go */
	size_t cap = 64, na = 0;
	uint32_t *table = NULL;
	struct agg *aggs = malloc(cap * sizeof(*aggs));
	table = malloc(cap * 2 * sizeof(*table));
	if (!aggs || !table)
		goto nomem;
	memset(table, 0xff, cap * 2 * sizeof(*table));
	for (size_t k = 0; k < n; k++) {
		const struct sw_tree_stall *s = stalls[k];
		if (s->info.counts_only)
			t->counts_only = true;
		for (size_t i = 0; i < s->nsamples; i++) {
			const struct sw_tree_sample *smp = &s->samples[i];
			if (!sw_tree_sample_selected(s, smp, o, thread_filter))
				continue;
			t->all += smp->weight;
			size_t j = (smp->stack * 0x9e3779b1u) & (cap * 2 - 1);
			while (table[j] != NONE && aggs[table[j]].stack != smp->stack)
				j = (j + 1) & (cap * 2 - 1);
			if (table[j] != NONE) {
				aggs[table[j]].weight += smp->weight;
				aggs[table[j]].count++;
				continue;
			}
			aggs[na] = (struct agg){smp->stack, smp->weight, 1};
			table[j] = (uint32_t)na++;
			if (na < cap)
				continue;
			cap *= 2;
			struct agg *ng = realloc(aggs, cap * sizeof(*aggs));
			if (!ng)
				goto nomem;
			aggs = ng;
			free(table);
			table = malloc(cap * 2 * sizeof(*table));
			if (!table)
				goto nomem;
			memset(table, 0xff, cap * 2 * sizeof(*table));
			for (size_t a = 0; a < na; a++) {
				size_t h = (aggs[a].stack * 0x9e3779b1u) & (cap * 2 - 1);
				while (table[h] != NONE)
					h = (h + 1) & (cap * 2 - 1);
				table[h] = (uint32_t)a;
			}
		}
	}
	free(table);
	*ret_aggs = aggs;
	*ret_n = na;
	return 0;
nomem:
	free(aggs);
	free(table);
	return -ENOMEM;
}

/* Whether a node of this total weight gets its children under expand percent. */
static bool expanded(const struct sw_tree *t, uint64_t total, double percent)
{
	/* the same comparison as sw_tree_node_visible(): a visible node is never left unexpanded */
	return percent <= 0 || t->all == 0 || (double)total * 100.0 >= percent * (double)t->all;
}

/* Room for n frames in the builder's chunks; path_commit() keeps what was used. */
static uint32_t *path_space(struct builder *b, size_t n)
{
	struct path_chunk *c = b->chunks;
	if (!c || c->cap - c->used < n) {
		size_t cap = c ? c->cap * 2 : 4096;
		if (cap > ((size_t)1 << 20))
			cap = (size_t)1 << 20;
		if (cap < n)
			cap = n;
		c = malloc(sizeof(*c) + cap * sizeof(uint32_t));
		if (!c)
			return NULL;
		c->next = b->chunks;
		c->used = 0;
		c->cap = cap;
		b->chunks = c;
	}
	return c->frames + c->used;
}

static void path_commit(struct builder *b, size_t n)
{
	b->chunks->used += n;
}

/* Whether a stack passes --focus and --exclude. */
static bool path_kept(struct builder *b, const uint32_t *frames, size_t depth)
{
	bool focus_hit = !b->o->focus;
	for (size_t i = 0; i < depth; i++) {
		if (b->o->exclude && cached_match(b, b->xmatch, frames[i], b->o->exclude))
			return false;
		if (!focus_hit)
			focus_hit = cached_match(b, b->match, frames[i], b->o->focus);
	}
	return focus_hit;
}

/*
 * The stack of one aggregate as the tree takes it, into *ret (depth 0: no
 * frame, the weight still counts).  Returns 0 when the options drop it, 1
 * when it stays.
 */
static int make_item(struct builder *b, const struct agg *a, struct sw_tree_path *ret)
{
	const struct sw_profile *p = b->p;
	const struct sw_tree_options *o = b->o;
	*ret = (struct sw_tree_path){.weight = a->weight, .count = a->count};
	if (!a->stack)
		return o->focus ? 0 : 1; /* no frame matches: only --focus drops it */
	size_t depth = 0;
	const uint32_t *path = sw_profile_path(p, a->stack, &depth);
	if (leaf_end_only(o)) {
		/* only the innermost frames matter: no whole copy of a deep stack */
		uint32_t *f = path_space(b, o->max_depth);
		if (!f)
			return -ENOMEM;
		size_t n = 0;
		if (path)
			for (; n < o->max_depth && n < depth; n++)
				f[n] = path[depth - 1 - n];
		else
			n = leaf_end(p, a->stack, f, o->max_depth);
		path_commit(b, n);
		*ret = (struct sw_tree_path){f, (uint32_t)n, 0, a->weight, a->count};
		return 1;
	}
	bool rewrites = o->invert || o->hide_system || o->flatten_recursion;
	if (!path || rewrites) {
		/* a copy: walked from the trie (past the pool), or to rewrite in place */
		if (!path)
			depth = sw_profile_stack(p, a->stack, NULL, 0);
		if (depth > SW_TREE_MAX_DEPTH)
			return -E2BIG;
		uint32_t *f = path_space(b, depth);
		if (!f)
			return -ENOMEM;
		if (path)
			memcpy(f, path, depth * sizeof(*f));
		else
			sw_profile_stack(p, a->stack, f, depth);
		long n = rewrites ? rewrite(b, f, depth) : (long)depth;
		if (n < 0)
			return 0;
		path_commit(b, (size_t)n);
		path = f;
		depth = (size_t)n;
		if (rewrites) { /* focus, exclude and the cut are done */
			*ret = (struct sw_tree_path){path, (uint32_t)depth, 0, a->weight, a->count};
			return 1;
		}
	}
	if ((o->focus || o->exclude) && !path_kept(b, path, depth))
		return 0;
	uint32_t whole = a->stack;
	if (o->max_depth && depth > o->max_depth) {
		depth = o->max_depth;
		whole = 0;
	}
	*ret = (struct sw_tree_path){path, (uint32_t)depth, whole, a->weight, a->count};
	return 1;
}

static int push(struct builder *b, struct task tk)
{
	if (b->ntasks == b->tasks_cap) {
		size_t cap = b->tasks_cap ? b->tasks_cap * 2 : 256;
		struct task *n = realloc(b->tasks, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		b->tasks = n;
		b->tasks_cap = cap;
	}
	b->tasks[b->ntasks++] = tk;
	return 0;
}

/*
 * How many frames from the task's depth on every item has the same: a run
 * of nodes with one child each (a deep stack shared by every sample, or a
 * single item), made without grouping level by level.  Ends where the
 * shortest item ends.
 */
static size_t common_run(const struct builder *b, const struct task *tk)
{
	const struct sw_tree_path *items = b->items;
	uint32_t d = tk->depth;
	size_t n = items[tk->lo].depth - d;
	for (size_t i = tk->lo + 1; i < tk->hi && n; i++)
		if (items[i].depth - d < n)
			n = items[i].depth - d;
	const uint32_t *first = items[tk->lo].path + d;
	for (size_t i = tk->lo + 1; i < tk->hi && n; i++) {
		if (i + PREFETCH < tk->hi)
			__builtin_prefetch(items[i + PREFETCH].path + d);
		const uint32_t *path = items[i].path + d;
		size_t k = 0;
		while (k < n && path[k] == first[k])
			k++;
		n = k;
	}
	return n;
}

/* Adds the run of n nodes every item of the task passes through: whole when expanded. */
static int run(struct builder *b, const struct task *tk, size_t n)
{
	struct sw_tree *t = b->t;
	uint64_t total = 0, samples = 0, self = 0, self_samples = 0;
	uint32_t end = tk->depth + (uint32_t)n;
	for (size_t i = tk->lo; i < tk->hi; i++) {
		const struct sw_tree_path *it = &b->items[i];
		total += it->weight;
		samples += it->count;
		if (it->depth == end) {
			self += it->weight;
			self_samples += it->count;
		}
	}
	/* each has one child, the first: on the heaviest path when the run's first node is */
	bool whole = tk->heavy || expanded(t, total, t->expand_percent);
	size_t made = whole ? n : 1;
	if (t->nnodes + made > b->nodes_cap) {
		int r = grow_nodes(b, t->nnodes + made);
		if (r < 0)
			return r;
	}
	const uint32_t *frames = b->items[tk->lo].path;
	uint32_t parent = tk->node;
	for (uint32_t d = tk->depth; d < tk->depth + made; d++) {
		uint32_t i = t->nnodes++;
		bool last = d + 1 == end;
		t->nodes[i] = (struct sw_tree_node){
		    .frame = frames[d],
		    .parent = parent,
		    .first_child = NONE,
		    .next_sibling = NONE,
		    .depth = d,
		    .total = total,
		    .self = last ? self : 0,
		    .samples = samples,
		    .self_samples = last ? self_samples : 0,
		};
		if (parent == NONE)
			t->first_root = i;
		else
			t->nodes[parent].first_child = i;
		parent = i;
	}
	if (!whole)
		return 0;
	/* the items going on below the run */
	size_t k = tk->lo;
	for (size_t i = tk->lo; i < tk->hi; i++)
		if (b->items[i].depth > end)
			b->items[k++] = b->items[i];
	if (k == tk->lo)
		return 0;
	struct task below = {parent, end, tk->lo, k, tk->heavy};
	return push(b, below);
}

/*
 * Expands a node: its children, one per function of the items' frames at
 * the task's depth, sorted heaviest first, each with the frame that carries
 * most of its weight (ties: the first frame interned); the expanded ones
 * become tasks.
 */
static int split(struct builder *b, const struct task *tk)
{
	size_t same = common_run(b, tk);
	if (same)
		return run(b, tk, same);
	const struct sw_profile *p = b->p;
	struct sw_tree *t = b->t;
	uint32_t d = tk->depth;
	size_t nk = 0, nseen = 0;
	for (size_t i = tk->lo; i < tk->hi; i++) {
		const struct sw_tree_path *it = &b->items[i];
		/*
		 * The items' stacks lie anywhere: fetch them well ahead (the
		 * misses overlap; 8 ahead left most of the time waiting on
		 * them), and the frame's function and slot for those half as
		 * far, whose frames are in by then.
		 */
		if (i + PREFETCH < tk->hi)
			__builtin_prefetch(b->items[i + PREFETCH].path + d);
		if (i + PREFETCH / 2 < tk->hi) {
			uint32_t ahead = b->items[i + PREFETCH / 2].path[d];
			__builtin_prefetch(&p->frame_fid[ahead]);
		}
		uint32_t f = it->path[d];
		struct sw_frame_fid *ff = &p->frame_fid[f];
		uint32_t fid = ff->fid;
		uint32_t k = b->fid_kid[fid];
		if (!k) {
			b->kids[nk] = (struct kid){.fid = fid, .frame = NONE};
			k = b->fid_kid[fid] = (uint32_t)++nk;
		}
		b->item_kid[i] = k - 1;
		struct kid *kd = &b->kids[k - 1];
		kd->total += it->weight;
		kd->samples += it->count;
		if (it->depth == d + 1) {
			kd->self += it->weight;
			kd->self_samples += it->count;
		} else {
			kd->ncont++;
		}
		uint32_t sl = ff->slot;
		if (!sl) {
			b->seen[nseen] = (struct seen){.frame = f, .kid = k - 1};
			sl = ff->slot = (uint32_t)++nseen;
		}
		b->seen[sl - 1].weight += it->weight;
	}
	/* the items going deeper, grouped by child in the order of kids */
	size_t at = tk->lo;
	for (size_t k = 0; k < nk; k++) {
		b->kids[k].at = at;
		at += b->kids[k].ncont;
	}
	for (size_t i = tk->lo; i < tk->hi; i++)
		if (b->items[i].depth > d + 1)
			b->tmp[b->kids[b->item_kid[i]].at++] = b->items[i];
	memcpy(b->items + tk->lo, b->tmp + tk->lo, (at - tk->lo) * sizeof(*b->items));
	/* the scratch arrays are left zero, as the next split expects them */
	for (size_t s = 0; s < nseen; s++) {
		const struct seen *sn = &b->seen[s];
		struct kid *kd = &b->kids[sn->kid];
		if (kd->frame == NONE || sn->weight > kd->frame_weight ||
		    (sn->weight == kd->frame_weight && sn->frame < kd->frame)) {
			kd->frame = sn->frame;
			kd->frame_weight = sn->weight;
		}
		p->frame_fid[sn->frame].slot = 0;
	}
	for (size_t k = 0; k < nk; k++)
		b->fid_kid[b->kids[k].fid] = 0;

	if (t->nnodes + nk > b->nodes_cap) {
		int r = grow_nodes(b, t->nnodes + nk);
		if (r < 0)
			return r;
	}
	uint32_t base = t->nnodes;
	for (size_t k = 0; k < nk; k++) {
		const struct kid *kd = &b->kids[k];
		uint32_t i = t->nnodes++;
		t->nodes[i] = (struct sw_tree_node){
		    .frame = kd->frame,
		    .parent = tk->node,
		    .first_child = NONE,
		    .next_sibling = NONE,
		    .depth = d,
		    .total = kd->total,
		    .self = kd->self,
		    .samples = kd->samples,
		    .self_samples = kd->self_samples,
		};
		b->order[k] = i;
		/* siblings of equal weight are ordered by their frames': fetched together */
		if (nk > 1)
			__builtin_prefetch(&p->frames[kd->frame]);
	}
	sort_nodes(t, b->order, b->order_tmp, nk);
	uint32_t *head = tk->node == NONE ? &t->first_root : &t->nodes[tk->node].first_child;
	for (size_t k = nk; k-- > 0;) {
		t->nodes[b->order[k]].next_sibling = *head;
		*head = b->order[k];
	}
	/* pushed lightest first: the heaviest child is expanded next */
	for (size_t k = nk; k-- > 0;) {
		const struct kid *kd = &b->kids[b->order[k] - base];
		if (!kd->ncont)
			continue;
		/* the second root too: signatures pass over a root of partial stacks */
		bool heavy = tk->heavy && (k == 0 || (k == 1 && tk->node == NONE));
		if (!heavy && !expanded(t, kd->total, t->expand_percent))
			continue;
		int r =
		    push(b, (struct task){b->order[k], d + 1, kd->at - kd->ncont, kd->at, heavy});
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * The profile's scratch array for splits, grown to cover every function
 * (all zero); the frames' slots are in frame_fid.
 */
static int scratch_arrays(struct builder *b)
{
	struct sw_profile *p = (struct sw_profile *)b->p; /* scratch space, not part of the value */
	if (p->split_funcs_cap < p->nfuncs) {
		free(p->split_fid_kid);
		p->split_funcs_cap = p->nfuncs + p->nfuncs / 2 + 64;
		p->split_fid_kid = calloc(p->split_funcs_cap, sizeof(uint32_t));
		if (!p->split_fid_kid) {
			p->split_funcs_cap = 0;
			return -ENOMEM;
		}
	}
	b->fid_kid = p->split_fid_kid;
	return 0;
}

/* How many aggregates ahead of its own collect() fetches a stack's entries. */
#define COLLECT_AHEAD 16

/*
 * The items of the selected samples: summed per stack, rewritten by the
 * options, those with no frame left out (their weight still counts in
 * b->t's totals).
 */
static int collect(struct builder *b, struct sw_tree_stall *const *stalls, size_t n,
		   long thread_filter)
{
	struct agg *aggs;
	size_t na;
	int r = aggregate(b->t, stalls, n, b->o, thread_filter, &aggs, &na);
	if (r < 0)
		return r;
	b->items = malloc((na ? na : 1) * sizeof(*b->items));
	r = b->items ? 0 : -ENOMEM;
	const struct sw_profile *p = b->p;
	bool leaf_only = leaf_end_only(b->o);
	for (size_t i = 0; i < na && r >= 0; i++) {
		struct sw_tree_path it;
		/*
		 * the aggregates' stacks lie anywhere in the profile: each one's
		 * run entry is fetched COLLECT_AHEAD items early, and, for a list
		 * of leaves, the innermost frame half as early, once its run is in
		 */
		if (i + COLLECT_AHEAD < na) {
			uint32_t s = aggs[i + COLLECT_AHEAD].stack;
			if (s && !(s & SW_STACK_TRIE))
				__builtin_prefetch(&p->runs[s]);
		}
		if (leaf_only && i + COLLECT_AHEAD / 2 < na) {
			uint32_t s = aggs[i + COLLECT_AHEAD / 2].stack;
			if (s && !(s & SW_STACK_TRIE) && p->runs[s].depth)
				__builtin_prefetch(&p->pool[p->runs[s].off + p->runs[s].depth - 1]);
		}
		r = make_item(b, &aggs[i], &it);
		if (r <= 0)
			continue;
		b->t->total += it.weight;
		b->t->nsamples += it.count;
		if (it.depth)
			b->items[b->nitems++] = it;
	}
	free(aggs);
	return r;
}

static int build(struct builder *b, struct sw_tree_stall *const *stalls, size_t n,
		 long thread_filter)
{
	int r = collect(b, stalls, n, thread_filter);
	if (r < 0)
		return r;
	size_t na = b->nitems;
	b->tmp = malloc((na ? na : 1) * sizeof(*b->tmp));
	b->item_kid = malloc((na ? na : 1) * sizeof(*b->item_kid));
	r = b->tmp && b->item_kid ? scratch_arrays(b) : -ENOMEM;
	if (r < 0)
		return r;
	/* no more children than distinct functions or items, no more frames than either */
	size_t nk = b->nitems < b->p->nfuncs ? b->nitems : b->p->nfuncs;
	size_t ns = b->nitems < b->p->nframes ? b->nitems : b->p->nframes;
	b->kids = malloc((nk + 1) * sizeof(*b->kids));
	b->order = malloc((nk + 1) * sizeof(*b->order));
	b->order_tmp = malloc((nk + 1) * sizeof(*b->order_tmp));
	b->seen = malloc((ns + 1) * sizeof(*b->seen));
	if (!b->kids || !b->order || !b->order_tmp || !b->seen)
		return -ENOMEM;
	r = b->nitems ? push(b, (struct task){NONE, 0, 0, b->nitems, true}) : 0;
	while (r >= 0 && b->ntasks > 0) {
		struct task tk = b->tasks[--b->ntasks];
		r = split(b, &tk);
	}
	return r;
}

/* The caches of --focus and --exclude matches, when the options have them. */
static int builder_match_arrays(struct builder *b)
{
	if (!b->o->focus && !b->o->exclude)
		return 0;
	b->match = calloc(b->p->nframes + 1, 1);
	b->xmatch = calloc(b->p->nframes + 1, 1);
	return b->match && b->xmatch ? 0 : -ENOMEM;
}

static void free_chunks(struct path_chunk *c)
{
	while (c) {
		struct path_chunk *next = c->next;
		free(c);
		c = next;
	}
}

static void builder_free(struct builder *b)
{
	free(b->items);
	free(b->tmp);
	free(b->item_kid);
	free(b->kids);
	free(b->order);
	free(b->order_tmp);
	free(b->seen);
	free(b->tasks);
	free_chunks(b->chunks);
	free(b->match);
	free(b->xmatch);
}

int sw_tree_build(const struct sw_profile *p, struct sw_tree_stall *const *stalls, size_t n,
		  const struct sw_tree_options *opts, long thread_filter, struct sw_tree **ret)
{
	struct sw_tree_options defaults;
	if (!opts) {
		sw_tree_options_init(&defaults);
		opts = &defaults;
	}
	struct sw_tree *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->profile = p;
	t->first_root = NONE;
	t->expand_percent = opts->expand_percent;
	t->refs = 1;
	struct builder b = {.p = p, .o = opts, .t = t};
	int r = builder_match_arrays(&b);
	/* as large as the last tree of the same kind at once: no copies while it grows */
	size_t *hint = (size_t *)&p->nodes_hint[opts->expand_percent > 0];
	if (r >= 0)
		r = grow_nodes(&b, *hint);
	if (r >= 0)
		r = build(&b, stalls, n, thread_filter);
	builder_free(&b);
	if (r < 0) {
		sw_tree_free(t);
		return r;
	}
	*hint = t->nnodes; /* scratch, not part of the value */
	t->nodes_cap = b.nodes_cap;
	*ret = t;
	return 0;
}

struct sw_tree_paths_private {
	struct sw_tree_paths pub;
	struct path_chunk *chunks;
};

int sw_tree_paths_build(const struct sw_profile *p, struct sw_tree_stall *const *stalls, size_t n,
			const struct sw_tree_options *opts, long thread_filter,
			struct sw_tree_paths **ret)
{
	struct sw_tree_options defaults;
	if (!opts) {
		sw_tree_options_init(&defaults);
		opts = &defaults;
	}
	struct sw_tree_paths_private *pp = calloc(1, sizeof(*pp));
	if (!pp)
		return -ENOMEM;
	/* the counters only: collect() sums into a tree */
	struct sw_tree t = {.profile = p, .first_root = NONE};
	struct builder b = {.p = p, .o = opts, .t = &t};
	int r = builder_match_arrays(&b);
	if (r >= 0)
		r = collect(&b, stalls, n, thread_filter);
	if (r >= 0) {
		pp->pub = (struct sw_tree_paths){
		    .profile = p,
		    .paths = b.items,
		    .n = b.nitems,
		    .total = t.total,
		    .all = t.all,
		    .nsamples = t.nsamples,
		    .counts_only = t.counts_only,
		};
		pp->chunks = b.chunks;
		b.items = NULL;
		b.chunks = NULL;
	}
	builder_free(&b);
	if (r < 0) {
		free(pp);
		return r;
	}
	*ret = &pp->pub;
	return 0;
}

/*
 * A hash of the functions of a path's frames: what its tree node would
 * merge by.  A stack left whole is hashed once for every stall it is in:
 * the profile keeps the hash (never 0) by stack.
 */
static uint64_t path_func_hash(struct sw_profile *p, const struct sw_tree_path *path)
{
	bool kept = path->stack && path->stack < p->stack_funcs_cap;
	if (kept && p->stack_funcs[path->stack])
		return p->stack_funcs[path->stack];
	uint64_t h = SW_FNV_OFFSET ^ path->depth;
	for (uint32_t i = 0; i < path->depth; i++)
		h = (h ^ p->frame_fid[path->path[i]].fid) * 0x100000001b3ull;
	h = (h ^ h >> 29) | 1;
	if (kept)
		p->stack_funcs[path->stack] = h;
	return h;
}

static bool same_funcs(const struct sw_profile *p, const struct sw_tree_path *a,
		       const struct sw_tree_path *b)
{
	if (a->depth != b->depth)
		return false;
	for (uint32_t i = 0; i < a->depth; i++)
		if (p->frame_fid[a->path[i]].fid != p->frame_fid[b->path[i]].fid)
			return false;
	return true;
}

int sw_tree_paths_merge(struct sw_tree_paths *ps)
{
	struct sw_profile *p = (struct sw_profile *)ps->profile; /* the hashes kept are scratch */
	if (p->stack_funcs_cap < p->nruns) {
		size_t cap = p->nruns + p->nruns / 2 + 64;
		uint64_t *h = realloc(p->stack_funcs, cap * sizeof(*h));
		if (!h)
			return -ENOMEM;
		memset(h + p->stack_funcs_cap, 0, (cap - p->stack_funcs_cap) * sizeof(*h));
		p->stack_funcs = h;
		p->stack_funcs_cap = cap;
	}
	size_t cap = 16;
	while (cap < ps->n * 2)
		cap *= 2;
	struct slot {
		uint64_t hash;
		uint32_t path; /* + 1, 0: empty */
	};
	size_t table_cap;
	struct slot *table = sw_spare_take(&p->spare_merge, cap, &table_cap);
	if (!table) {
		table = malloc(cap * sizeof(*table));
		table_cap = cap;
	}
	if (!table)
		return -ENOMEM;
	memset(table, 0, cap * sizeof(*table));
	size_t kept = 0;
	for (size_t i = 0; i < ps->n; i++) {
		struct sw_tree_path *path = &ps->paths[i];
		if (i + 4 < ps->n)
			__builtin_prefetch(ps->paths[i + 4].path);
		uint64_t h = path_func_hash(p, path);
		size_t j = h & (cap - 1);
		for (; table[j].path; j = (j + 1) & (cap - 1)) {
			struct sw_tree_path *other = &ps->paths[table[j].path - 1];
			if (table[j].hash == h && same_funcs(p, other, path)) {
				other->weight += path->weight;
				other->count += path->count;
				break;
			}
		}
		if (table[j].path)
			continue;
		ps->paths[kept] = *path;
		table[j] = (struct slot){h, (uint32_t)++kept};
	}
	ps->n = kept;
	sw_spare_keep(&p->spare_merge, table, table_cap);
	return 0;
}

void sw_tree_paths_free(struct sw_tree_paths *ps)
{
	if (!ps)
		return;
	struct sw_tree_paths_private *pp = (struct sw_tree_paths_private *)ps;
	free(ps->paths);
	free_chunks(pp->chunks);
	free(pp);
}

void sw_tree_free(struct sw_tree *t)
{
	if (!t || --t->refs > 0)
		return;
	struct sw_profile *p = (struct sw_profile *)t->profile;
	if (p)
		sw_spare_keep(&p->spare_nodes, t->nodes, t->nodes_cap);
	else
		free(t->nodes);
	free(t);
}

bool sw_tree_node_visible(const struct sw_tree *t, const struct sw_tree_node *n,
			  const struct sw_tree_options *opts)
{
	if (!opts || opts->min_percent <= 0 || t->all == 0)
		return true;
	return (double)n->total * 100.0 >= opts->min_percent * (double)t->all;
}

size_t sw_tree_heaviest(const struct sw_tree *t, uint32_t *path, size_t max)
{
	size_t n = 0;
	for (uint32_t i = t->first_root; i != NONE && n < max; i = t->nodes[i].first_child)
		path[n++] = i;
	return n;
}

bool sw_tree_frame_is_stopped(const struct sw_tree_frame *f)
{
	return !f->image && !f->linkage && f->name && !strcmp(f->name, SW_TREE_UNWINDING_STOPPED);
}

uint32_t sw_tree_signature_root(const struct sw_profile *p, const struct sw_tree *t)
{
	uint32_t root = t->first_root;
	if (root != NONE && sw_tree_frame_is_stopped(&p->frames[t->nodes[root].frame].f)) {
		/*
		 * Partial stacks say nothing stable beside whole ones; when every
		 * stack stopped, what they hold is all there is to tell hangs apart.
		 */
		uint32_t other = t->nodes[root].next_sibling;
		root = other != NONE ? other : t->nodes[root].first_child;
	}
	return root;
}

/*
 * Whether node i's frame is not the app's own: a system image's, or a
 * library's compiled into the app (the toolchain's, a dependency's).
 */
static bool frame_is_system(const struct sw_profile *p, const struct sw_tree *t, uint32_t i)
{
	const struct sw_frame_entry *e = &p->frames[t->nodes[i].frame];
	const struct sw_tree_image *img = sw_profile_get_image(p, e->f.image);
	return (img && img->system) || e->toolchain || e->dependency;
}

/* The deepest node of the heaviest path from root of the app's own code, or NONE. */
static uint32_t deepest_own(const struct sw_profile *p, const struct sw_tree *t, uint32_t root)
{
	uint32_t last = NONE;
	for (uint32_t i = root; i != NONE; i = t->nodes[i].first_child)
		if (!frame_is_system(p, t, i))
			last = i;
	return last;
}

uint32_t sw_tree_runtime_image(const struct sw_profile *p, const struct sw_tree *t, uint32_t root)
{
	/*
	 * The shape of a launcher's path: its entry (_start) above the C
	 * library's start, then one function of its own (main, with what it
	 * inlined), then the runtime down to the leaf.  More of the app's own
	 * frames (main calling run calling a poll of its own) are the app's
	 * own code at work, and a second run of them below a system frame (a
	 * callback of the loop) too: what they call is a leaf call.
	 */
	uint32_t last = NONE;
	int runs_after_system = 0, run_functions = 0;
	bool seen_system = false, in_own = false;
	for (uint32_t i = root; i != NONE; i = t->nodes[i].first_child) {
		bool own = !frame_is_system(p, t, i);
		if (own && seen_system && !in_own) {
			runs_after_system++;
			run_functions = 0;
		}
		if (own && !p->frames[t->nodes[i].frame].f.inlined)
			run_functions++;
		seen_system |= !own;
		in_own = own;
		if (own)
			last = i;
	}
	uint32_t next = last == NONE ? NONE : t->nodes[last].first_child;
	if (runs_after_system != 1 || run_functions != 1 || next == NONE)
		return NONE;
	uint32_t image = p->frames[t->nodes[next].frame].f.image;
	const struct sw_tree_image *img = sw_profile_get_image(p, image);
	if (!img || sw_tree_path_is_agent_or_kernel(img->path))
		return NONE; /* the agent's wrappers and the vDSO are never the app's */
	for (uint32_t i = root; i != next; i = t->nodes[i].first_child)
		if (p->frames[t->nodes[i].frame].f.image == image)
			return NONE; /* libc, which started the program */
	return image;
}

/*
 * The deepest node of the heaviest path from root that holds more than
 * half of root's weight: below it, which child is heaviest is a matter of
 * which addresses the samples happened to fall on.
 */
static uint32_t majority_end(const struct sw_tree *t, uint32_t root)
{
	uint32_t end = root;
	if (root == NONE)
		return NONE;
	for (uint32_t i = t->nodes[root].first_child;
	     i != NONE && t->nodes[i].total > t->nodes[root].total - t->nodes[i].total;
	     i = t->nodes[i].first_child)
		end = i;
	return end;
}

/* The signature of a stall's default tree: its heaviest path. */
static uint64_t signature_of(const struct sw_profile *p, const struct sw_tree *t)
{
	uint64_t h = SW_FNV_OFFSET;
	/*
	 * System frames below the deepest frame of the app's own code are left
	 * out: which libc or libm internal happens to be heaviest is noise that
	 * would split one hang into several signatures.  So are the frames of
	 * the toolchain's library and of the dependencies compiled into the
	 * app (which of hashbrown's or libstdc++'s templates, or of a Go
	 * module's functions, was heaviest).  The frames of the
	 * runtime the app hands its work to are the app's own: under tclsh
	 * they are all there is of the script.
	 */
	uint32_t root = sw_tree_signature_root(p, t);
	uint32_t last = deepest_own(p, t, root);
	uint32_t runtime = sw_tree_runtime_image(p, t, root);
	for (uint32_t i = last; runtime != NONE && i != NONE; i = t->nodes[i].first_child)
		if (p->frames[t->nodes[i].frame].f.image == runtime)
			last = i;
	/*
	 * Nor past the frames that hold most of the stall: below them, one
	 * sample more or less in an inlined leaf, or two close siblings trading
	 * places, split the three identical stalls of a Python script in 5 of
	 * 10 runs (2 of 10 with this rule: a frame holding about half).
	 */
	uint32_t most = majority_end(t, root);
	if (last == NONE || (most != NONE && t->nodes[most].depth < t->nodes[last].depth))
		last = most;
	/*
	 * Direct recursion enters once: how deep it went (or how many of its
	 * frames an agent that keeps both ends of a deep stack kept) is not
	 * another hang.
	 */
	const char *prev_image = NULL, *prev_fn = NULL;
	for (uint32_t i = root; i != NONE; i = t->nodes[i].first_child) {
		const struct sw_tree_frame *f = &p->frames[t->nodes[i].frame].f;
		const struct sw_tree_image *img = sw_profile_get_image(p, f->image);
		const char *image = img ? img->name : "?";
		const char *fn = f->linkage ? f->linkage : "?";
		if (!prev_fn || strcmp(image, prev_image) != 0 || strcmp(fn, prev_fn) != 0) {
			h = sw_tree_hash_bytes(h, image, strlen(image) + 1);
			h = sw_tree_hash_bytes(h, fn, strlen(fn) + 1);
		}
		prev_image = image;
		prev_fn = fn;
		if (i == last)
			break;
	}
	return h;
}

uint64_t sw_tree_stall_signature(const struct sw_profile *p, struct sw_tree_stall *s)
{
	struct sw_tree *t;
	/* the default tree notes the signature when it is built */
	if (!s->has_signature && sw_tree_stall_default_tree(p, s, SW_TREE_EXPAND_HEAVIEST, &t) == 0)
		sw_tree_free(t);
	return s->has_signature ? s->signature : SW_FNV_OFFSET;
}

bool sw_tree_options_structural_default(const struct sw_tree_options *o)
{
	return !o || (!o->invert && !o->max_depth && !o->hide_system && !o->flatten_recursion &&
		      !o->focus && !o->exclude && o->thread == SW_THREAD_MAIN);
}

int sw_tree_stall_default_tree(const struct sw_profile *cp, struct sw_tree_stall *s,
			       double expand_percent, struct sw_tree **ret)
{
	struct sw_profile *p = (struct sw_profile *)cp; /* the cache is not part of the value */
	/* a tree expanded further holds every node a less expanded one would */
	if (p->cached_stall != s || !p->cached_tree ||
	    p->cached_tree->expand_percent > expand_percent) {
		struct sw_tree_options o;
		sw_tree_options_init(&o);
		o.expand_percent = expand_percent;
		struct sw_tree *t;
		int r = sw_tree_build(p, &s, 1, &o, -1, &t);
		if (r < 0)
			return r;
		sw_tree_free(p->cached_tree);
		p->cached_tree = t;
		p->cached_stall = s;
		/* the next stall's tree replaces this one: what it is known by stays */
		s->signature = signature_of(p, t);
		s->has_signature = true;
	}
	p->cached_tree->refs++;
	*ret = p->cached_tree;
	return 0;
}

struct sw_tree_rewriter {
	struct builder b;
};

int sw_tree_rewriter_new(const struct sw_profile *p, const struct sw_tree_options *o,
			 struct sw_tree_rewriter **ret)
{
	struct sw_tree_rewriter *rw = calloc(1, sizeof(*rw));
	if (!rw)
		return -ENOMEM;
	rw->b.p = p;
	rw->b.o = o;
	rw->b.match = calloc(p->nframes + 1, 1);
	rw->b.xmatch = calloc(p->nframes + 1, 1);
	if (!rw->b.match || !rw->b.xmatch) {
		sw_tree_rewriter_free(rw);
		return -ENOMEM;
	}
	*ret = rw;
	return 0;
}

void sw_tree_rewriter_free(struct sw_tree_rewriter *rw)
{
	if (!rw)
		return;
	free(rw->b.match);
	free(rw->b.xmatch);
	free(rw);
}

long sw_tree_rewrite(struct sw_tree_rewriter *rw, uint32_t *frames, size_t depth)
{
	return rewrite(&rw->b, frames, depth);
}

uint64_t sw_profile_frame_func(const struct sw_profile *p, uint32_t id)
{
	return id < p->nframes ? p->frames[id].func : 0;
}
