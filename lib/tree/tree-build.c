/*
 * Building call trees from a profile's samples under the display options,
 * and the heaviest path and signature of a stall (see tree.h).
 *
 * Samples are first summed per distinct stack, so the work per tree grows
 * with the number of distinct stacks, not of samples.  Each stack is then
 * rewritten by the options in a fixed order (focus and exclude decide
 * whether it stays; system frames are dropped; direct recursion is folded;
 * the stack is reversed for --invert; it is cut at --max-depth) and added
 * to the tree, whose nodes merge frames by image and function.
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

struct builder {
	const struct sw_profile *p;
	const struct sw_tree_options *o;
	struct sw_tree *t;
	size_t nodes_cap;
	uint64_t *vote; /* majority vote for each node's representative frame */
	/*
	 * Children are found in their parent's list while it is short (most
	 * nodes of a call tree have one child, created just after it, so the
	 * list is in cache); a parent with WIDE children or more has them in a
	 * hash table too.  Lists are built in first_child/next_sibling and
	 * replaced by the sorted ones at the end (link_children()).
	 */
	uint32_t *node_fid;
	uint32_t *nkids;
	uint32_t first_root, nroots;
	/* (parent, function id) -> node; the key sits in the slot, so a probe reads one line */
	struct node_slot {
		uint32_t fid, parent, node; /* node NONE: empty */
	} * table;
	size_t table_cap, table_used;
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

static uint64_t node_key(uint32_t parent, uint32_t fid)
{
	uint64_t x = (uint64_t)fid << 32 ^ parent;
	x *= 0x9e3779b97f4a7c15ull;
	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	return x ^ (x >> 32);
}

#define WIDE 8

static void table_put(struct builder *b, uint32_t fid, uint32_t parent, uint32_t node)
{
	size_t j = node_key(parent, fid) & (b->table_cap - 1);
	while (b->table[j].node != NONE)
		j = (j + 1) & (b->table_cap - 1);
	b->table[j] = (struct node_slot){fid, parent, node};
	b->table_used++;
}

/* Makes room for one more table entry, rehashing at half load. */
static int grow_table(struct builder *b)
{
	if ((b->table_used + 1) * 2 <= b->table_cap)
		return 0;
	struct node_slot *old = b->table;
	size_t old_cap = b->table_cap;
	b->table_cap = old_cap ? old_cap * 2 : 1024;
	b->table = malloc(b->table_cap * sizeof(*b->table));
	if (!b->table) {
		b->table = old;
		b->table_cap = old_cap;
		return -ENOMEM;
	}
	memset(b->table, 0xff, b->table_cap * sizeof(*b->table));
	b->table_used = 0;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].node != NONE)
			table_put(b, old[i].fid, old[i].parent, old[i].node);
	free(old);
	return 0;
}

/* Grows the node arrays to at least min nodes, and to twice what they were. */
static int grow_nodes(struct builder *b, size_t min)
{
	size_t cap = b->nodes_cap ? b->nodes_cap * 2 : 256;
	while (cap < min)
		cap *= 2;
	if (cap > (size_t)SW_TREE_MAX_STACKS)
		return -E2BIG;
	struct sw_tree_node *n = realloc(b->t->nodes, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	b->t->nodes = n;
	uint64_t *v = realloc(b->vote, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	b->vote = v;
	uint32_t *f = realloc(b->node_fid, cap * sizeof(*f));
	if (!f)
		return -ENOMEM;
	b->node_fid = f;
	uint32_t *k = realloc(b->nkids, cap * sizeof(*k));
	if (!k)
		return -ENOMEM;
	b->nkids = k;
	b->nodes_cap = cap;
	return 0;
}

static int find_child(struct builder *b, uint32_t parent, uint32_t fid, uint32_t *ret)
{
	uint32_t n = parent == NONE ? b->nroots : b->nkids[parent];
	if (n < WIDE) {
		uint32_t i = parent == NONE ? b->first_root : b->t->nodes[parent].first_child;
		for (; i != NONE; i = b->t->nodes[i].next_sibling)
			if (b->node_fid[i] == fid) {
				*ret = i;
				return 1;
			}
		return 0;
	}
	size_t j = node_key(parent, fid) & (b->table_cap - 1);
	for (; b->table[j].node != NONE; j = (j + 1) & (b->table_cap - 1))
		if (b->table[j].fid == fid && b->table[j].parent == parent) {
			*ret = b->table[j].node;
			return 1;
		}
	return 0;
}

/* Adds node i to its parent's list, and to the table once the parent is wide. */
static int adopt(struct builder *b, uint32_t parent, uint32_t i)
{
	uint32_t *head = parent == NONE ? &b->first_root : &b->t->nodes[parent].first_child;
	uint32_t *n = parent == NONE ? &b->nroots : &b->nkids[parent];
	b->t->nodes[i].next_sibling = *head;
	*head = i;
	if (++*n < WIDE)
		return 0;
	/* the list turns wide now: every child goes in; later ones one at a time */
	for (uint32_t k = *n == WIDE ? *head : i; k != NONE; k = b->t->nodes[k].next_sibling) {
		int r = grow_table(b);
		if (r < 0)
			return r;
		table_put(b, b->node_fid[k], parent, k);
		if (*n > WIDE)
			break;
	}
	return 0;
}

/* The child of node parent for frame, whose function id is fid: added when new. */
static int node_child(struct builder *b, uint32_t parent, uint32_t frame, uint32_t fid,
		      uint32_t *ret)
{
	if (find_child(b, parent, fid, ret))
		return 0;
	if (b->t->nnodes == b->nodes_cap) {
		int r = grow_nodes(b, 0);
		if (r < 0)
			return r;
	}
	uint32_t i = b->t->nnodes++;
	b->t->nodes[i] = (struct sw_tree_node){
	    .frame = frame,
	    .parent = parent,
	    .first_child = NONE,
	    .next_sibling = NONE,
	    .depth = parent == NONE ? 0 : b->t->nodes[parent].depth + 1,
	};
	b->vote[i] = 0;
	b->node_fid[i] = fid;
	b->nkids[i] = 0;
	*ret = i;
	return adopt(b, parent, i);
}

/* Boyer-Moore majority vote: the frame carrying most of a node's weight wins. */
static void vote(struct builder *b, uint32_t node, uint32_t frame, uint64_t w)
{
	struct sw_tree_node *n = &b->t->nodes[node];
	if (n->frame == frame) {
		b->vote[node] += w;
	} else if (b->vote[node] >= w) {
		b->vote[node] -= w;
	} else {
		n->frame = frame;
		b->vote[node] = w - b->vote[node];
	}
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
	size_t n = 0;
	for (size_t i = 0; i < depth; i++) {
		const struct sw_tree_frame *f = &p->frames[frames[i]].f;
		const struct sw_tree_image *img = sw_profile_get_image(p, f->image);
		if (o->hide_system && img && img->system)
			continue;
		if (o->flatten_recursion && n > 0 &&
		    p->frames[frames[n - 1]].func == p->frames[frames[i]].func)
			continue;
		frames[n++] = frames[i];
	}
	/* a stack of system frames only stays with its outermost frame */
	if (n == 0 && depth > 0)
		n = 1;
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

/* Adds a path of n frames, root first, already rewritten. */
static int add_path(struct builder *b, const uint32_t *frames, long n, uint64_t w, uint64_t count)
{
	b->t->total += w;
	b->t->nsamples += count;
	uint32_t node = NONE;
	for (long i = 0; i < n; i++) {
		int r = node_child(b, node, frames[i], b->p->frame_fid[frames[i]], &node);
		if (r < 0)
			return r;
		struct sw_tree_node *nd = &b->t->nodes[node];
		nd->total += w;
		nd->samples += count;
		vote(b, node, frames[i], w);
	}
	if (node != NONE) {
		b->t->nodes[node].self += w;
		b->t->nodes[node].self_samples += count;
	}
	return 0;
}

static int add_stack(struct builder *b, uint32_t *frames, size_t depth, uint64_t w, uint64_t count)
{
	long n = rewrite(b, frames, depth);
	return n < 0 ? 0 : add_path(b, frames, n, w, count);
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
	for (uint32_t s = stack; s && n < max; s = p->stacks[s].parent)
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

/*
 * Sorts each parent's list of children, built unsorted as nodes were
 * added.  Most nodes have one child or none and are left as they are; the
 * others are sorted from the order they were made in (the lists hold them
 * newest first), as the ties of compare_nodes() then always fall.
 */
static int link_children(struct builder *b)
{
	struct sw_tree *t = b->t;
	uint32_t *kids = NULL, *tmp = NULL;
	size_t cap = 0;
	int r = 0;
	for (uint32_t g = 0; g <= t->nnodes && r >= 0; g++) {
		bool roots = g == t->nnodes;
		uint32_t n = roots ? b->nroots : b->nkids[g];
		if (n < 2)
			continue;
		if (n > cap) {
			size_t c = cap ? cap : 64;
			while (c < n)
				c *= 2;
			free(kids);
			free(tmp);
			kids = malloc(c * sizeof(*kids));
			tmp = malloc(c * sizeof(*tmp));
			cap = kids && tmp ? c : 0;
			if (!cap) {
				r = -ENOMEM;
				break;
			}
		}
		uint32_t *head = roots ? &b->first_root : &t->nodes[g].first_child;
		uint32_t k = n;
		for (uint32_t i = *head; i != NONE; i = t->nodes[i].next_sibling)
			kids[--k] = i;
		sort_nodes(t, kids, tmp, n);
		*head = NONE;
		for (k = n; k-- > 0;) {
			t->nodes[kids[k]].next_sibling = *head;
			*head = kids[k];
		}
	}
	t->first_root = b->first_root;
	free(kids);
	free(tmp);
	return r;
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

/* Whether a trie stack passes --focus and --exclude. */
static bool stack_kept(struct builder *b, uint32_t stack)
{
	const struct sw_profile *p = b->p;
	bool focus_hit = !b->o->focus;
	for (uint32_t s = stack; s; s = p->stacks[s].parent) {
		uint32_t f = p->stacks[s].frame;
		if (b->o->exclude && cached_match(b, b->xmatch, f, b->o->exclude))
			return false;
		if (!focus_hit)
			focus_hit = cached_match(b, b->match, f, b->o->focus);
	}
	return focus_hit;
}

/*
 * The fast path when stacks are not rewritten (no --invert, --hide-system
 * or --flatten-recursion): tree paths are then trie paths merged by
 * function, so each trie stack maps to one node and only stacks not seen
 * yet are looked up.  Weights go to the leaves first; totals and the
 * representative-frame votes are summed bottom-up at the end (the trie and
 * the nodes both number parents before children).
 */
struct memo {
	uint32_t *index; /* trie stack -> its place in touched + 1, 0: not touched yet */
	struct sw_memo_touched *touched;
	size_t ntouched, cap;
	uint32_t *chain;
};

/* The node field's top bit: the stack was cut by --max-depth (its node is an ancestor's). */
#define CUT 0x80000000u

/* Makes room for n more touched stacks. */
static int memo_reserve(const struct sw_profile *cp, struct memo *m, size_t n)
{
	if (m->ntouched + n <= m->cap)
		return 0;
	struct sw_profile *p = (struct sw_profile *)cp; /* scratch space, not part of the value */
	size_t cap = m->cap ? m->cap * 2 : 4096;
	while (cap < m->ntouched + n)
		cap *= 2;
	struct sw_memo_touched *t = realloc(m->touched, cap * sizeof(*t));
	if (!t)
		return -ENOMEM;
	p->memo_touched = m->touched = t;
	p->memo_touched_cap = m->cap = cap;
	return 0;
}

static int memo_add(struct builder *b, struct memo *m, uint32_t leaf, uint64_t w, uint64_t count)
{
	const struct sw_profile *p = b->p;
	size_t nc = 0;
	uint32_t s = leaf;
	while (s && !m->index[s]) {
		if (nc == SW_TREE_MAX_DEPTH)
			return -E2BIG;
		m->chain[nc++] = s;
		s = p->stacks[s].parent;
	}
	int r = memo_reserve(p, m, nc);
	if (r < 0)
		return r;
	uint32_t at = s ? m->touched[m->index[s] - 1].node : 0;
	uint32_t node = s ? (at & ~CUT) - 1 : NONE;
	bool cut = s && (at & CUT);
	while (nc > 0) {
		uint32_t id = m->chain[--nc];
		if (!cut && (!b->o->max_depth ||
			     (node == NONE ? 0 : b->t->nodes[node].depth + 1) < b->o->max_depth)) {
			r = node_child(b, node, p->stacks[id].frame, p->stacks[id].fid, &node);
			if (r < 0)
				return r;
		} else {
			cut = true;
		}
		m->touched[m->ntouched] =
		    (struct sw_memo_touched){.stack = id, .node = (node + 1) | (cut ? CUT : 0)};
		m->index[id] = (uint32_t)++m->ntouched;
	}
	m->touched[m->index[leaf] - 1].weight += w;
	b->t->nodes[node].self += w;
	b->t->nodes[node].self_samples += count;
	return 0;
}

static void memo_finish(struct builder *b, struct memo *m)
{
	const struct sw_profile *p = b->p;
	/* children were touched after their parents: every weight is whole when its turn comes */
	for (size_t k = m->ntouched; k-- > 0;) {
		const struct sw_memo_touched *t = &m->touched[k];
		uint32_t parent = p->stacks[t->stack].parent;
		if (parent)
			m->touched[m->index[parent] - 1].weight += t->weight;
		if (!(t->node & CUT))
			vote(b, t->node - 1, p->stacks[t->stack].frame, t->weight);
	}
	struct sw_tree_node *nodes = b->t->nodes;
	for (uint32_t i = b->t->nnodes; i-- > 0;) {
		nodes[i].total += nodes[i].self;
		nodes[i].samples += nodes[i].self_samples;
		if (nodes[i].parent != NONE) {
			nodes[nodes[i].parent].total += nodes[i].total;
			nodes[nodes[i].parent].samples += nodes[i].samples;
		}
	}
}

/* The profile's memo arrays, the index grown to cover every trie stack (all zero). */
static int memo_arrays(const struct sw_profile *cp, struct memo *m)
{
	struct sw_profile *p = (struct sw_profile *)cp; /* scratch space, not part of the value */
	if (p->memo_cap < p->nstacks) {
		size_t cap = p->memo_cap ? p->memo_cap : 4096;
		while (cap < p->nstacks)
			cap *= 2;
		/* the old index is all zero: a fresh calloc'd one replaces it */
		free(p->memo_index);
		p->memo_index = calloc(cap, sizeof(*p->memo_index));
		p->memo_cap = p->memo_index ? cap : 0;
		if (!p->memo_cap)
			return -ENOMEM;
	}
	m->index = p->memo_index;
	m->touched = p->memo_touched;
	m->cap = p->memo_touched_cap;
	m->ntouched = 0;
	return 0;
}

static int build_memo(struct builder *b, const struct agg *aggs, size_t na)
{
	struct memo m = {.chain = malloc(SW_TREE_MAX_DEPTH * sizeof(*m.chain))};
	int r = m.chain ? memo_arrays(b->p, &m) : -ENOMEM;
	if (r < 0) {
		free(m.chain);
		return r;
	}
	for (size_t i = 0; i < na && r >= 0; i++) {
		if ((b->o->focus || b->o->exclude) && !stack_kept(b, aggs[i].stack))
			continue;
		b->t->total += aggs[i].weight;
		b->t->nsamples += aggs[i].count;
		if (aggs[i].stack)
			r = memo_add(b, &m, aggs[i].stack, aggs[i].weight, aggs[i].count);
	}
	if (r >= 0)
		memo_finish(b, &m);
	/* leave the index zero for the next build */
	for (size_t k = 0; k < m.ntouched; k++)
		m.index[m.touched[k].stack] = 0;
	free(m.chain);
	return r;
}

static int build(struct builder *b, struct sw_tree_stall *const *stalls, size_t n,
		 long thread_filter)
{
	struct agg *aggs;
	size_t na;
	int r = aggregate(b->t, stalls, n, b->o, thread_filter, &aggs, &na);
	if (r < 0)
		return r;
	if (!b->o->invert && !b->o->hide_system && !b->o->flatten_recursion) {
		r = build_memo(b, aggs, na);
		free(aggs);
		return r < 0 ? r : link_children(b);
	}
	uint32_t *frames = malloc(SW_TREE_MAX_DEPTH * sizeof(*frames));
	if (!frames) {
		free(aggs);
		return -ENOMEM;
	}
	bool leaves = leaf_end_only(b->o);
	for (size_t i = 0; i < na && r >= 0; i++) {
		if (leaves) {
			size_t k = leaf_end(b->p, aggs[i].stack, frames, b->o->max_depth);
			r = add_path(b, frames, (long)k, aggs[i].weight, aggs[i].count);
			continue;
		}
		size_t depth = sw_profile_stack(b->p, aggs[i].stack, frames, SW_TREE_MAX_DEPTH);
		if (depth > SW_TREE_MAX_DEPTH) {
			r = -E2BIG;
			break;
		}
		r = add_stack(b, frames, depth, aggs[i].weight, aggs[i].count);
	}
	free(frames);
	free(aggs);
	if (r >= 0)
		r = link_children(b);
	return r;
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
	t->refs = 1;
	struct builder b = {.p = p, .o = opts, .t = t, .first_root = NONE};
	int r = 0;
	if (opts->focus || opts->exclude) {
		b.match = calloc(p->nframes + 1, 1);
		b.xmatch = calloc(p->nframes + 1, 1);
		if (!b.match || !b.xmatch)
			r = -ENOMEM;
	}
	/* as large as the last tree at once: no copies while it grows */
	if (r >= 0)
		r = grow_nodes(&b, p->nodes_hint);
	if (r >= 0)
		r = build(&b, stalls, n, thread_filter);
	free(b.vote);
	free(b.node_fid);
	free(b.nkids);
	free(b.table);
	free(b.match);
	free(b.xmatch);
	if (r < 0) {
		sw_tree_free(t);
		return r;
	}
	((struct sw_profile *)p)->nodes_hint = t->nnodes; /* scratch, not part of the value */
	*ret = t;
	return 0;
}

void sw_tree_free(struct sw_tree *t)
{
	if (!t || --t->refs > 0)
		return;
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

uint32_t sw_tree_preorder_next(const struct sw_tree *t, uint32_t i, bool descend)
{
	if (descend && t->nodes[i].first_child != NONE)
		return t->nodes[i].first_child;
	while (i != NONE && t->nodes[i].next_sibling == NONE)
		i = t->nodes[i].parent;
	return i == NONE ? NONE : t->nodes[i].next_sibling;
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
	if (root != NONE && sw_tree_frame_is_stopped(&p->frames[t->nodes[root].frame].f))
		root = t->nodes[root].next_sibling; /* partial stacks say nothing stable */
	return root;
}

/* The signature of a stall's default tree: its heaviest path. */
static uint64_t signature_of(const struct sw_profile *p, const struct sw_tree *t)
{
	uint64_t h = SW_FNV_OFFSET;
	/*
	 * System frames below the deepest frame of the app's own code are left
	 * out: which libc or libm internal happens to be heaviest is noise that
	 * would split one hang into several signatures.
	 */
	uint32_t root = sw_tree_signature_root(p, t);
	uint32_t last = NONE;
	for (uint32_t i = root; i != NONE; i = t->nodes[i].first_child) {
		const struct sw_tree_image *img =
		    sw_profile_get_image(p, p->frames[t->nodes[i].frame].f.image);
		if (!img || !img->system)
			last = i;
	}
	for (uint32_t i = root; i != NONE; i = t->nodes[i].first_child) {
		const struct sw_tree_frame *f = &p->frames[t->nodes[i].frame].f;
		const struct sw_tree_image *img = sw_profile_get_image(p, f->image);
		const char *image = img ? img->name : "?";
		const char *fn = f->linkage ? f->linkage : "?";
		h = sw_tree_hash_bytes(h, image, strlen(image) + 1);
		h = sw_tree_hash_bytes(h, fn, strlen(fn) + 1);
		if (i == last)
			break;
	}
	return h;
}

uint64_t sw_tree_stall_signature(const struct sw_profile *p, struct sw_tree_stall *s)
{
	struct sw_tree *t;
	/* the default tree notes the signature when it is built */
	if (!s->has_signature && sw_tree_stall_default_tree(p, s, &t) == 0)
		sw_tree_free(t);
	return s->has_signature ? s->signature : SW_FNV_OFFSET;
}

bool sw_tree_options_structural_default(const struct sw_tree_options *o)
{
	return !o || (!o->invert && !o->max_depth && !o->hide_system && !o->flatten_recursion &&
		      !o->focus && !o->exclude && o->thread == SW_THREAD_MAIN);
}

int sw_tree_stall_default_tree(const struct sw_profile *cp, struct sw_tree_stall *s,
			       struct sw_tree **ret)
{
	struct sw_profile *p = (struct sw_profile *)cp; /* the cache is not part of the value */
	if (p->cached_stall != s || !p->cached_tree) {
		struct sw_tree *t;
		int r = sw_tree_build(p, &s, 1, NULL, -1, &t);
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
