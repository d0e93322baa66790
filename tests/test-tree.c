/*
 * Tests for call trees (tree.c, tree-build.c): aggregation, every display
 * option and signatures.  Each expectation is computed here from the
 * samples the test feeds, by plain loops that share no code with the tree.
 */
#include <regex.h>
#include <stdbool.h>
#include <string.h>

#include "test.h"
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

static void test_signatures(void)
{
	struct fixture a, b, c, d;
	load(&a, specs, NSPECS, 0x555500000000, 0, "");
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
	other[0].stack = specs[0].stack;
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

int main(void)
{
	test_plain();
	test_options();
	test_signatures();
	test_merge_and_limits();
	return sw_test_end();
}
