/*
 * Tests for call trees (tree.c, tree-build.c): aggregation, every display
 * option and signatures.  Each expectation is computed here from the
 * samples the test feeds, by plain loops that share no code with the tree.
 */
#include <errno.h>
#include <malloc.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "render/junit.h"
#include "render/render.h"
#include "tree/tree.h"

#define NONE UINT32_MAX

/* A stack spec: "image!function|..." root first; images "app" or "libc". */
struct spec {
	const char *stack;
	uint64_t weight;
	int thread; /* 0 main, 1 worker */
};

static const struct spec specs[] = {
    {"libc!__libc_start_main|app!main|app!run|app!compute|app!compute|app!compute|libc!memcpy", 30,
     0},
    {"libc!__libc_start_main|app!main|app!run|app!compute|app!compute", 20, 0},
    {"libc!__libc_start_main|app!main|app!run|libc!poll", 15, 0},
    {"libc!__libc_start_main|app!main|app!load|libc!read", 10, 0},
    {"libc!__libc_start_main|app!main|app!load", 5, 0},
    {"libc!__libc_start_main|app!main", 1, 0},
    {"libc!start_thread|app!worker|libc!memcpy", 7, 1},
};
#define NSPECS (sizeof(specs) / sizeof(specs[0]))

struct fixture {
	struct sw_profile *p;
	struct sw_tree_stall *s;
	uint32_t img_app, img_libc;
};

/* slide moves every address; line_shift changes every line */
static uint32_t frame_of(struct fixture *fx, const char *tok, uint64_t slide, unsigned line_shift,
			 const char *prefix)
{
	char image[32], fn[64];
	const char *bang = strchr(tok, '!');
	snprintf(image, sizeof(image), "%.*s", (int)(bang - tok), tok);
	snprintf(fn, sizeof(fn), "%s%s", prefix, bang + 1);
	bool libc = strcmp(image, "libc") == 0;
	char disp[80];
	snprintf(disp, sizeof(disp), "%s()", bang + 1);
	struct sw_tree_frame f = {
	    .image = libc ? fx->img_libc : fx->img_app,
	    .linkage = fn,
	    .name = disp,
	    .file = libc ? NULL : "app.c",
	    .line = libc ? 0 : (unsigned)strlen(fn) + line_shift,
	    .address = slide + 0x1000 + strlen(fn) * 16,
	};
	uint32_t id = 0;
	CHECK_INT(sw_profile_frame(fx->p, &f, &id), 0);
	return id;
}

static void load(struct fixture *fx, const struct spec *sp, size_t n, uint64_t slide,
		 unsigned line_shift, const char *prefix)
{
	CHECK_INT(sw_profile_new(&fx->p), 0);
	struct sw_tree_image app = {.path = "/opt/demo/bin/app", .load_address = slide};
	struct sw_tree_image libc = {.path = "/usr/lib/x86_64-linux-gnu/libc.so.6",
				     .load_address = slide + 0x7f0000000000};
	CHECK_INT(sw_profile_image(fx->p, &app, &fx->img_app), 0);
	CHECK_INT(sw_profile_image(fx->p, &libc, &fx->img_libc), 0);
	struct sw_tree_stall_info info = {.id = 3, .thread_id = 100, .duration_ns = 100};
	CHECK_INT(sw_profile_add_stall(fx->p, &info, &fx->s), 0);
	uint32_t th[2];
	CHECK_INT(sw_tree_stall_thread(fx->p, fx->s, 100, "", &th[0]), 0);
	CHECK_INT(sw_tree_stall_thread(fx->p, fx->s, 200, "worker", &th[1]), 0);
	for (size_t i = 0; i < n; i++) {
		uint32_t frames[16];
		size_t depth = 0;
		char buf[256];
		snprintf(buf, sizeof(buf), "%s", sp[i].stack);
		for (char *tok = strtok(buf, "|"); tok; tok = strtok(NULL, "|"))
			frames[depth++] = frame_of(fx, tok, slide, line_shift, prefix);
		CHECK_INT(sw_tree_stall_add_sample(fx->p, fx->s, th[sp[i].thread], frames, depth,
						   sp[i].weight),
			  0);
	}
}

static const char *node_fn(const struct sw_tree *t, uint32_t i)
{
	return sw_profile_get_frame(t->profile, t->nodes[i].frame)->linkage;
}

/* The child of node (NONE: roots) for function fn, or NONE. */
static uint32_t child(const struct sw_tree *t, uint32_t node, const char *fn)
{
	uint32_t c = node == NONE ? t->first_root : t->nodes[node].first_child;
	for (; c != NONE; c = t->nodes[c].next_sibling)
		if (strcmp(node_fn(t, c), fn) == 0)
			return c;
	return NONE;
}

/* Follows a path "a|b|c" of function names from the roots. */
static uint32_t find(const struct sw_tree *t, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	uint32_t node = NONE;
	for (char *tok = strtok(buf, "|"); tok; tok = strtok(NULL, "|")) {
		node = child(t, node, tok);
		if (node == NONE)
			return NONE;
	}
	return node;
}

/* Every node: total = self + children; children sorted; roots sum to total. */
static void check_invariants(const struct sw_tree *t)
{
	uint64_t roots = 0, selfs = 0;
	for (uint32_t i = 0; i < t->nnodes; i++) {
		const struct sw_tree_node *n = &t->nodes[i];
		uint64_t sum = n->self, prev = UINT64_MAX;
		for (uint32_t c = n->first_child; c != NONE; c = t->nodes[c].next_sibling) {
			sum += t->nodes[c].total;
			CHECK(t->nodes[c].total <= prev);
			prev = t->nodes[c].total;
			CHECK_INT(t->nodes[c].depth, n->depth + 1);
		}
		CHECK_INT(sum, n->total);
		selfs += n->self;
	}
	for (uint32_t c = t->first_root; c != NONE; c = t->nodes[c].next_sibling)
		roots += t->nodes[c].total;
	CHECK_INT(roots, t->total);
	CHECK_INT(selfs, t->total);
}

/* The weight of the main thread's samples whose stack contains every word of need. */
static uint64_t spec_weight(const char *contains, int thread)
{
	uint64_t w = 0;
	for (size_t i = 0; i < NSPECS; i++)
		if (specs[i].thread == thread && (!contains || strstr(specs[i].stack, contains)))
			w += specs[i].weight;
	return w;
}

static void test_plain(void)
{
	struct fixture fx;
	load(&fx, specs, NSPECS, 0x555500000000, 0, "");
	struct sw_tree *t;
	CHECK_INT(sw_tree_build(fx.p, &fx.s, 1, NULL, -1, &t), 0);
	check_invariants(t);
	CHECK_INT(t->total, spec_weight(NULL, 0));
	CHECK_INT(t->all, t->total);
	uint32_t n = find(t, "__libc_start_main|main|run|compute");
	CHECK(n != NONE);
	if (n != NONE) {
		CHECK_INT(t->nodes[n].total, 50);
		CHECK_INT(t->nodes[n].self, 0);
	}
	n = find(t, "__libc_start_main|main|run|compute|compute");
	CHECK(n != NONE && t->nodes[n].self == 20);
	n = find(t, "__libc_start_main|main");
	CHECK(n != NONE && t->nodes[n].self == 1 && t->nodes[n].samples == 6);
	/* heaviest path: main, run (65 > 15), compute x3, memcpy */
	uint32_t path[16];
	size_t len = sw_tree_heaviest(t, path, 16);
	CHECK_INT(len, 7);
	if (len == 7) {
		CHECK_STR(node_fn(t, path[2]), "run");
		CHECK_STR(node_fn(t, path[6]), "memcpy");
	}
	sw_tree_free(t);

	/* worker thread by name, then all threads one by one */
	struct sw_tree_options o;
	sw_tree_options_init(&o);
	o.thread = SW_THREAD_NAME;
	o.thread_name = "worker";
	CHECK_INT(sw_tree_build(fx.p, &fx.s, 1, &o, -1, &t), 0);
	CHECK_INT(t->total, spec_weight(NULL, 1));
	CHECK(find(t, "start_thread|worker|memcpy") != NONE);
	sw_tree_free(t);
	o.thread = SW_THREAD_ALL;
	CHECK_INT(sw_tree_build(fx.p, &fx.s, 1, &o, -1, &t), 0);
	CHECK_INT(t->total, spec_weight(NULL, 0) + spec_weight(NULL, 1));
	sw_tree_free(t);
	CHECK_INT(sw_tree_build(fx.p, &fx.s, 1, &o, 1, &t), 0);
	CHECK_INT(t->total, spec_weight(NULL, 1));
	sw_tree_free(t);
	sw_profile_free(fx.p);
}

static void test_options(void)
{
	struct fixture fx;
	load(&fx, specs, NSPECS, 0x555500000000, 0, "");
	struct sw_tree_options o;
	struct sw_tree *t;

	sw_tree_options_init(&o);
	o.invert = true;
	CHECK_INT(sw_tree_build(fx.p, &fx.s, 1, &o, -1, &t), 0);
	check_invariants(t);
	/* roots are leaf functions: memcpy 30, compute 20, poll 15, read 10, load 5, main 1 */
	CHECK_STR(node_fn(t, t->first_root), "memcpy");
	CHECK_INT(t->nodes[t->first_root].total, 30);
	CHECK(find(t, "poll|run|main|__libc_start_main") != NONE);
	CHECK_INT(t->nodes[find(t, "main")].total, 1);
	sw_tree_free(t);

	sw_tree_options_init(&o);
	o.hide_system = true;
	CHECK_INT(sw_tree_build(fx.p, &fx.s, 1, &o, -1, &t), 0);
	check_invariants(t);
	CHECK_STR(node_fn(t, t->first_root), "main");
	uint32_t n = find(t, "main|run");
	CHECK(n != NONE && t->nodes[n].self == 15); /* poll charged to run */
	n = find(t, "main|run|compute|compute|compute");
	CHECK(n != NONE && t->nodes[n].self == 30); /* memcpy charged to compute */
	sw_tree_free(t);

	sw_tree_options_init(&o);
	o.flatten_recursion = true;
	CHECK_INT(sw_tree_build(fx.p, &fx.s, 1, &o, -1, &t), 0);
	check_invariants(t);
	n = find(t, "__libc_start_main|main|run|compute");
	CHECK(n != NONE && t->nodes[n].self == 20 && t->nodes[n].total == 50);
	CHECK(find(t, "__libc_start_main|main|run|compute|compute") == NONE);
	CHECK(find(t, "__libc_start_main|main|run|compute|memcpy") != NONE);
	sw_tree_free(t);

	sw_tree_options_init(&o);
	o.max_depth = 3;
	CHECK_INT(sw_tree_build(fx.p, &fx.s, 1, &o, -1, &t), 0);
	check_invariants(t);
	n = find(t, "__libc_start_main|main|run");
	CHECK(n != NONE && t->nodes[n].self == 65 && t->nodes[n].first_child == NONE);
	sw_tree_free(t);

	regex_t re;
	CHECK_INT(regcomp(&re, "^(load|poll)$", REG_EXTENDED | REG_NOSUB), 0);
	sw_tree_options_init(&o);
	o.focus = &re;
	CHECK_INT(sw_tree_build(fx.p, &fx.s, 1, &o, -1, &t), 0);
	check_invariants(t);
	CHECK_INT(t->total, spec_weight("!load", 0) + spec_weight("!poll", 0));
	CHECK_INT(t->all, spec_weight(NULL, 0));
	sw_tree_free(t);
	sw_tree_options_init(&o);
	o.exclude = &re;
	CHECK_INT(sw_tree_build(fx.p, &fx.s, 1, &o, -1, &t), 0);
	check_invariants(t);
	CHECK_INT(t->total,
		  spec_weight(NULL, 0) - spec_weight("!load", 0) - spec_weight("!poll", 0));
	sw_tree_free(t);
	regfree(&re);

	/* images match too */
	CHECK_INT(regcomp(&re, "libc\\.so", REG_EXTENDED | REG_NOSUB), 0);
	sw_tree_options_init(&o);
	o.exclude = &re;
	CHECK_INT(sw_tree_build(fx.p, &fx.s, 1, &o, -1, &t), 0);
	CHECK_INT(t->total, 0);
	CHECK(t->first_root == NONE);
	sw_tree_free(t);
	regfree(&re);

	/* min-percent: 1 of 81 is 1.2% */
	sw_tree_options_init(&o);
	CHECK_INT(sw_tree_build(fx.p, &fx.s, 1, &o, -1, &t), 0);
	n = find(t, "__libc_start_main|main|load");
	CHECK(n != NONE && sw_tree_node_visible(t, &t->nodes[n], &o));
	o.min_percent = 20;
	CHECK(!sw_tree_node_visible(t, &t->nodes[n], &o)); /* 15 of 81 */
	sw_tree_free(t);
	sw_profile_free(fx.p);
}

/* FNV-1a 64 over "image\0linkage\0" of each "image|linkage" given, as tree.h defines it. */
static uint64_t fnv_path(const char *const *pairs, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		for (const char *c = pairs[i];; c++) {
			h = (h ^ (uint8_t)(*c == '|' ? 0 : *c)) * 0x100000001b3ull;
			if (!*c)
				break;
		}
	return h;
}

static void test_signatures(void)
{
	struct fixture a, b, c, d;
	load(&a, specs, NSPECS, 0x555500000000, 0, "");
	/* the heaviest path, compute's recursion once, the libc leaf left out */
	static const char *const path[] = {"libc.so.6|__libc_start_main", "app|main", "app|run",
					   "app|compute"};
	CHECK(sw_tree_stall_signature(a.p, a.s) == fnv_path(path, 4));
	/* another ASLR slide and other lines: the same signature */
	load(&b, specs, NSPECS, 0x5612340000, 7, "");
	uint64_t sa = sw_tree_stall_signature(a.p, a.s);
	CHECK(sa == sw_tree_stall_signature(b.p, b.s));
	CHECK(sa == sw_tree_stall_signature(a.p, a.s));
	/* different linkage names: a different signature */
	load(&c, specs, NSPECS, 0x555500000000, 0, "_Z");
	CHECK(sa != sw_tree_stall_signature(c.p, c.s));
	/* a different heaviest leaf: poll made heaviest */
	struct spec other[NSPECS];
	memcpy(other, specs, sizeof(other));
	other[2].weight = 100;
	load(&d, other, NSPECS, 0x555500000000, 0, "");
	CHECK(sa != sw_tree_stall_signature(d.p, d.s));
	/* a system leaf under the same app frame is noise, not another hang */
	other[2].weight = 15;
	other[0].stack = "libc!__libc_start_main|app!main|app!run|app!compute|app!compute|"
			 "app!compute|libc!memset";
	sw_profile_free(d.p);
	load(&d, other, NSPECS, 0x555500000000, 0, "");
	CHECK(sa == sw_tree_stall_signature(d.p, d.s));
	/* deeper recursion is the same hang; recursion through another function is not */
	other[0].stack = "libc!__libc_start_main|app!main|app!run|app!compute|app!compute|"
			 "app!compute|app!compute|app!compute|app!compute|libc!memcpy";
	other[1].stack = "libc!__libc_start_main|app!main|app!run|app!compute|app!compute|"
			 "app!compute|app!compute";
	sw_profile_free(d.p);
	load(&d, other, NSPECS, 0x555500000000, 0, "");
	CHECK(sa == sw_tree_stall_signature(d.p, d.s));
	other[0].stack = "libc!__libc_start_main|app!main|app!run|app!compute|app!step|"
			 "app!compute|libc!memcpy";
	other[0].weight = 60; /* step holds most of the stall */
	sw_profile_free(d.p);
	load(&d, other, NSPECS, 0x555500000000, 0, "");
	CHECK(sa != sw_tree_stall_signature(d.p, d.s));
	other[0].weight = specs[0].weight;
	other[0].stack = specs[0].stack;
	other[1].stack = specs[1].stack;
	/* the worker thread does not count */
	other[2].weight = 15;
	other[6].weight = 1000;
	sw_profile_free(d.p);
	load(&d, other, NSPECS, 0x555500000000, 0, "");
	CHECK(sa == sw_tree_stall_signature(d.p, d.s));
	sw_profile_free(a.p);
	sw_profile_free(b.p);
	sw_profile_free(c.p);
	sw_profile_free(d.p);
}

/*
 * Signatures end at the deepest frame holding most of the stall (version
 * 9): below it, a leaf that took one sample in one stall and none in
 * another, or two siblings trading places, are the same hang; a child
 * holding most of the time still tells hangs apart.
 */
static void test_signature_majority(void)
{
	static const struct spec base[] = {
	    {"libc!__libc_start_main|app!main|app!handler|app!parse", 40, 0},
	    {"libc!__libc_start_main|app!main|app!handler|app!render", 35, 0},
	    {"libc!__libc_start_main|app!main|app!handler", 25, 0},
	};
	struct spec v[3];
	struct fixture a, b;
	load(&a, base, 3, 0x555500000000, 0, "");
	uint64_t sa = sw_tree_stall_signature(a.p, a.s);
	static const char *const path[] = {"libc.so.6|__libc_start_main", "app|main",
					   "app|handler"};
	CHECK(sa == fnv_path(path, 3));
	/* the siblings trade places */
	memcpy(v, base, sizeof(v));
	v[0].weight = 35;
	v[1].weight = 40;
	load(&b, v, 3, 0x555500000000, 0, "");
	CHECK(sa == sw_tree_stall_signature(b.p, b.s));
	sw_profile_free(b.p);
	/* parse holding most of the stall is another hang */
	memcpy(v, base, sizeof(v));
	v[0].weight = 70;
	load(&b, v, 3, 0x555500000000, 0, "");
	uint64_t sp = sw_tree_stall_signature(b.p, b.s);
	static const char *const parse[] = {"libc.so.6|__libc_start_main", "app|main",
					    "app|handler", "app|parse"};
	CHECK(sp == fnv_path(parse, 4));
	CHECK(sa != sp);
	sw_profile_free(b.p);
	/* and one sample in an inlined leaf of parse is the same hang */
	struct spec w[4];
	memcpy(w, v, sizeof(v));
	w[3] = (struct spec){"libc!__libc_start_main|app!main|app!handler|app!parse|app!get_int", 1,
			     0};
	load(&b, w, 4, 0x555500000000, 0, "");
	CHECK(sp == sw_tree_stall_signature(b.p, b.s));
	sw_profile_free(b.p);
	sw_profile_free(a.p);
}

static void test_merge_and_limits(void)
{
	struct fixture fx;
	load(&fx, specs, NSPECS, 0x1000, 0, "");
	struct sw_tree_stall_info info = {.id = 4, .thread_id = 100};
	struct sw_tree_stall *s2;
	CHECK_INT(sw_profile_add_stall(fx.p, &info, &s2), 0);
	uint32_t th;
	CHECK_INT(sw_tree_stall_thread(fx.p, s2, 100, "main", &th), 0);
	CHECK_INT(sw_tree_stall_add_sample(fx.p, s2, th, NULL, 0, 9), 0); /* empty stack */
	uint32_t f = 0;
	CHECK_INT(sw_tree_stall_add_sample(fx.p, s2, th, &f, 1, 4), 0);
	uint32_t bad = 1u << 30;
	CHECK(sw_tree_stall_add_sample(fx.p, s2, th, &bad, 1, 4) < 0);
	CHECK(sw_tree_stall_add_sample(fx.p, s2, 7, &f, 1, 4) < 0);
	struct sw_tree_stall *both[2] = {fx.s, s2};
	struct sw_tree *t;
	CHECK_INT(sw_tree_build(fx.p, both, 2, NULL, -1, &t), 0);
	CHECK_INT(t->total, spec_weight(NULL, 0) + 9 + 4);
	CHECK_INT(t->all, t->total);
	uint32_t n = find(t, "__libc_start_main");
	CHECK(n != NONE && t->nodes[n].total == spec_weight(NULL, 0) + 4);
	sw_tree_free(t);
	CHECK(sw_tree_path_is_system("/usr/lib/system/libsystem_kernel.dylib"));
	CHECK(sw_tree_path_is_system("/System/Library/Frameworks/UIKit.framework/UIKit"));
	CHECK(sw_tree_path_is_system("/lib/x86_64-linux-gnu/libc.so.6"));
	CHECK(!sw_tree_path_is_system("/usr/local/lib/libfoo.so"));
	CHECK(!sw_tree_path_is_system("/private/var/containers/Bundle/Application/X/App.app/App"));
	sw_profile_free(fx.p);
}

/* Frames of one function at other call sites: the node shows the one carrying most weight. */
static void test_representative(void)
{
	struct sw_profile *p;
	CHECK_INT(sw_profile_new(&p), 0);
	struct sw_tree_image app = {.path = "/opt/demo/bin/app", .load_address = 0x1000};
	uint32_t img;
	CHECK_INT(sw_profile_image(p, &app, &img), 0);
	uint32_t main_id, site[3];
	struct sw_tree_frame f = {.image = img, .linkage = "main", .address = 0x1100};
	CHECK_INT(sw_profile_frame(p, &f, &main_id), 0);
	for (int i = 0; i < 3; i++) {
		f = (struct sw_tree_frame){
		    .image = img, .linkage = "work", .address = 0x2000 + 0x10 * (uint64_t)i};
		CHECK_INT(sw_profile_frame(p, &f, &site[i]), 0);
	}
	struct sw_tree_stall_info info = {.id = 1, .thread_id = 1};
	struct sw_tree_stall *s;
	CHECK_INT(sw_profile_add_stall(p, &info, &s), 0);
	uint32_t th;
	CHECK_INT(sw_tree_stall_thread(p, s, 1, "", &th), 0);
	/*
	 * site 0 weighs 3, sites 1 and 2 weigh 2 each, in that order: no site
	 * has half the weight, and a majority vote would end on site 2
	 */
	const uint64_t w[] = {3, 2, 2};
	for (int i = 0; i < 3; i++) {
		uint32_t st[2] = {main_id, site[i]};
		CHECK_INT(sw_tree_stall_add_sample(p, s, th, st, 2, w[i]), 0);
	}
	for (int pass = 0; pass < 2; pass++) {
		struct sw_tree_options o;
		sw_tree_options_init(&o);
		o.expand_percent = pass ? 50 : 0;
		struct sw_tree *t;
		CHECK_INT(sw_tree_build(p, &s, 1, &o, -1, &t), 0);
		uint32_t n = t->first_root == NONE ? NONE : t->nodes[t->first_root].first_child;
		CHECK(n != NONE && t->nodes[n].frame == site[0] && t->nodes[n].total == 7);
		sw_tree_free(t);
	}
	/* a tie: the frame interned first */
	uint32_t st[2] = {main_id, site[2]};
	CHECK_INT(sw_tree_stall_add_sample(p, s, th, st, 2, 1), 0);
	struct sw_tree *t;
	CHECK_INT(sw_tree_build(p, &s, 1, NULL, -1, &t), 0);
	uint32_t n = t->first_root == NONE ? NONE : t->nodes[t->first_root].first_child;
	CHECK(n != NONE && t->nodes[n].frame == site[0]);
	sw_tree_free(t);
	sw_profile_free(p);
}

/*
 * Random profiles: every node of a whole tree against sums over the
 * samples (weights, counts and the representative frame by plain loops),
 * and trees expanded in part against whole ones.
 */
#define RND_FUNCS   9
#define RND_SITES   3
#define RND_STACKS  60
#define RND_SAMPLES 400
#define RND_DEPTH   12

struct rnd {
	struct sw_profile *p;
	struct sw_tree_stall *s;
	uint32_t frames[RND_FUNCS * RND_SITES];
	uint32_t stacks[RND_STACKS][RND_DEPTH];
	size_t depth[RND_STACKS];
	struct {
		uint32_t stack;
		uint64_t weight;
	} samples[RND_SAMPLES];
};

static uint64_t rnd_state = 0x2545f4914f6cdd1dull;

static uint32_t rnd_next(uint32_t n)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return (uint32_t)(rnd_state % n);
}

static void rnd_load(struct rnd *r)
{
	CHECK_INT(sw_profile_new(&r->p), 0);
	struct sw_tree_image app = {.path = "/opt/demo/bin/app", .load_address = 0x1000};
	struct sw_tree_image libc = {.path = "/usr/lib/libc.so.6", .load_address = 0x900000};
	uint32_t img[2];
	CHECK_INT(sw_profile_image(r->p, &app, &img[0]), 0);
	CHECK_INT(sw_profile_image(r->p, &libc, &img[1]), 0);
	for (uint32_t i = 0; i < RND_FUNCS * RND_SITES; i++) {
		char name[16];
		snprintf(name, sizeof(name), "f%u", i / RND_SITES);
		struct sw_tree_frame f = {.image = img[i / RND_SITES % 3 == 2],
					  .linkage = name,
					  .address = 0x1000 + 0x100 * (uint64_t)i};
		CHECK_INT(sw_profile_frame(r->p, &f, &r->frames[i]), 0);
	}
	/* stacks branch off earlier ones, so that they share prefixes */
	for (size_t k = 0; k < RND_STACKS; k++) {
		size_t keep = k ? rnd_next((uint32_t)r->depth[k - 1] + 1) : 0;
		size_t base = k ? rnd_next((uint32_t)k) : 0;
		if (keep > r->depth[base])
			keep = r->depth[base];
		memcpy(r->stacks[k], r->stacks[base], keep * sizeof(uint32_t));
		r->depth[k] = keep + rnd_next(RND_DEPTH - (uint32_t)keep + 1);
		if (r->depth[k] == 0)
			r->depth[k] = 1;
		for (size_t d = keep; d < r->depth[k]; d++)
			r->stacks[k][d] = r->frames[rnd_next(RND_FUNCS * RND_SITES)];
	}
	struct sw_tree_stall_info info = {.id = 1, .thread_id = 1};
	CHECK_INT(sw_profile_add_stall(r->p, &info, &r->s), 0);
	uint32_t th;
	CHECK_INT(sw_tree_stall_thread(r->p, r->s, 1, "", &th), 0);
	for (size_t i = 0; i < RND_SAMPLES; i++) {
		/* a few heavy stacks, a long tail of light ones */
		uint32_t k = rnd_next(4) ? rnd_next(6) : rnd_next(RND_STACKS);
		r->samples[i].stack = k;
		r->samples[i].weight = 1 + rnd_next(5);
		CHECK_INT(sw_tree_stall_add_sample(r->p, r->s, th, r->stacks[k], r->depth[k],
						   r->samples[i].weight),
			  0);
	}
}

/* Node i of t against the samples: weights, counts and representative frame. */
static void rnd_check_node(const struct rnd *r, const struct sw_tree *t, uint32_t i)
{
	uint64_t path[RND_DEPTH + 1];
	uint32_t depth = t->nodes[i].depth;
	for (uint32_t k = i; k != NONE; k = t->nodes[k].parent)
		path[t->nodes[k].depth] = sw_profile_frame_func(r->p, t->nodes[k].frame);
	uint64_t total = 0, self = 0, samples = 0, self_samples = 0;
	uint64_t by_frame[RND_FUNCS * RND_SITES] = {0};
	for (size_t j = 0; j < RND_SAMPLES; j++) {
		const uint32_t *st = r->stacks[r->samples[j].stack];
		size_t d = r->depth[r->samples[j].stack];
		if (d <= depth)
			continue;
		bool same = true;
		for (uint32_t k = 0; k <= depth && same; k++)
			same = sw_profile_frame_func(r->p, st[k]) == path[k];
		if (!same)
			continue;
		total += r->samples[j].weight;
		samples++;
		if (d == depth + 1) {
			self += r->samples[j].weight;
			self_samples++;
		}
		for (uint32_t f = 0; f < RND_FUNCS * RND_SITES; f++)
			if (r->frames[f] == st[depth])
				by_frame[f] += r->samples[j].weight;
	}
	uint32_t best = 0;
	for (uint32_t f = 1; f < RND_FUNCS * RND_SITES; f++)
		if (by_frame[f] > by_frame[best])
			best = f;
	CHECK_INT(t->nodes[i].total, total);
	CHECK_INT(t->nodes[i].self, self);
	CHECK_INT(t->nodes[i].samples, samples);
	CHECK_INT(t->nodes[i].self_samples, self_samples);
	CHECK_INT(t->nodes[i].frame, r->frames[best]);
}

/* Nodes a of part and b of whole, and what is under them: equal where part is expanded. */
static void same_subtree(const struct sw_tree *part, uint32_t a, const struct sw_tree *whole,
			 uint32_t b, double percent, bool heavy)
{
	const struct sw_tree_node *na = &part->nodes[a], *nb = &whole->nodes[b];
	CHECK_INT(na->frame, nb->frame);
	CHECK_INT(na->total, nb->total);
	CHECK_INT(na->self, nb->self);
	CHECK_INT(na->samples, nb->samples);
	CHECK_INT(na->self_samples, nb->self_samples);
	CHECK_INT(na->depth, nb->depth);
	if (na->first_child == NONE && nb->first_child != NONE) {
		/* left unexpanded: only a node under the percent, off the heaviest path */
		CHECK(!heavy && (double)na->total * 100.0 < percent * (double)part->all);
		return;
	}
	uint32_t ca = na->first_child, cb = nb->first_child;
	for (bool first = true; ca != NONE && cb != NONE; first = false) {
		same_subtree(part, ca, whole, cb, percent, heavy && first);
		ca = part->nodes[ca].next_sibling;
		cb = whole->nodes[cb].next_sibling;
	}
	CHECK(ca == NONE && cb == NONE);
}

static void test_random(void)
{
	for (int round = 0; round < 20; round++) {
		struct rnd *r = calloc(1, sizeof(*r));
		uint64_t seed = rnd_state;
		rnd_load(r);
		struct sw_tree *whole;
		CHECK_INT(sw_tree_build(r->p, &r->s, 1, NULL, -1, &whole), 0);
		check_invariants(whole);
		for (uint32_t i = 0; i < whole->nnodes; i++)
			rnd_check_node(r, whole, i);
		/* the signature of the whole default tree */
		struct sw_tree *t;
		CHECK_INT(sw_tree_stall_default_tree(r->p, r->s, 0, &t), 0);
		CHECK_INT(t->nnodes, whole->nnodes);
		sw_tree_free(t);
		uint64_t sig = sw_tree_stall_signature(r->p, r->s);
		const double percents[] = {0.5, 2, 10, 30, 75, SW_TREE_EXPAND_HEAVIEST};
		for (size_t k = 0; k < sizeof(percents) / sizeof(percents[0]); k++) {
			struct sw_tree_options o;
			sw_tree_options_init(&o);
			o.expand_percent = percents[k];
			struct sw_tree *part;
			CHECK_INT(sw_tree_build(r->p, &r->s, 1, &o, -1, &part), 0);
			CHECK(part->nnodes <= whole->nnodes);
			uint32_t ca = part->first_root, cb = whole->first_root;
			for (int n = 0; ca != NONE && cb != NONE; n++) {
				same_subtree(part, ca, whole, cb, percents[k], n < 2);
				ca = part->nodes[ca].next_sibling;
				cb = whole->nodes[cb].next_sibling;
			}
			CHECK(ca == NONE && cb == NONE);
			uint32_t pa[RND_DEPTH + 1], pb[RND_DEPTH + 1];
			size_t la = sw_tree_heaviest(part, pa, RND_DEPTH + 1);
			CHECK_INT(la, sw_tree_heaviest(whole, pb, RND_DEPTH + 1));
			for (size_t i = 0; i < la; i++)
				CHECK_INT(part->nodes[pa[i]].frame, whole->nodes[pb[i]].frame);
			sw_tree_free(part);
		}
		/* the same profile again: its signature from a tree of the heaviest path only */
		struct rnd *again = calloc(1, sizeof(*again));
		uint64_t after = rnd_state;
		rnd_state = seed;
		rnd_load(again);
		rnd_state = after;
		CHECK(sw_tree_stall_signature(again->p, again->s) == sig);
		CHECK_INT(
		    sw_tree_stall_default_tree(again->p, again->s, SW_TREE_EXPAND_HEAVIEST, &t), 0);
		CHECK(t->nnodes < whole->nnodes);
		sw_tree_free(t);
		sw_profile_free(again->p);
		free(again);
		/* rewriting options expand in part too: the same nodes as their whole trees */
		for (int opt = 0; opt < 3; opt++) {
			struct sw_tree_options o;
			sw_tree_options_init(&o);
			o.invert = opt == 0;
			o.hide_system = opt == 1;
			o.max_depth = opt == 2 ? 4 : 0;
			struct sw_tree *w, *part;
			CHECK_INT(sw_tree_build(r->p, &r->s, 1, &o, -1, &w), 0);
			o.expand_percent = 10;
			CHECK_INT(sw_tree_build(r->p, &r->s, 1, &o, -1, &part), 0);
			uint32_t ca = part->first_root, cb = w->first_root;
			for (int n = 0; ca != NONE && cb != NONE; n++) {
				same_subtree(part, ca, w, cb, 10, n < 2);
				ca = part->nodes[ca].next_sibling;
				cb = w->nodes[cb].next_sibling;
			}
			CHECK(ca == NONE && cb == NONE);
			sw_tree_free(w);
			sw_tree_free(part);
		}
		sw_tree_free(whole);
		sw_profile_free(r->p);
		free(r);
	}
}

/*
 * A tree's node i with self weight against the merged path of the same
 * functions: found, with the same weight and count (each path once).
 */
static void node_has_path(const struct sw_tree *t, uint32_t i, const struct sw_tree_paths *ps,
			  bool *used)
{
	uint64_t funcs[RND_DEPTH + 1];
	uint32_t depth = t->nodes[i].depth + 1;
	for (uint32_t k = i; k != NONE; k = t->nodes[k].parent)
		funcs[t->nodes[k].depth] = sw_profile_frame_func(t->profile, t->nodes[k].frame);
	size_t found = ps->n;
	for (size_t j = 0; j < ps->n && found == ps->n; j++) {
		const struct sw_tree_path *path = &ps->paths[j];
		bool same = path->depth == depth;
		for (uint32_t d = 0; d < depth && same; d++)
			same = sw_profile_frame_func(t->profile, path->path[d]) == funcs[d];
		if (same)
			found = j;
	}
	CHECK(found < ps->n);
	if (found == ps->n)
		return;
	CHECK(!used[found]);
	used[found] = true;
	CHECK_INT(ps->paths[found].weight, t->nodes[i].self);
	CHECK_INT(ps->paths[found].count, t->nodes[i].self_samples);
}

/*
 * Paths without a tree (folded, pprof): under each rewriting option, the
 * paths merged by function are the whole tree's nodes with self weight,
 * and have its totals; unmerged, each sample's stack once, in the order
 * they first appear.  Twice, for the hashes the profile keeps.
 */
static void test_paths(void)
{
	for (int round = 0; round < 20; round++) {
		struct rnd *r = calloc(1, sizeof(*r));
		rnd_load(r);
		for (int opt = 0; opt < 10; opt++) {
			struct sw_tree_options o;
			sw_tree_options_init(&o);
			o.invert = opt % 5 == 1;
			o.hide_system = opt % 5 == 2;
			o.max_depth = opt % 5 == 3 ? 4 : 0;
			o.flatten_recursion = opt % 5 == 4;
			struct sw_tree *t;
			struct sw_tree_paths *ps;
			CHECK_INT(sw_tree_build(r->p, &r->s, 1, &o, -1, &t), 0);
			CHECK_INT(sw_tree_paths_build(r->p, &r->s, 1, &o, -1, &ps), 0);
			CHECK_INT(ps->total, t->total);
			CHECK_INT(ps->all, t->all);
			CHECK_INT(ps->nsamples, t->nsamples);
			if (opt == 0) {
				/* each stack once, as first sampled (two made alike are one) */
				size_t n = 0;
				for (size_t j = 0; j < RND_SAMPLES; j++) {
					uint32_t k = r->samples[j].stack;
					bool again = false;
					for (size_t e = 0; e < j && !again; e++) {
						uint32_t ke = r->samples[e].stack;
						again = r->depth[ke] == r->depth[k] &&
							memcmp(r->stacks[ke], r->stacks[k],
							       r->depth[k] * sizeof(uint32_t)) == 0;
					}
					if (again)
						continue;
					CHECK(n < ps->n);
					if (n >= ps->n)
						break;
					CHECK_INT(ps->paths[n].depth, r->depth[k]);
					for (size_t d = 0; d < r->depth[k]; d++)
						CHECK_INT(ps->paths[n].path[d], r->stacks[k][d]);
					n++;
				}
				CHECK_INT(ps->n, n);
			}
			CHECK_INT(sw_tree_paths_merge(ps), 0);
			bool used[RND_STACKS] = {false};
			size_t with_self = 0;
			for (uint32_t i = 0; i < t->nnodes; i++)
				if (t->nodes[i].self_samples) {
					node_has_path(t, i, ps, used);
					with_self++;
				}
			CHECK_INT(ps->n, with_self);
			sw_tree_paths_free(ps);
			sw_tree_free(t);
		}
		sw_profile_free(r->p);
		free(r);
	}
}

/*
 * The profile's stacks past several growths: each stack's id gives back
 * its frames, and the same stacks met again, in another order, give the
 * same ids.
 */
static void test_stacks(void)
{
	enum { NSTACK = 6000, DEPTH = 24, NFRAME = 50 };
	struct sw_profile *p;
	CHECK_INT(sw_profile_new(&p), 0);
	uint32_t ids[NFRAME];
	for (uint32_t i = 0; i < NFRAME; i++) {
		char name[16];
		snprintf(name, sizeof(name), "g%u", i);
		struct sw_tree_frame f = {.linkage = name, .address = 0x1000 + i};
		CHECK_INT(sw_profile_frame(p, &f, &ids[i]), 0);
	}
	static uint32_t stacks[NSTACK][DEPTH];
	static uint32_t leaves[NSTACK];
	size_t depth[NSTACK];
	for (size_t k = 0; k < NSTACK; k++) {
		/* a prefix of an earlier stack, then frames of its own */
		size_t keep = k ? rnd_next(DEPTH) : 0, base = k ? rnd_next((uint32_t)k) : 0;
		if (keep > depth[base])
			keep = depth[base];
		memcpy(stacks[k], stacks[base], keep * sizeof(uint32_t));
		depth[k] = keep + 1 + rnd_next(DEPTH - (uint32_t)keep);
		for (size_t d = keep; d < depth[k]; d++)
			stacks[k][d] = ids[rnd_next(NFRAME)];
		CHECK_INT(sw_profile_stack_id(p, stacks[k], depth[k], &leaves[k]), 0);
	}
	int bad = 0;
	for (size_t k = 0; k < NSTACK; k++) {
		uint32_t back[DEPTH], leaf = 0;
		size_t n = sw_profile_stack(p, leaves[k], back, DEPTH);
		if (n != depth[k] || memcmp(back, stacks[k], n * sizeof(uint32_t)) != 0)
			bad++;
		size_t other = (k * 7919) % NSTACK; /* another order */
		CHECK_INT(sw_profile_stack_id(p, stacks[other], depth[other], &leaf), 0);
		if (leaf != leaves[other])
			bad++;
	}
	CHECK_INT(bad, 0);
	/* a frame the profile does not have, past a known prefix */
	uint32_t wrong[3] = {stacks[0][0], stacks[0][1], NFRAME + 5}, leaf;
	CHECK_INT(sw_profile_stack_id(p, wrong, 3, &leaf), -EINVAL);
	CHECK_INT(sw_profile_stack_id(p, stacks[1], depth[1], &leaf), 0);
	CHECK_INT(leaf, leaves[1]);
	sw_profile_free(p);
}

/* Bytes malloc has handed out and not had back. */
static size_t heap_in_use(void)
{
	struct mallinfo2 m = mallinfo2();
	return m.uordblks + m.hblkhd;
}

/*
 * Past the pool's room (8M frame ids, 32 MiB) stacks go to the trie: deep
 * stacks that differ only at the leaf, from both sides of the limit, give
 * back their frames and the same ids when met again in another order;
 * those past it cost a frame each, not a copy of the whole stack (4000
 * stacks of 4096 frames would be 64 MiB); and trees of them, top down and
 * leaves first, weigh what their samples do.
 */
static void test_pool_full(void)
{
	enum { DEPTH = 4096, NSTACK = 4000 };
	struct sw_profile *p;
	size_t before = heap_in_use();
	CHECK_INT(sw_profile_new(&p), 0);
	static uint32_t frames[DEPTH - 1 + NSTACK], stack[DEPTH], ids[NSTACK];
	for (uint32_t i = 0; i < DEPTH - 1 + NSTACK; i++) {
		char name[16];
		snprintf(name, sizeof(name), "h%u", i);
		struct sw_tree_frame f = {.linkage = name, .address = 0x1000 + i};
		CHECK_INT(sw_profile_frame(p, &f, &frames[i]), 0);
	}
	/* stack k: the same DEPTH - 1 frames, then leaf frame DEPTH - 1 + k */
	memcpy(stack, frames, (DEPTH - 1) * sizeof(*stack));
	for (uint32_t k = 0; k < NSTACK; k++) {
		stack[DEPTH - 1] = frames[DEPTH - 1 + k];
		CHECK_INT(sw_profile_stack_id(p, stack, DEPTH, &ids[k]), 0);
	}
	size_t grown = heap_in_use() - before;
	CHECK(grown < (40u << 20));
	if (grown >= (40u << 20))
		fprintf(stderr, "%zu bytes for %u stacks of %u frames\n", grown, NSTACK, DEPTH);
	int bad = 0;
	static uint32_t back[DEPTH];
	for (uint32_t k = 0; k < NSTACK; k++) {
		uint32_t other = (k * 7919) % NSTACK, id;
		stack[DEPTH - 1] = frames[DEPTH - 1 + other];
		CHECK_INT(sw_profile_stack_id(p, stack, DEPTH, &id), 0);
		bad += id != ids[other] || id == 0 || (k && ids[k] == ids[k - 1]);
		size_t n = sw_profile_stack(p, ids[other], back, DEPTH);
		bad += n != DEPTH || memcmp(back, stack, sizeof(back)) != 0;
	}
	CHECK_INT(bad, 0);

	struct sw_tree_stall_info info = {.id = 1, .thread_id = 1, .duration_ns = 1};
	struct sw_tree_stall *s;
	uint32_t th;
	CHECK_INT(sw_profile_add_stall(p, &info, &s), 0);
	CHECK_INT(sw_tree_stall_thread(p, s, 1, "main", &th), 0);
	uint64_t all = 0;
	for (uint32_t k = 0; k < NSTACK; k++) {
		CHECK_INT(sw_tree_stall_add_stack(p, s, th, ids[k], k + 1), 0);
		all += k + 1;
	}
	struct sw_tree_options o;
	sw_tree_options_init(&o);
	struct sw_tree *t;
	CHECK_INT(sw_tree_build(p, &s, 1, &o, -1, &t), 0);
	CHECK_INT(t->total, all);
	CHECK_INT(t->nnodes, DEPTH - 1 + NSTACK);
	uint32_t above = 0; /* the deepest shared frame: one child per stack */
	for (uint32_t i = 0; i < t->nnodes; i++)
		if (t->nodes[i].depth == DEPTH - 2)
			above = i;
	size_t kids = 0, right = 0;
	for (uint32_t c = t->nodes[above].first_child; c != NONE; c = t->nodes[c].next_sibling) {
		uint32_t k = t->nodes[c].frame - frames[DEPTH - 1];
		kids++;
		right += k < NSTACK && t->nodes[c].total == k + 1;
	}
	CHECK_INT(kids, NSTACK);
	CHECK_INT(right, NSTACK);
	sw_tree_free(t);
	/* leaves first, cut at one frame: each stack's leaf, read without a copy */
	o.invert = true;
	o.max_depth = 1;
	CHECK_INT(sw_tree_build(p, &s, 1, &o, -1, &t), 0);
	CHECK_INT(t->total, all);
	kids = right = 0;
	for (uint32_t c = t->first_root; c != NONE; c = t->nodes[c].next_sibling) {
		uint32_t k = t->nodes[c].frame - frames[DEPTH - 1];
		kids++;
		right +=
		    k < NSTACK && t->nodes[c].total == k + 1 && t->nodes[c].first_child == NONE;
	}
	CHECK_INT(kids, NSTACK);
	CHECK_INT(right, NSTACK);
	sw_tree_free(t);
	sw_profile_free(p);
}

/*
 * The culprit (render.c): self time goes to the nearest caller of the
 * app's own that has a name and is not inlined; stacks under
 * <unwinding stopped> count for nothing.
 */
static void test_culprit(void)
{
	struct sw_profile *p;
	CHECK_INT(sw_profile_new(&p), 0);
	struct sw_tree_image app = {.path = "/opt/app/bin/app", .load_address = 0x1000};
	struct sw_tree_image libc = {.path = "/usr/lib/x86_64-linux-gnu/libc.so.6",
				     .load_address = 0x7f0000000000};
	uint32_t ia, il;
	CHECK_INT(sw_profile_image(p, &app, &ia), 0);
	CHECK_INT(sw_profile_image(p, &libc, &il), 0);
	const struct {
		const char *name;
		bool libc, inlined;
	} fr[] = {
	    {SW_TREE_UNWINDING_STOPPED, false, false},
	    {"partial", false, false},
	    {"main", false, false},
	    {"work", false, false},
	    {"helper", false, true},
	    {"memcpy", true, false},
	    {"other", false, false},
	    {"read", true, false},
	    {"sub_1234", false, false},
	    {"poll", true, false},
	};
	uint32_t id[10];
	for (int i = 0; i < 10; i++) {
		struct sw_tree_frame f = {.image = i ? (fr[i].libc ? il : ia) : 0,
					  .linkage = i ? fr[i].name : NULL,
					  .name = fr[i].name,
					  .address = 0x1000 + 0x10 * (uint64_t)i,
					  .inlined = fr[i].inlined};
		CHECK_INT(sw_profile_frame(p, &f, &id[i]), 0);
	}
	struct sw_tree_stall_info info = {.id = 1, .thread_id = 1};
	struct sw_tree_stall *s;
	CHECK_INT(sw_profile_add_stall(p, &info, &s), 0);
	uint32_t th;
	CHECK_INT(sw_tree_stall_thread(p, s, 1, "", &th), 0);
	const struct {
		int frames[5];
		uint64_t weight;
	} st[] = {
	    {{0, 1, -1}, 100},      /* a partial stack: heaviest, and ignored */
	    {{2, 3, 4, 5, -1}, 30}, /* memcpy under the inlined helper: work's */
	    {{2, 6, 7, -1}, 20},    /* read: other's */
	    {{2, 3, -1}, 5},        /* work itself */
	    {{2, 8, 9, -1}, 25},    /* poll under a nameless function: main's */
	};
	for (size_t k = 0; k < sizeof(st) / sizeof(st[0]); k++) {
		uint32_t frames[5];
		size_t n = 0;
		while (st[k].frames[n] >= 0)
			frames[n] = id[st[k].frames[n]], n++;
		CHECK_INT(sw_tree_stall_add_sample(p, s, th, frames, n, st[k].weight), 0);
	}
	const struct sw_tree_frame *f = sw_render_culprit(p, s);
	CHECK(f != NULL);
	CHECK_STR(f ? f->linkage : NULL, "work");
	uint64_t whole_sig = sw_tree_stall_signature(p, s);

	/*
	 * Stalls whose every stack stopped unwinding: signed and explained by
	 * what the partial stacks hold, so two different ones stay apart (they
	 * had the one signature of an empty path).
	 */
	uint64_t sig[2];
	const char *const leaves[2] = {"other", "work"};
	for (int k = 0; k < 2; k++) {
		struct sw_tree_stall_info pi = {.id = 2 + (uint64_t)k, .thread_id = 1};
		struct sw_tree_stall *ps;
		CHECK_INT(sw_profile_add_stall(p, &pi, &ps), 0);
		CHECK_INT(sw_tree_stall_thread(p, ps, 1, "", &th), 0);
		uint32_t frames[3] = {id[0], k ? id[3] : id[6], id[7]};
		CHECK_INT(sw_tree_stall_add_sample(p, ps, th, frames, 3, 40), 0);
		CHECK_INT(sw_tree_stall_add_sample(p, ps, th, frames, 2, 10), 0);
		sig[k] = sw_tree_stall_signature(p, ps);
		f = sw_render_culprit(p, ps);
		CHECK_STR(f ? f->linkage : NULL, leaves[k]);
	}
	CHECK(sig[0] != sig[1]);
	CHECK(sig[0] != 0xcbf29ce484222325ull &&
	      sig[1] != 0xcbf29ce484222325ull); /* FNV-1a of nothing */
	CHECK(sig[0] != whole_sig && sig[1] != whole_sig);
	sw_profile_free(p);
}

/* A function of the app's image, by name and source file. */
struct named_source {
	const char *name, *file;
};

/*
 * Two stalls of one hang: the n frames of path, then leaf0 in the first
 * and leaf1 in the second, 10 ns each.  Both are explained by culprit and
 * have one signature; the first is in *first when asked for.
 */
static void one_hang(struct sw_profile *p, const uint32_t *path, size_t n, uint32_t leaf0,
		     uint32_t leaf1, const char *culprit, struct sw_tree_stall **first)
{
	uint64_t sig[2];
	for (int k = 0; k < 2; k++) {
		struct sw_tree_stall_info si = {.id = 1 + (uint64_t)k, .thread_id = 1};
		struct sw_tree_stall *s;
		uint32_t th, frames[16];
		CHECK_INT(sw_profile_add_stall(p, &si, &s), 0);
		CHECK_INT(sw_tree_stall_thread(p, s, 1, "", &th), 0);
		memcpy(frames, path, n * sizeof(*frames));
		frames[n] = k ? leaf1 : leaf0;
		CHECK_INT(sw_tree_stall_add_sample(p, s, th, frames, n + 1, 10), 0);
		const struct sw_tree_frame *f = sw_render_culprit(p, s);
		CHECK_STR(f ? f->linkage : NULL, culprit);
		sig[k] = sw_tree_stall_signature(p, s);
		if (first && !k)
			*first = s;
	}
	CHECK(sig[0] == sig[1]);
}

/* Checks that is() holds for the nyes files of yes (a kind of code), and not for those of no. */
static void check_sources(bool (*is)(const char *), const char *kind, const char *const *yes,
			  size_t nyes, const char *const *no, size_t nno)
{
	for (size_t i = 0; i < nyes; i++)
		CHECK_STR(is(yes[i]) ? yes[i] : "own", yes[i]);
	for (size_t i = 0; i < nno; i++)
		CHECK_STR(is(no[i]) ? kind : no[i], no[i]);
}

/* Adds n frames of image ia, one per function of fr, to p: their ids in id. */
static void add_sourced_frames(struct sw_profile *p, uint32_t ia, uint64_t base,
			       const struct named_source *fr, int n, uint32_t *id)
{
	for (int i = 0; i < n; i++) {
		struct sw_tree_frame f = {.image = ia,
					  .linkage = fr[i].name,
					  .name = fr[i].name,
					  .file = fr[i].file,
					  .line = 10,
					  .address = base + 0x10 * (uint64_t)i};
		CHECK_INT(sw_profile_frame(p, &f, &id[i]), 0);
	}
}

/*
 * A stripped app (vim as Debian ships it): its functions are sub_<hex>
 * alone.  The culprit is the one of them the most time is charged to,
 * here the helper working on its own (70) and in strlen (30), not the
 * heaviest path's leaf, libc's strlen, nor the PLT entry.  Without any of
 * the app's code on a stack, the heaviest path's leaf is all there is.
 */
static void test_culprit_stripped(void)
{
	struct sw_profile *p;
	CHECK_INT(sw_profile_new(&p), 0);
	struct sw_tree_image app = {.path = "/usr/bin/vim.basic", .load_address = 0x1000};
	struct sw_tree_image libc = {.path = "/usr/lib/x86_64-linux-gnu/libc.so.6",
				     .load_address = 0x7f0000000000};
	uint32_t ia, il;
	CHECK_INT(sw_profile_image(p, &app, &ia), 0);
	CHECK_INT(sw_profile_image(p, &libc, &il), 0);
	static const struct {
		const char *name;
		bool libc;
	} fr[] = {
	    {"sub_1a40", false},         {"sub_c88d0", false}, {"strlen", true},
	    {"clock_gettime", true},     {"labs@plt", false},  {"labs", true},
	    {"__libc_start_main", true}, {"poll", true},
	};
	uint32_t id[8];
	for (int i = 0; i < 8; i++) {
		struct sw_tree_frame f = {.image = fr[i].libc ? il : ia,
					  .linkage = fr[i].name,
					  .name = fr[i].name,
					  .address = 0x1000 + 0x10 * (uint64_t)i};
		CHECK_INT(sw_profile_frame(p, &f, &id[i]), 0);
	}
	const struct {
		int frames[4];
		uint64_t weight;
	} st[] = {
	    {{0, 1, -1}, 70},    /* the helper on its own */
	    {{0, 1, 2, -1}, 30}, /* strlen under it: the heaviest path's leaf */
	    {{0, 3, -1}, 20},    /* the loop's clock: main's */
	    {{0, 4, 5, -1}, 25}, /* labs through the PLT: main's */
	};
	struct sw_tree_stall_info info = {.id = 1, .thread_id = 1};
	struct sw_tree_stall *s;
	uint32_t th;
	CHECK_INT(sw_profile_add_stall(p, &info, &s), 0);
	CHECK_INT(sw_tree_stall_thread(p, s, 1, "", &th), 0);
	for (size_t k = 0; k < sizeof(st) / sizeof(st[0]); k++) {
		uint32_t frames[4];
		size_t n = 0;
		while (st[k].frames[n] >= 0)
			frames[n] = id[st[k].frames[n]], n++;
		CHECK_INT(sw_tree_stall_add_sample(p, s, th, frames, n, st[k].weight), 0);
	}
	const struct sw_tree_frame *f = sw_render_culprit(p, s);
	CHECK_STR(f ? f->linkage : NULL, "sub_c88d0");

	/* only the C library on the stacks: the heaviest path's leaf */
	info.id = 2;
	CHECK_INT(sw_profile_add_stall(p, &info, &s), 0);
	CHECK_INT(sw_tree_stall_thread(p, s, 1, "", &th), 0);
	uint32_t system_only[2] = {id[6], id[7]};
	CHECK_INT(sw_tree_stall_add_sample(p, s, th, system_only, 2, 10), 0);
	f = sw_render_culprit(p, s);
	CHECK_STR(f ? f->linkage : NULL, "poll");
	sw_profile_free(p);
}

/*
 * The culprit passes over the toolchain's library compiled into the app,
 * known by its source files: C++ headers (the system's, an SDK's) and
 * Rust's standard library and its vendored crates.  Their time goes to the
 * app's function that called them, here sort_items (105) over other (50).
 * Signatures pass over them too.
 */
static void test_culprit_toolchain(void)
{
	struct sw_profile *p;
	CHECK_INT(sw_profile_new(&p), 0);
	struct sw_tree_image app = {.path = "/opt/app/bin/app", .load_address = 0x1000};
	uint32_t ia;
	CHECK_INT(sw_profile_image(p, &app, &ia), 0);
	static const struct named_source fr[] = {
	    {"main", "/src/app/main.cpp"},
	    {"sort_items", "/src/app/items.cpp"},
	    {"other", "/src/app/other.cpp"},
	    {"std::__introsort_loop", "/usr/include/c++/12/bits/stl_algo.h"},
	    {"core::slice::sort::quicksort", "/rustc/0123abcd/library/core/src/slice/sort.rs"},
	    {"std::__1::__sort", "/Applications/Xcode.app/Contents/Developer/Toolchains/"
				 "XcodeDefault.xctoolchain/usr/include/c++/v1/__algorithm/sort.h"},
	    {"hashbrown::raw::RawTable::reserve_rehash",
	     "/rust/deps/hashbrown-0.16.1/src/raw/mod.rs"},
	};
	uint32_t id[7];
	add_sourced_frames(p, ia, 0x1000, fr, 7, id);
	struct sw_tree_stall_info info = {.id = 1, .thread_id = 1};
	struct sw_tree_stall *s;
	CHECK_INT(sw_profile_add_stall(p, &info, &s), 0);
	uint32_t th;
	CHECK_INT(sw_tree_stall_thread(p, s, 1, "", &th), 0);
	const struct {
		int leaf;
		uint64_t weight;
	} st[] = {{2, 50}, {3, 40}, {4, 30}, {5, 20}, {6, 15}};
	for (size_t k = 0; k < sizeof(st) / sizeof(st[0]); k++) {
		uint32_t frames[3] = {id[0], st[k].leaf == 2 ? id[2] : id[1], id[st[k].leaf]};
		size_t n = st[k].leaf == 2 ? 2 : 3;
		CHECK_INT(sw_tree_stall_add_sample(p, s, th, frames, n, st[k].weight), 0);
	}
	const struct sw_tree_frame *f = sw_render_culprit(p, s);
	CHECK_STR(f ? f->linkage : NULL, "sort_items");

	/*
	 * Signatures leave them out below the app's own code: sort_items'
	 * stalls sign alike whichever template was heaviest, and apart from
	 * other's (signature version 6).
	 */
	uint64_t sig[4];
	const int leaf[4] = {3, 4, 6, 2};
	for (int k = 0; k < 4; k++) {
		struct sw_tree_stall_info si = {.id = 2 + (uint64_t)k, .thread_id = 1};
		struct sw_tree_stall *ss;
		CHECK_INT(sw_profile_add_stall(p, &si, &ss), 0);
		CHECK_INT(sw_tree_stall_thread(p, ss, 1, "", &th), 0);
		uint32_t frames[3] = {id[0], leaf[k] == 2 ? id[2] : id[1], id[leaf[k]]};
		CHECK_INT(sw_tree_stall_add_sample(p, ss, th, frames, leaf[k] == 2 ? 2 : 3, 10), 0);
		sig[k] = sw_tree_stall_signature(p, ss);
	}
	CHECK(sig[0] == sig[1] && sig[1] == sig[2]);
	CHECK(sig[3] != sig[0]);
	sw_profile_free(p);
}

/*
 * Go's standard library, the compiler's wrappers and cgo's glue are the
 * toolchain's; a GOPATH project, a module's own files and a folder that
 * only happens to be called src are not.
 */
static void test_toolchain_go(void)
{
	static const char *const go_std[] = {
	    "/usr/lib/go-1.19/src/sort/zsortinterface.go",
	    "/usr/local/go/src/runtime/asm_amd64.s",
	    "/usr/lib/golang/src/fmt/print.go",
	    "/home/dev/sdk/go1.21.5/src/internal/bytealg/compare_amd64.s",
	    "/opt/homebrew/Cellar/go/1.21.5/libexec/src/net/http/server.go",
	    "/root/go/pkg/mod/golang.org/toolchain@v0.0.1-go1.22.0.linux-amd64/src/sync/mutex.go",
	    "sort/sort.go", /* -trimpath */
	    "runtime/cgocall.go",
	    "./sort/sort.go",
	    "<autogenerated>",
	    "./<autogenerated>", /* Go's compile units are in "." */
	    "/tmp/go-build1234/b001/_cgo_gotypes.go",
	    "./_cgo_gotypes.go",
	    "cgo-gcc-prolog",
	};
	static const char *const own[] = {
	    "/home/dev/go/src/github.com/acme/app/main.go", /* GOPATH */
	    "/home/dev/go/src/myapp/main.go",
	    "/home/dev/proj/src/sort/mysort.go", /* not a Go root */
	    "/home/dev/go/pkg/mod/github.com/pkg/errors@v0.9.1/errors.go",
	    "gotrial/main.go", /* -trimpath, a module's */
	    "./gotrial/main.go",
	    "main.go",
	    "/usr/lib/go-1.19/src/sort/README",
	    "/usr/local/go/src/github.com/x/y.go",
	};
	check_sources(sw_tree_source_is_toolchain, "toolchain", go_std,
		      sizeof(go_std) / sizeof(go_std[0]), own, sizeof(own) / sizeof(own[0]));

	/* a cgo callback's stalls: main.busySort explains them, whichever of sort's was heaviest */
	struct sw_profile *p;
	CHECK_INT(sw_profile_new(&p), 0);
	struct sw_tree_image app = {.path = "/home/dev/gotrial/gotrial", .load_address = 0x400000};
	uint32_t ia;
	CHECK_INT(sw_profile_image(p, &app, &ia), 0);
	static const struct named_source fr[] = {
	    {"runtime.cgocallbackg1", "/usr/lib/go-1.19/src/runtime/cgocall.go"},
	    {"_cgoexp_cf526bbaaf3b_goTick", "/tmp/go-build1234/b001/_cgo_gotypes.go"},
	    {"main.goTick", "/home/dev/gotrial/main.go"},
	    {"main.busySort", "/home/dev/gotrial/main.go"},
	    {"sort.pdqsort", "/usr/lib/go-1.19/src/sort/zsortinterface.go"},
	    {"sort.(*IntSlice).Less", "./<autogenerated>"},
	    {"sort.insertionSort", "/usr/lib/go-1.19/src/sort/zsortinterface.go"},
	};
	uint32_t id[7];
	add_sourced_frames(p, ia, 0x401000, fr, 7, id);
	one_hang(p, id, 5, id[5], id[6], "main.busySort", NULL);
	sw_profile_free(p);
}

/*
 * Dependencies compiled into the app, known by the folders their package
 * managers put their sources in: culprits and signatures pass over them as
 * over the toolchain's library (signature version 8), and --hide-system,
 * which hides the system's code, keeps them.
 */
static void test_dependencies(void)
{
	static const char *const deps[] = {
	    "/home/dev/.cargo/registry/src/index.crates.io-6f17d22bba15001f/serde_json-1.0/de.rs",
	    "/usr/local/cargo/registry/src/github.com-1ecc6299db9ec823/regex-1.9.0/src/lib.rs",
	    "/home/dev/.cargo/git/checkouts/egui-3e8e5a1f0c7e9c4b/a1b2c3d/crates/egui/src/ui.rs",
	    "/home/dev/go/pkg/mod/github.com/pkg/errors@v0.9.1/errors.go",
	    "/root/go/pkg/mod/github.com/gotk3/gotk3@v0.6.2/glib/glib.go",
	    "github.com/gotk3/gotk3@v0.6.2/glib/glib.go", /* -trimpath */
	    "example.com/wordfreq@v1.0.0/wordfreq.go",
	    "/Users/dev/App/.build/checkouts/swift-collections/Sources/DequeModule/Deque.swift",
	    "/Users/dev/DerivedData/App/SourcePackages/checkouts/Alamofire/Session.swift",
	    "/Users/dev/App/Pods/AFNetworking/AFNetworking/AFURLSessionManager.m",
	    "/Users/dev/App/Carthage/Checkouts/Charts/Source/Charts/Charts/ChartViewBase.swift",
	    "/home/dev/app/build/vcpkg_installed/x64-linux/include/fmt/format.h",
	    "/home/dev/.conan2/p/b/zlib1a2b3c/p/include/zlib.h",
	};
	static const char *const own[] = {
	    "/home/dev/proj/src/main.rs",
	    "/home/dev/proj/registry/src/lib.c",            /* a folder so named, not Rust */
	    "/home/dev/go/src/github.com/acme/app/main.go", /* GOPATH: the app's own */
	    "stallwatch.test/stallapp/main.go",             /* -trimpath, the main module's */
	    "/home/dev/mail@v2/main.go", /* a folder with an @, no version after */
	    "/root/go/pkg/mod/golang.org/toolchain@v0.0.1-go1.22.0.linux-amd64/src/sync/mutex.go",
	    "/usr/lib/go-1.19/src/sort/sort.go",
	    "/rustc/90b35a6239c3d8bdabc530a6a0816f7ff89a0aaf/library/core/src/ptr/mod.rs",
	    "/Users/dev/App/Sources/App/View.swift",
	};
	check_sources(sw_tree_source_is_dependency, "dependency", deps,
		      sizeof(deps) / sizeof(deps[0]), own, sizeof(own) / sizeof(own[0]));

	/* a Rust app's stalls in serde_json: load_config explains them, whichever was heaviest */
	struct sw_profile *p;
	CHECK_INT(sw_profile_new(&p), 0);
	struct sw_tree_image app = {.path = "/home/dev/proj/target/release/app",
				    .load_address = 0x400000};
	uint32_t ia;
	CHECK_INT(sw_profile_image(p, &app, &ia), 0);
	const char *crate = "/home/dev/.cargo/registry/src/index.crates.io-6f17d22bba15001f/"
			    "serde_json-1.0.108/src/de.rs";
	const struct named_source fr[] = {
	    {"app::main", "/home/dev/proj/src/main.rs"},
	    {"app::load_config", "/home/dev/proj/src/config.rs"},
	    {"serde_json::de::from_str", crate},
	    {"serde_json::de::Deserializer::parse_str", crate},
	    {"serde_json::de::Deserializer::parse_number", crate},
	};
	uint32_t id[5];
	add_sourced_frames(p, ia, 0x401000, fr, 5, id);
	CHECK(sw_profile_frame_compiled_in(p, id[2]) && !sw_profile_frame_toolchain(p, id[2]));
	CHECK(!sw_profile_frame_compiled_in(p, id[1]));
	struct sw_tree_stall *s;
	one_hang(p, id, 3, id[3], id[4], "app::load_config", &s);
	/* --hide-system hides the system's code only: the crate's frames stay */
	struct sw_tree_options o;
	sw_tree_options_init(&o);
	o.hide_system = true;
	struct sw_tree *t;
	CHECK_INT(sw_tree_build(p, &s, 1, &o, -1, &t), 0);
	uint32_t n = find(t, "app::main|app::load_config|serde_json::de::from_str");
	CHECK(n != NONE && t->nodes[n].total == 10);
	sw_tree_free(t);
	sw_profile_free(p);
}

/*
 * The runtime a program hands its work to (sw_tree_runtime_image()): a
 * tclsh script's stalls, all in libtcl below main, are told apart by
 * libtcl's frames and explained by them; libc below the runtime, and a
 * library an app's callback calls, stay out as before.
 */
static void test_runtime(void)
{
	struct sw_profile *p;
	CHECK_INT(sw_profile_new(&p), 0);
	static const char *const paths[] = {
	    "/usr/bin/tclsh8.6", "/usr/lib/x86_64-linux-gnu/libtcl8.6.so",
	    "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libglib-2.0.so.0",
	    "/opt/sw/lib/libstallwatch-agent.so"};
	uint32_t img[5];
	for (int i = 0; i < 5; i++) {
		struct sw_tree_image im = {.path = paths[i],
					   .load_address = 0x100000 * (uint64_t)(i + 1)};
		CHECK_INT(sw_profile_image(p, &im, &img[i]), 0);
	}
	/* image index (into paths) and name of each frame */
	static const struct {
		int image;
		const char *name;
	} fr[] = {
	    {0, "_start"},
	    {2, "__libc_start_main"},
	    {0, "main"},
	    {1, "Tcl_MainEx"},
	    {1, "Tcl_DoOneEvent"},
	    {1, "Tcl_Sleep"},
	    {2, "select"},
	    {1, "TclExecuteByteCode"},
	    {2, "clock_gettime"},
	    {2, "__select_nocancel"},
	    {3, "g_main_loop_run"},
	    {0, "on_timer"},
	    {3, "g_hash_table_lookup"},
	    {3, "g_hash_table_insert"},
	    {2, "memcmp"},
	    {0, "run"},
	    {0, "stall_sleep"},
	    {4, "nanosleep"},
	    {2, "clock_nanosleep"},
	};
	enum { NF = sizeof(fr) / sizeof(fr[0]) };
	uint32_t id[NF];
	for (int i = 0; i < NF; i++) {
		struct sw_tree_frame f = {.image = img[fr[i].image],
					  .linkage = fr[i].name,
					  .name = fr[i].name,
					  .address = 0x100000 * (uint64_t)(fr[i].image + 1) +
						     0x10 * (uint64_t)i};
		CHECK_INT(sw_profile_frame(p, &f, &id[i]), 0);
	}
	static const int stacks[][8] = {
	    {0, 1, 2, 3, 4, 5, 6, -1},     /* A: a script's `after 400` */
	    {0, 1, 2, 3, 4, 7, 8, -1},     /* B: a script's busy loop */
	    {0, 1, 2, 3, 4, 5, 9, -1},     /* C: A with another libc leaf */
	    {0, 1, 2, 10, 11, 12, 14, -1}, /* D: a GLib app's callback */
	    {0, 1, 2, 10, 11, 13, 14, -1}, /* E: D calling another GLib function */
	    {0, 1, 2, 15, 16, 17, 18, -1}, /* F: a C program's own loop, sleeping */
	    {0, 1, 2, 17, 18, -1},         /* G: its main, sleeping: not the agent's */
	};
	enum { NS = sizeof(stacks) / sizeof(stacks[0]) };
	uint64_t sig[NS];
	const char *culprit[NS];
	for (int k = 0; k < NS; k++) {
		struct sw_tree_stall_info info = {.id = 10 + (uint64_t)k, .thread_id = 1};
		struct sw_tree_stall *s;
		uint32_t th, frames[8];
		size_t n = 0;
		CHECK_INT(sw_profile_add_stall(p, &info, &s), 0);
		CHECK_INT(sw_tree_stall_thread(p, s, 1, "", &th), 0);
		while (stacks[k][n] >= 0)
			frames[n] = id[stacks[k][n]], n++;
		CHECK_INT(sw_tree_stall_add_sample(p, s, th, frames, n, 40), 0);
		sig[k] = sw_tree_stall_signature(p, s);
		const struct sw_tree_frame *f = sw_render_culprit(p, s);
		culprit[k] = f ? f->linkage : NULL;
	}
	CHECK(sig[0] != sig[1]); /* both were main's alone */
	CHECK_STR(culprit[0], "Tcl_Sleep");
	CHECK_STR(culprit[1], "TclExecuteByteCode");
	CHECK(sig[0] == sig[2]); /* libc below the runtime: noise, as before */
	CHECK(sig[3] == sig[4]); /* below the app's callback: a leaf call, left out */
	CHECK_STR(culprit[3], "on_timer");
	CHECK_STR(culprit[4], "on_timer");
	/* more than main of the app's own: its code at work, the sleep a leaf call */
	CHECK_STR(culprit[5], "stall_sleep");
	CHECK_STR(culprit[6], "main");
	sw_profile_free(p);
}

/*
 * The examples tracker (render.c): after every stall is printed, the
 * summary picks the same examples as it does with every stall's samples
 * kept, builds their culprits, and only stalls that can never be an
 * example lose their samples.
 */
static void add_example_stalls(struct sw_profile *p, struct sw_examples *x)
{
	struct sw_tree_image app = {.path = "/opt/app/bin/app", .load_address = 0x1000};
	uint32_t img, f[3];
	CHECK_INT(sw_profile_image(p, &app, &img), 0);
	static const char *const names[] = {"main", "spin", "wait"};
	for (int i = 0; i < 3; i++) {
		struct sw_tree_frame fr = {.image = img,
					   .linkage = names[i],
					   .name = names[i],
					   .address = 0x1100 + 0x100 * (uint64_t)i};
		CHECK_INT(sw_profile_frame(p, &fr, &f[i]), 0);
	}
	/* signature spin: #1 300 ms, #2 500 ms, #3 500 ms (a later tie), #5 200 ms and
	   #6 with no duration, whose weight is its samples (10 s); signature wait: #4 */
	static const struct {
		uint64_t duration_ms;
		int leaf;
	} st[] = {{300, 1}, {500, 1}, {500, 1}, {100, 2}, {200, 1}, {0, 1}};
	for (size_t k = 0; k < sizeof(st) / sizeof(st[0]); k++) {
		struct sw_tree_stall_info info = {
		    .id = k + 1, .thread_id = 1, .duration_ns = st[k].duration_ms * 1000000};
		struct sw_tree_stall *s;
		uint32_t th, frames[2] = {f[0], f[st[k].leaf]};
		CHECK_INT(sw_profile_add_stall(p, &info, &s), 0);
		CHECK_INT(sw_tree_stall_thread(p, s, 1, "", &th), 0);
		uint64_t w = st[k].duration_ms ? st[k].duration_ms * 1000000 / 4 : 2500000000;
		for (int n = 0; n < 4; n++)
			CHECK_INT(sw_tree_stall_add_sample(p, s, th, frames, 2, w), 0);
		if (x)
			sw_examples_printed(x, p, s);
	}
}

static void test_examples(void)
{
	struct sw_profile *kept, *p;
	struct sw_examples *x;
	CHECK_INT(sw_profile_new(&kept), 0);
	CHECK_INT(sw_profile_new(&p), 0);
	CHECK_INT(sw_examples_new(&x), 0);
	add_example_stalls(kept, NULL);
	add_example_stalls(p, x);
	/* #2 is spin's longest, #6 its heaviest, #4 wait's only stall */
	static const bool dropped[] = {true, false, true, false, true, false};
	for (size_t i = 0; i < 6; i++) {
		struct sw_tree_stall *s = sw_profile_stall(p, i);
		CHECK_INT(s->samples_dropped, dropped[i]);
		CHECK_INT(s->nsamples, dropped[i] ? 0 : 4);
		/* what is known of it stays */
		CHECK(sw_tree_stall_signature(p, s) ==
		      sw_tree_stall_signature(kept, sw_profile_stall(kept, i)));
		CHECK_INT(s->main_samples, 4);
		struct sw_tree *t;
		int r = sw_tree_stall_default_tree(p, s, 0, &t);
		CHECK_INT(r, dropped[i] ? -ESTALE : 0);
		if (r == 0)
			sw_tree_free(t);
	}
	uint32_t th = 0, frame = 0;
	CHECK_INT(sw_tree_stall_add_sample(p, sw_profile_stall(p, 0), th, &frame, 1, 1), -ESTALE);
	struct sw_summary a, b;
	CHECK_INT(sw_summary_compute(kept, &a), 0);
	CHECK_INT(sw_summary_compute(p, &b), 0);
	CHECK_INT(b.ntop, 2);
	CHECK_INT(a.ntop, b.ntop);
	for (size_t i = 0; i < a.ntop && i < b.ntop; i++) {
		CHECK_INT(a.top[i].example->info.id, b.top[i].example->info.id);
		const struct sw_tree_frame *fa = sw_render_culprit(kept, a.top[i].example);
		const struct sw_tree_frame *fb = sw_render_culprit(p, b.top[i].example);
		CHECK(fa && fb);
		CHECK_STR(fb ? fb->linkage : NULL, fa ? fa->linkage : NULL);
	}
	CHECK_INT(b.top[0].example->info.id, 6);
	CHECK_INT(b.worst->info.id, 6);
	/* JUnit's example is the longest (#2): its heaviest path is in the failure text */
	struct sw_junit_options jo = {
	    .fail_on_stall = true, .timestamp = "2026-11-27T19:00:00", .hostname = "host"};
	struct sw_buf ja, jb;
	sw_buf_init(&ja, 0);
	sw_buf_init(&jb, 0);
	CHECK_INT(sw_render_junit(kept, &jo, &ja) >= 0, 1);
	CHECK_INT(sw_render_junit(p, &jo, &jb) >= 0, 1);
	CHECK_STR(sw_buf_str(&jb), sw_buf_str(&ja));
	CHECK(strstr(sw_buf_str(&jb), "longest #2: 500.0 ms\">main") != NULL);
	sw_buf_finish(&ja);
	sw_buf_finish(&jb);
	sw_examples_free(x);
	sw_profile_free(kept);
	sw_profile_free(p);
}

/*
 * A profile keeps the nodes of the last tree freed for the next build
 * (tree-build.c): a small tree built into a large tree's old nodes is the
 * tree a fresh profile builds, node for node.
 */
static void add_reuse_stalls(struct sw_profile *p, struct sw_tree_stall **big,
			     struct sw_tree_stall **small)
{
	struct sw_tree_image app = {.path = "/opt/app/bin/app", .load_address = 0x1000};
	uint32_t img, f[12];
	CHECK_INT(sw_profile_image(p, &app, &img), 0);
	for (int i = 0; i < 12; i++) {
		char name[16];
		snprintf(name, sizeof(name), "fn%d", i);
		struct sw_tree_frame fr = {.image = img,
					   .linkage = name,
					   .name = name,
					   .address = 0x2000 + 0x40 * (uint64_t)i};
		CHECK_INT(sw_profile_frame(p, &fr, &f[i]), 0);
	}
	struct sw_tree_stall **st[2] = {big, small};
	for (uint64_t k = 0; k < 2; k++) {
		struct sw_tree_stall_info info = {.id = k + 1, .thread_id = 1, .duration_ns = 1000};
		uint32_t th;
		CHECK_INT(sw_profile_add_stall(p, &info, st[k]), 0);
		CHECK_INT(sw_tree_stall_thread(p, *st[k], 1, "", &th), 0);
		uint64_t x = 12345 + k;
		for (int n = 0; n < (k ? 5 : 3000); n++) {
			uint32_t frames[8];
			size_t depth = 1 + n % 8;
			for (size_t d = 0; d < depth; d++) {
				x = x * 6364136223846793005ull + 1442695040888963407ull;
				frames[d] = f[(x >> 33) % 12];
			}
			CHECK_INT(sw_tree_stall_add_sample(p, *st[k], th, frames, depth, 1 + n % 3),
				  0);
		}
	}
}

static void test_nodes_reused(void)
{
	struct sw_profile *p, *fresh;
	struct sw_tree_stall *big, *small, *big2, *small2;
	CHECK_INT(sw_profile_new(&p), 0);
	CHECK_INT(sw_profile_new(&fresh), 0);
	add_reuse_stalls(p, &big, &small);
	add_reuse_stalls(fresh, &big2, &small2);
	struct sw_tree_options o;
	sw_tree_options_init(&o);
	struct sw_tree *t, *want;
	CHECK_INT(sw_tree_build(p, &big, 1, &o, -1, &t), 0);
	CHECK(t->nnodes > 1000);
	sw_tree_free(t);
	CHECK_INT(sw_tree_build(p, &small, 1, &o, -1, &t), 0);
	CHECK_INT(sw_tree_build(fresh, &small2, 1, &o, -1, &want), 0);
	CHECK_INT(t->nnodes, want->nnodes);
	CHECK_INT(t->first_root, want->first_root);
	CHECK(t->total == want->total && t->nsamples == want->nsamples);
	size_t differ = 0;
	for (uint32_t i = 0; i < t->nnodes && i < want->nnodes; i++) {
		const struct sw_tree_node *a = &t->nodes[i], *b = &want->nodes[i];
		differ += a->frame != b->frame || a->parent != b->parent ||
			  a->first_child != b->first_child || a->next_sibling != b->next_sibling ||
			  a->depth != b->depth || a->total != b->total || a->self != b->self ||
			  a->samples != b->samples || a->self_samples != b->self_samples;
	}
	CHECK_INT(differ, 0);
	sw_tree_free(t);
	sw_tree_free(want);
	sw_profile_free(p);
	sw_profile_free(fresh);
}

/* A frame's shown name by id: what sw_tree_frame_name() says, for every kind of frame. */
static void test_frame_names(void)
{
	struct sw_profile *p;
	CHECK_INT(sw_profile_new(&p), 0);
	struct sw_tree_image app = {.path = "/opt/app/bin/app", .load_address = 0x1000};
	uint32_t img;
	CHECK_INT(sw_profile_image(p, &app, &img), 0);
	const struct sw_tree_frame frames[] = {
	    {.image = img, .linkage = "_Z3foov", .name = "foo()", .full_name = "foo() full"},
	    {.image = img, .linkage = "_Z3barv"},
	    {.image = img, .address = 0x1234},
	    {.address = 0xdeadbeef},
	};
	for (size_t i = 0; i < sizeof(frames) / sizeof(frames[0]); i++) {
		uint32_t id;
		CHECK_INT(sw_profile_frame(p, &frames[i], &id), 0);
		for (int full = 0; full < 2; full++) {
			char scratch[32];
			const char *want = sw_tree_frame_name(p, sw_profile_get_frame(p, id), full,
							      scratch, sizeof(scratch));
			CHECK_STR(sw_profile_frame_name(p, id, full), want);
		}
	}
	CHECK_STR(sw_profile_frame_name(p, 2, false), "???");
	CHECK_STR(sw_profile_frame_name(p, 3, false), "0xdeadbeef");
	CHECK_STR(sw_profile_frame_name(p, 0, true), "foo() full");
	CHECK(sw_profile_frame_name(p, 4, false) == NULL);

	sw_profile_free(p);
}

/*
 * Folded lines: ';' in a name becomes ':', tabs and line ends spaces, in
 * names short and long (past the 64 bytes the renderer makes room for).
 */
static void test_folded_names(void)
{
	struct sw_profile *p;
	CHECK_INT(sw_profile_new(&p), 0);
	char long_name[200], want_long[200];
	for (int i = 0; i < 199; i++)
		long_name[i] = (char)('a' + i % 26);
	long_name[199] = 0;
	long_name[63] = long_name[64] = long_name[127] = long_name[191] = ';';
	long_name[100] = '\t';
	long_name[140] = '\n';
	long_name[198] = '\r';
	for (int i = 0; i < 200; i++)
		want_long[i] =
		    long_name[i] == ';' ? ':'
		    : long_name[i] == '\t' || long_name[i] == '\n' || long_name[i] == '\r'
			? ' '
			: long_name[i];
	struct sw_tree_frame outer = {.linkage = "outer", .name = "outer;call", .address = 0x10},
			     inner = {.linkage = "inner", .name = long_name, .address = 0x20};
	uint32_t frames[2];
	CHECK_INT(sw_profile_frame(p, &outer, &frames[0]), 0);
	CHECK_INT(sw_profile_frame(p, &inner, &frames[1]), 0);
	struct sw_tree_stall_info info = {.id = 1, .thread_id = 1, .kind = "busy"};
	struct sw_tree_stall *s;
	CHECK_INT(sw_profile_add_stall(p, &info, &s), 0);
	uint32_t th;
	CHECK_INT(sw_tree_stall_thread(p, s, 1, "", &th), 0);
	CHECK_INT(sw_tree_stall_add_sample(p, s, th, frames, 2, 10000000), 0);
	struct sw_render_options o;
	sw_render_options_init(&o);
	struct sw_buf out;
	sw_buf_init(&out, 0);
	CHECK_INT(sw_render_folded_stall(p, s, &o, &out), 0);
	char want[300];
	snprintf(want, sizeof(want), "#1;outer:call;%s 10000\n", want_long);
	CHECK_STR(sw_buf_str(&out), want);
	sw_buf_finish(&out);
	sw_profile_free(p);
}

/* A stall whose thread could not be sampled says why in its tree, wholly or in part. */
static void test_unsampled(void)
{
	struct sw_profile *p;
	CHECK_INT(sw_profile_new(&p), 0);
	struct sw_tree_image app = {.path = "/opt/app/bin/app", .load_address = 0x1000};
	uint32_t img, fr;
	CHECK_INT(sw_profile_image(p, &app, &img), 0);
	struct sw_tree_frame f = {.image = img, .linkage = "wait_here", .address = 0x1100};
	CHECK_INT(sw_profile_frame(p, &f, &fr), 0);
	struct sw_render_options o;
	sw_render_options_init(&o);
	for (int part = 0; part < 2; part++) {
		struct sw_tree_stall_info info = {.id = 1 + (uint64_t)part,
						  .thread_id = 1,
						  .kind = "busy",
						  .unsampled =
						      "the thread blocks the agent's signal"};
		struct sw_tree_stall *s;
		CHECK_INT(sw_profile_add_stall(p, &info, &s), 0);
		uint32_t th;
		CHECK_INT(sw_tree_stall_thread(p, s, 1, "", &th), 0);
		/* 39 samples without a stack; in the second stall one more with one */
		for (int i = 0; i < 39; i++)
			CHECK_INT(sw_tree_stall_add_sample(p, s, th, NULL, 0, 10000000), 0);
		if (part)
			CHECK_INT(sw_tree_stall_add_sample(p, s, th, &fr, 1, 10000000), 0);
		struct sw_buf out;
		sw_buf_init(&out, 0);
		CHECK_INT(sw_render_tree_stall(p, s, &o, &out), 0);
		const char *text = sw_buf_str(&out);
		const char *want =
		    part ? "  (390.0 ms not sampled: the thread blocks the agent's signal)\n"
			 : "  (not sampled: the thread blocks the agent's signal)\n";
		if (!strstr(text, want))
			fprintf(stderr, "want %s in:\n%s", want, text);
		CHECK(strstr(text, want) != NULL);
		CHECK(part == (strstr(text, "wait_here") != NULL));
		sw_buf_finish(&out);
	}
	sw_profile_free(p);
}

/*
 * The run's summary says when samples came late for 5% of the stalled time
 * or more (the trees are sparser than the interval would make them), and
 * only then.
 */
static void test_late_summary(void)
{
	struct sw_profile *p;
	CHECK_INT(sw_profile_new(&p), 0);
	struct sw_tree_frame fr = {.linkage = "work", .name = "work", .address = 0x1100};
	uint32_t f;
	CHECK_INT(sw_profile_frame(p, &fr, &f), 0);
	/* two stalls of 400 ms: 30 ms late in the first, then 20 ms in the second too */
	static const uint64_t late_ms[] = {30, 20};
	struct sw_tree_stall *s[2];
	for (size_t k = 0; k < 2; k++) {
		struct sw_tree_stall_info info = {
		    .id = k + 1, .thread_id = 1, .duration_ns = 400000000};
		uint32_t th;
		CHECK_INT(sw_profile_add_stall(p, &info, &s[k]), 0);
		CHECK_INT(sw_tree_stall_thread(p, s[k], 1, "", &th), 0);
		CHECK_INT(sw_tree_stall_add_sample(p, s[k], th, &f, 1, 400000000), 0);
	}
	struct sw_render_options o;
	sw_render_options_init(&o);
	struct sw_buf out;
	sw_buf_init(&out, 0);
	for (size_t k = 0; k < 2; k++) {
		s[k]->info.late = 3;
		s[k]->info.late_ns = late_ms[k] * 1000000;
		struct sw_summary sum;
		CHECK_INT(sw_summary_compute(p, &sum), 0);
		CHECK_INT(sum.late_stalls, k + 1);
		sw_buf_reset(&out);
		CHECK(sw_summary_text(p, &sum, &o, &out) >= 0);
		const char *text = sw_buf_str(&out);
		const char *line = text ? strstr(text, "samples came late") : NULL;
		if (k == 0) {
			CHECK(line == NULL); /* 30 of 800 ms: under 5% */
		} else {
			CHECK(line != NULL);
			CHECK(line && strstr(line, "in 2 stalls (50.0 ms in all, 6% of the stalled "
						   "time)") != NULL);
		}
	}
	sw_buf_finish(&out);
	sw_profile_free(p);
}

int main(void)
{
	test_plain();
	test_options();
	test_signatures();
	test_signature_majority();
	test_merge_and_limits();
	test_representative();
	test_random();
	test_paths();
	test_stacks();
	test_pool_full();
	test_culprit();
	test_culprit_stripped();
	test_culprit_toolchain();
	test_toolchain_go();
	test_dependencies();
	test_runtime();
	test_examples();
	test_late_summary();
	test_nodes_reused();
	test_frame_names();
	test_unsampled();
	test_folded_names();
	return sw_test_end();
}
