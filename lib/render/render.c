/*
 * What every renderer shares: the format table, stall labels, weights for
 * people, the run summary and the dispatch from a renderer object to the
 * format's functions (see render.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "demangle/demangle.h"
#include "util/json-write.h"
#include "render.h"
#include "util/time-units.h"

static const char *const format_names[] = {
    [SW_FORMAT_TREE] = "tree",     [SW_FORMAT_SAMPLE] = "sample",
    [SW_FORMAT_NDJSON] = "ndjson", [SW_FORMAT_JSON] = "json",
    [SW_FORMAT_FOLDED] = "folded", [SW_FORMAT_SPEEDSCOPE] = "speedscope",
    [SW_FORMAT_PPROF] = "pprof",
};

#define NFORMATS (sizeof(format_names) / sizeof(format_names[0]))

int sw_format_parse(const char *name, enum sw_format *ret)
{
	for (size_t i = 0; i < NFORMATS; i++)
		if (strcmp(name, format_names[i]) == 0) {
			*ret = (enum sw_format)i;
			return 0;
		}
	return -EINVAL;
}

const char *sw_format_name(enum sw_format f)
{
	return (size_t)f < NFORMATS ? format_names[f] : "?";
}

bool sw_format_has_raw_stacks(enum sw_format f)
{
	return f == SW_FORMAT_NDJSON || f == SW_FORMAT_JSON;
}

bool sw_format_rereads_stalls(enum sw_format f)
{
	return f == SW_FORMAT_PPROF;
}

const char *sw_format_list(void)
{
	return "tree, sample, ndjson, json, folded, speedscope, pprof";
}

void sw_render_options_init(struct sw_render_options *o)
{
	*o = (struct sw_render_options){.tool_version = SW_VERSION};
	sw_tree_options_init(&o->tree);
}

void sw_tree_stall_label(const struct sw_tree_stall *s, bool qualify, char *buf, size_t size)
{
	if (qualify && s->info.source && s->info.source[0]) {
		/* a source comes from a file name or a recording: keep it one clean word */
		snprintf(buf, size, "%s#%llu", s->info.source, (unsigned long long)s->info.id);
		size_t n = strlen(s->info.source);
		for (size_t i = 0; i < n && buf[i]; i++)
			if ((unsigned char)buf[i] <= ' ' || buf[i] == 0x7f)
				buf[i] = '_';
	} else {
		snprintf(buf, size, "#%llu", (unsigned long long)s->info.id);
	}
}

void sw_render_weight(uint64_t w, bool counts, char *buf, size_t size)
{
	if (counts) {
		snprintf(buf, size, "%llu sample%s", (unsigned long long)w, w == 1 ? "" : "s");
		return;
	}
	uint64_t tenths = (w + 50000) / 100000; /* 0.1 ms */
	if (tenths >= 100000 || size < 12) {
		snprintf(buf, size, "%.2f s", sw_ns_to_s(w));
		return;
	}
	/* "%llu.%llu ms" without printf: trees print two of these a line */
	char digits[8];
	int n = 0;
	for (uint64_t v = tenths / 10; n == 0 || v; v /= 10)
		digits[n++] = (char)('0' + v % 10);
	char *p = buf;
	while (n)
		*p++ = digits[--n];
	*p++ = '.';
	*p++ = (char)('0' + tenths % 10);
	memcpy(p, " ms", 4);
}

const char *sw_render_file_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash && slash[1] ? slash + 1 : path;
}

const char *sw_render_clean(const char *s, char *buf, size_t size)
{
	size_t i = 0;
	while (s[i] && (unsigned char)s[i] >= 0x20 && s[i] != 0x7f)
		i++;
	if (!s[i] || size == 0)
		return s;
	for (i = 0; s[i] && i + 1 < size; i++)
		buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? ' ' : s[i];
	buf[i] = 0;
	return buf;
}

/*
 * The k-th thread filter (as sw_tree_build() takes them) a stall is shown
 * by, into *ret; false past the last.  -1 for the selected thread or
 * threads, or with --thread all each thread's index, the stalled thread
 * first, then the others in the order they appeared.
 */
static bool stall_thread_filter(const struct sw_tree_stall *s, const struct sw_tree_options *o,
				size_t k, long *ret)
{
	if (o->thread != SW_THREAD_ALL) {
		*ret = -1;
		return k == 0;
	}
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t i = 0; i < s->nthreads; i++)
			if (s->threads[i].main == (pass == 0) && k-- == 0) {
				*ret = (long)i;
				return true;
			}
	return false;
}

/* Whether a thread's tree or paths with this weight are left out: other threads without samples. */
static bool thread_left_out(const struct sw_tree_stall *s, long filter, uint64_t all)
{
	return filter >= 0 && all == 0 && !s->threads[filter].main;
}

int sw_render_stall_trees(struct sw_profile *p, struct sw_tree_stall *s,
			  const struct sw_tree_options *opts, double expand_percent,
			  struct sw_tree **trees, long *threads, size_t max)
{
	struct sw_tree_options o = *opts;
	o.expand_percent = expand_percent;
	size_t n = 0;
	long f;
	int r = 0;
	for (size_t k = 0; n < max && r >= 0 && stall_thread_filter(s, &o, k, &f); k++) {
		struct sw_tree *t;
		if (f < 0 && sw_tree_options_structural_default(&o))
			r = sw_tree_stall_default_tree(p, s, expand_percent, &t);
		else
			r = sw_tree_build(p, &s, 1, &o, f, &t);
		if (r < 0)
			break;
		if (thread_left_out(s, f, t->all)) {
			sw_tree_free(t);
			continue;
		}
		trees[n] = t;
		threads[n++] = f;
	}
	if (r < 0) {
		while (n > 0)
			sw_tree_free(trees[--n]);
		return r;
	}
	return (int)n;
}

int sw_render_stall_paths(struct sw_profile *p, struct sw_tree_stall *s,
			  const struct sw_tree_options *opts, struct sw_tree_paths **paths,
			  long *threads, size_t max)
{
	size_t n = 0;
	long f;
	int r = 0;
	for (size_t k = 0; n < max && r >= 0 && stall_thread_filter(s, opts, k, &f); k++) {
		struct sw_tree_paths *ps;
		r = sw_tree_paths_build(p, &s, 1, opts, f, &ps);
		if (r < 0)
			break;
		if (thread_left_out(s, f, ps->all)) {
			sw_tree_paths_free(ps);
			continue;
		}
		paths[n] = ps;
		threads[n++] = f;
	}
	if (r < 0) {
		while (n > 0)
			sw_tree_paths_free(paths[--n]);
		return r;
	}
	return (int)n;
}

static int compare_u64_pairs(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

static void add_top(struct sw_summary *sum, const struct sw_summary_sig *g)
{
	size_t i = sum->ntop;
	if (i == SW_SUMMARY_TOP) {
		if (g->total_ns <= sum->top[i - 1].total_ns)
			return;
		i--;
	} else {
		sum->ntop++;
	}
	while (i > 0 && sum->top[i - 1].total_ns < g->total_ns) {
		sum->top[i] = sum->top[i - 1];
		i--;
	}
	sum->top[i] = *g;
}

static uint64_t stall_weight(const struct sw_tree_stall *s)
{
	return s->info.counts_only || !s->info.duration_ns ? s->sampled : s->info.duration_ns;
}

int sw_summary_compute(struct sw_profile *p, struct sw_summary *ret)
{
	struct sw_summary sum = {0};
	size_t n = sw_profile_nstalls(p);
	uint64_t *pairs = malloc((n ? n : 1) * 2 * sizeof(*pairs));
	if (!pairs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct sw_tree_stall *s = sw_profile_stall(p, i);
		uint64_t w = stall_weight(s);
		sum.total_ns += w;
		sum.counts_only |= s->info.counts_only;
		sum.late_stalls += s->info.late > 0;
		sum.late_ns += s->info.late_ns;
		if (!sum.worst || w > stall_weight(sum.worst))
			sum.worst = s;
		pairs[2 * i] = sw_tree_stall_signature(p, s);
		pairs[2 * i + 1] = i;
	}
	sum.stalls = n;
	qsort(pairs, n, 2 * sizeof(*pairs), compare_u64_pairs);
	for (size_t i = 0; i < n;) {
		struct sw_summary_sig g = {.signature = pairs[2 * i]};
		size_t j = i;
		for (; j < n && pairs[2 * j] == g.signature; j++) {
			const struct sw_tree_stall *s = sw_profile_stall(p, pairs[2 * j + 1]);
			g.stalls++;
			g.total_ns += stall_weight(s);
			if (!g.example || stall_weight(s) > stall_weight(g.example))
				g.example = s;
		}
		sum.nsignatures++;
		add_top(&sum, &g);
		i = j;
	}
	free(pairs);
	*ret = sum;
	return 0;
}

struct sw_examples {
	struct example_slot {
		uint64_t signature;
		struct sw_tree_stall *heaviest, *longest; /* NULL: an empty slot */
	} * slot;
	size_t n, cap;
};

int sw_examples_new(struct sw_examples **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

void sw_examples_free(struct sw_examples *x)
{
	if (!x)
		return;
	free(x->slot);
	free(x);
}

static int grow_examples(struct sw_examples *x)
{
	size_t cap = x->cap ? x->cap * 2 : 64;
	struct example_slot *t = calloc(cap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < x->cap; i++) {
		if (!x->slot[i].heaviest)
			continue;
		size_t j = x->slot[i].signature & (cap - 1);
		while (t[j].heaviest)
			j = (j + 1) & (cap - 1);
		t[j] = x->slot[i];
	}
	free(x->slot);
	x->slot = t;
	x->cap = cap;
	return 0;
}

void sw_examples_printed(struct sw_examples *x, struct sw_profile *p, struct sw_tree_stall *s)
{
	/* no room to remember it: it keeps its samples, which costs memory, not answers */
	if (x->n * 2 >= x->cap && grow_examples(x) < 0)
		return;
	uint64_t sig = sw_tree_stall_signature(p, s);
	size_t j = sig & (x->cap - 1);
	while (x->slot[j].heaviest && x->slot[j].signature != sig)
		j = (j + 1) & (x->cap - 1);
	struct example_slot *e = &x->slot[j];
	if (!e->heaviest) {
		*e = (struct example_slot){sig, s, s};
		x->n++;
		return;
	}
	/* the same comparisons as sw_summary_compute() and JUnit's groups: a later tie loses */
	struct sw_tree_stall *was[2] = {e->heaviest, e->longest};
	if (stall_weight(s) > stall_weight(e->heaviest))
		e->heaviest = s;
	if (s->info.duration_ns > e->longest->info.duration_ns)
		e->longest = s;
	struct sw_tree_stall *gone[3] = {s, was[0], was[1]};
	for (size_t i = 0; i < 3; i++)
		if (gone[i] != e->heaviest && gone[i] != e->longest && !gone[i]->samples_dropped)
			sw_tree_stall_drop_samples(p, gone[i]);
}

/* Whether a linkage name is sub_<hex>: a stripped function, named by its address. */
static bool address_name(const char *linkage)
{
	const char *hex = linkage + 4;
	return strncmp(linkage, "sub_", 4) == 0 && *hex &&
	       strspn(hex, "0123456789abcdef") == strlen(hex);
}

/* What a frame is to the culprit; each kind takes the ones before it too. */
enum culprit_kind {
	OTHER,    /* not the app's own code */
	NAMED,    /* the app's, with a name the symbols gave */
	STRIPPED, /* the app's, sub_<hex>: a stripped function, known by its address */
};

/*
 * Whether a frame is a function of the app's own code: not a system image
 * (but the runtime the app hands its work to, see sw_tree_runtime_image()),
 * not a library compiled into the app (sw_profile_frame_compiled_in()),
 * not a PLT entry or stub (in the app's image, but only a jump to another
 * library's function: a stripped app's only names); and how it is named.
 */
static enum culprit_kind culprit_kind(const struct sw_profile *p, uint32_t id, uint32_t runtime)
{
	const struct sw_tree_frame *f = sw_profile_get_frame(p, id);
	const struct sw_tree_image *img = sw_profile_get_image(p, f->image);
	if (!img || (img->system && f->image != runtime) || !f->linkage ||
	    sw_demangle_is_stub(f->linkage) || sw_profile_frame_compiled_in(p, id))
		return OTHER;
	return address_name(f->linkage) ? STRIPPED : NAMED;
}

/*
 * The function of the app's own code, of kind up to most, that the most
 * self time of t is charged to: each node's goes to its nearest such, not
 * inlined, caller (or itself); nodes under the <unwinding stopped> root are
 * left out unless partial_only.  NULL: none on any stack.  *ret_stripped
 * is set when a STRIPPED frame was met.
 */
static const struct sw_tree_frame *charged_most(struct sw_profile *p, const struct sw_tree *t,
						uint32_t runtime, bool partial_only,
						enum culprit_kind most, bool *ret_stripped)
{
	const uint32_t NONE = UINT32_MAX, STOPPED = UINT32_MAX - 1;
	uint64_t *charged = calloc(t->nnodes ? t->nnodes : 1, sizeof(*charged));
	uint32_t *to = malloc((t->nnodes ? t->nnodes : 1) * sizeof(*to));
	/* parents come before their children: each node's answer is its own or its parent's */
	for (uint32_t i = 0; charged && to && i < t->nnodes; i++) {
		uint32_t parent = t->nodes[i].parent;
		const struct sw_tree_frame *f = sw_profile_get_frame(p, t->nodes[i].frame);
		enum culprit_kind kind =
		    f->inlined ? OTHER : culprit_kind(p, t->nodes[i].frame, runtime);
		*ret_stripped |= kind == STRIPPED;
		if (parent == NONE ? sw_tree_frame_is_stopped(f) && !partial_only
				   : to[parent] == STOPPED)
			to[i] = STOPPED;
		else if (kind != OTHER && kind <= most)
			to[i] = i;
		else
			to[i] = parent == NONE ? NONE : to[parent];
		if (to[i] < STOPPED)
			charged[to[i]] += t->nodes[i].self;
	}
	free(to);
	const struct sw_tree_frame *best = NULL;
	uint64_t best_w = 0;
	for (uint32_t i = 0; charged && i < t->nnodes; i++)
		if (charged[i] > best_w) {
			best_w = charged[i];
			best = sw_profile_get_frame(p, t->nodes[i].frame);
		}
	free(charged);
	return best;
}

const struct sw_tree_frame *sw_render_culprit(struct sw_profile *p, const struct sw_tree_stall *s)
{
	struct sw_tree_stall *ms = (struct sw_tree_stall *)s;
	struct sw_tree *t;
	if (sw_tree_stall_default_tree(p, ms, 0, &t) < 0) /* every node's self time */
		return NULL;
	/* a signature root under the marker: every stack stopped, the partial ones are all */
	uint32_t root = sw_tree_signature_root(p, t);
	bool partial_only = root != UINT32_MAX && t->nodes[root].parent != UINT32_MAX;
	uint32_t runtime = root != UINT32_MAX ? sw_tree_runtime_image(p, t, root) : UINT32_MAX;
	/*
	 * A named function first; a stripped app has none but its sub_<hex>,
	 * which still say where in the app to look, where the heaviest path's
	 * leaf named a C library function the app spent a sliver in.
	 */
	bool stripped = false;
	const struct sw_tree_frame *best =
	    charged_most(p, t, runtime, partial_only, NAMED, &stripped);
	if (!best && stripped)
		best = charged_most(p, t, runtime, partial_only, STRIPPED, &stripped);
	/* none: the deepest frame of the heaviest path but a stub, as a last resort */
	const struct sw_tree_frame *leaf = NULL;
	for (uint32_t i = root; !best && i != UINT32_MAX; i = t->nodes[i].first_child) {
		const struct sw_tree_frame *f = sw_profile_get_frame(p, t->nodes[i].frame);
		if (!leaf || !f->linkage || !sw_demangle_is_stub(f->linkage))
			leaf = f;
	}
	sw_tree_free(t);
	return best ? best : leaf;
}

int sw_summary_text(const struct sw_profile *cp, const struct sw_summary *sum,
		    const struct sw_render_options *o, struct sw_buf *out)
{
	struct sw_profile *p = (struct sw_profile *)cp;
	char w[32], label[96], scratch[32];
	sw_render_weight(sum->total_ns, sum->counts_only, w, sizeof(w));
	int r = sw_buf_printf(out, "stallwatch: %zu stall%s, %s stalled in total", sum->stalls,
			      sum->stalls == 1 ? "" : "s", w);
	if (r >= 0 && sum->worst) {
		sw_tree_stall_label(sum->worst, o->qualify, label, sizeof(label));
		sw_render_weight(stall_weight(sum->worst), sum->worst->info.counts_only, w,
				 sizeof(w));
		r = sw_buf_printf(out, "; worst %s (%s)", label, w);
	}
	if (r >= 0)
		r = sw_buf_puts(out, "\n");
	/* sparse trees the user should not read as the app's doing: 5% of the time and more */
	if (r >= 0 && sum->late_stalls && !sum->counts_only && sum->late_ns * 20 >= sum->total_ns) {
		sw_render_weight(sum->late_ns, false, w, sizeof(w));
		r = sw_buf_printf(
		    out,
		    "stallwatch: samples came late in %zu stall%s (%s in all, %.0f%% of "
		    "the stalled time): the machine kept the agent or the app from a "
		    "processor, so those trees hold fewer samples\n",
		    sum->late_stalls, sum->late_stalls == 1 ? "" : "s", w,
		    100.0 * (double)sum->late_ns / (double)sum->total_ns);
	}
	if (r >= 0 && sum->ntop)
		r = sw_buf_printf(out, "stallwatch: top signatures (%zu distinct):\n",
				  sum->nsignatures);
	for (size_t i = 0; i < sum->ntop && r >= 0; i++) {
		const struct sw_summary_sig *g = &sum->top[i];
		const struct sw_tree_frame *f = sw_render_culprit(p, g->example);
		const struct sw_tree_image *img = f ? sw_profile_get_image(p, f->image) : NULL;
		sw_render_weight(g->total_ns, sum->counts_only, w, sizeof(w));
		sw_tree_stall_label(g->example, o->qualify, label, sizeof(label));
		r = sw_buf_printf(
		    out, "  sig %016llx  %zu stall%s  %s  e.g. %s  %s%s%s%s\n",
		    (unsigned long long)g->signature, g->stalls, g->stalls == 1 ? "" : "s", w,
		    label,
		    f ? sw_tree_frame_name(p, f, o->tree.full_names, scratch, sizeof(scratch))
		      : "(no samples)",
		    img ? " (" : "", img ? img->name : "", img ? ")" : "");
	}
	return r;
}

struct sw_renderer {
	enum sw_format format;
	struct sw_render_options o;
	size_t stalls; /* json, speedscope: stalls written */
	struct sw_speedscope *ss;
	struct sw_folded *folded;
};

int sw_renderer_new(enum sw_format f, const struct sw_render_options *o, struct sw_renderer **ret)
{
	if ((size_t)f >= NFORMATS)
		return -EINVAL;
#if !SW_HAVE_ZLIB
	if (f == SW_FORMAT_PPROF)
		return -ENOTSUP;
#endif
	struct sw_renderer *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->format = f;
	r->o = *o;
	*ret = r;
	return 0;
}

void sw_renderer_free(struct sw_renderer *r)
{
	if (r) {
		sw_speedscope_free(r->ss);
		sw_folded_free(r->folded);
	}
	free(r);
}

enum sw_format sw_renderer_format(const struct sw_renderer *r)
{
	return r->format;
}

int sw_renderer_stall(struct sw_renderer *r, struct sw_profile *p, struct sw_tree_stall *s,
		      struct sw_buf *out)
{
	switch (r->format) {
	case SW_FORMAT_TREE:
		return sw_render_tree_stall(p, s, &r->o, out);
	case SW_FORMAT_SAMPLE:
		return sw_render_sample_stall(p, s, &r->o, out);
	case SW_FORMAT_NDJSON: {
		int e = sw_render_json_stall(p, s, &r->o, true, out);
		return e < 0 ? e : sw_buf_putc(out, '\n');
	}
	case SW_FORMAT_FOLDED: {
		int e = r->folded ? 0 : sw_folded_new(&r->o, &r->folded);
		return e < 0 ? e : sw_folded_stall(r->folded, p, s, &r->o, out);
	}
	case SW_FORMAT_JSON: {
		int e = r->stalls++ ? sw_buf_putc(out, ',') : sw_render_json_begin(&r->o, out);
		return e < 0 ? e : sw_render_json_stall(p, s, &r->o, false, out);
	}
	case SW_FORMAT_SPEEDSCOPE: {
		int e = r->ss ? 0 : sw_speedscope_new(&r->o, &r->ss);
		r->stalls++;
		return e < 0 ? e : sw_speedscope_stall(r->ss, p, s, out);
	}
	default:
		return 0;
	}
}

int sw_renderer_warning(struct sw_renderer *r, const char *text, struct sw_buf *out)
{
	if (r->format != SW_FORMAT_NDJSON)
		return 0;
	int first = 1;
	int e = sw_buf_putc(out, '{');
	if (e >= 0)
		e = sw_json_key(out, &first, "schema");
	if (e >= 0)
		e = sw_buf_printf(out, "%d", SW_RENDER_SCHEMA);
	if (e >= 0)
		e = sw_json_key(out, &first, "type");
	if (e >= 0)
		e = sw_json_string(out, "warning");
	if (e >= 0)
		e = sw_json_key(out, &first, "message");
	if (e >= 0)
		e = sw_json_string(out, text);
	return e < 0 ? e : sw_buf_puts(out, "}\n");
}

int sw_renderer_end(struct sw_renderer *r, struct sw_profile *p, struct sw_buf *out)
{
	switch (r->format) {
	case SW_FORMAT_NDJSON: {
		struct sw_summary sum;
		int e = sw_summary_compute(p, &sum);
		if (e >= 0)
			e = sw_render_json_summary(p, &sum, &r->o, true, out);
		return e < 0 ? e : sw_buf_putc(out, '\n');
	}
	case SW_FORMAT_JSON: {
		int e = 0;
		/* stalls the profile holds but --max-stalls kept from printing: as before */
		for (size_t i = r->stalls; i < sw_profile_nstalls(p) && e >= 0; i++)
			e = sw_renderer_stall(r, p, sw_profile_stall(p, i), out);
		if (e >= 0 && !r->stalls)
			e = sw_render_json_begin(&r->o, out);
		return e < 0 ? e : sw_render_json_end(p, &r->o, out);
	}
	case SW_FORMAT_SPEEDSCOPE: {
		int e = 0;
		/* stalls the profile holds but --max-stalls kept from printing: as before */
		for (size_t i = r->stalls; i < sw_profile_nstalls(p) && e >= 0; i++)
			e = sw_renderer_stall(r, p, sw_profile_stall(p, i), out);
		if (e >= 0 && !r->ss)
			e = sw_speedscope_new(&r->o, &r->ss);
		return e < 0 ? e : sw_speedscope_end(r->ss, out);
	}
	case SW_FORMAT_PPROF:
		return sw_render_pprof(p, &r->o, out);
	default:
		return 0;
	}
}
