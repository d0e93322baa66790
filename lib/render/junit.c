/*
 * JUnit XML output (see junit.h), in the subset every CI system reads and
 * both the Ant-style and the Jenkins schema accept:
 * <testsuites><testsuite><properties/><testcase><failure/></testcase>...
 * <system-out/><system-err/></testsuite></testsuites>.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "junit.h"
#include "render.h"
#include "util/time-units.h"

#define NONE UINT32_MAX

/* Appends s with XML's five special characters escaped and controls dropped. */
static int xml_text(struct sw_buf *b, const char *s)
{
	int r = 0;
	for (; *s && r >= 0; s++) {
		switch (*s) {
		case '<':
			r = sw_buf_puts(b, "&lt;");
			break;
		case '>':
			r = sw_buf_puts(b, "&gt;");
			break;
		case '&':
			r = sw_buf_puts(b, "&amp;");
			break;
		case '"':
			r = sw_buf_puts(b, "&quot;");
			break;
		case '\'':
			r = sw_buf_puts(b, "&apos;");
			break;
		default:
			if ((unsigned char)*s >= 0x20 || *s == '\n' || *s == '\t')
				r = sw_buf_putc(b, *s);
		}
	}
	return r;
}

struct group {
	uint64_t sig;
	size_t first, count, failing;
	uint64_t total, longest;
	struct sw_tree_stall *example;
};

static int by_sig(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : (x[1] > y[1]) - (x[1] < y[1]);
}

static bool fails(const struct sw_junit_options *o, const struct sw_tree_stall *s, uint64_t sig)
{
	if (o->known && o->known(o->known_ctx, sig))
		return false;
	return o->fail_on_stall || (o->fail_longer_ns && s->info.duration_ns > o->fail_longer_ns);
}

static int frame_text(struct sw_profile *p, const struct sw_tree_frame *f, struct sw_buf *b)
{
	const struct sw_tree_image *img = sw_profile_get_image(p, f->image);
	char scratch[32];
	int r = xml_text(b, sw_tree_frame_name(p, f, false, scratch, sizeof(scratch)));
	if (r >= 0 && img) {
		r = sw_buf_puts(b, "  (");
		if (r >= 0)
			r = xml_text(b, img->name);
		if (r >= 0)
			r = sw_buf_putc(b, ')');
	}
	if (r >= 0 && f->file) {
		r = sw_buf_puts(b, "  ");
		if (r >= 0)
			r = xml_text(b, f->file);
		if (r >= 0)
			r = sw_buf_printf(b, ":%u", f->line);
	}
	return r < 0 ? r : sw_buf_putc(b, '\n');
}

/* The heaviest path, root first, one frame a line. */
static int heaviest_text(struct sw_profile *p, struct sw_tree_stall *s, struct sw_buf *b)
{
	struct sw_tree *t;
	int r = sw_tree_stall_default_tree(p, s, SW_TREE_EXPAND_HEAVIEST, &t);
	if (r < 0)
		return r;
	for (uint32_t i = t->first_root; i != NONE && r >= 0; i = t->nodes[i].first_child)
		r = frame_text(p, sw_profile_get_frame(p, t->nodes[i].frame), b);
	sw_tree_free(t);
	return r;
}

/* "spin_ms (app) sig 7f09e01574df5857": the culprit, then the signature */
static int case_name(struct sw_profile *p, const struct group *g, struct sw_buf *b)
{
	const struct sw_tree_frame *f = sw_render_culprit(p, g->example);
	int r = 0;
	if (f) {
		const struct sw_tree_image *img = sw_profile_get_image(p, f->image);
		char scratch[32];
		r = xml_text(b, sw_tree_frame_name(p, f, false, scratch, sizeof(scratch)));
		if (r >= 0 && img) {
			r = sw_buf_puts(b, " (");
			if (r >= 0)
				r = xml_text(b, img->name);
			if (r >= 0)
				r = sw_buf_puts(b, ")");
		}
		if (r >= 0)
			r = sw_buf_putc(b, ' ');
	}
	return r < 0 ? r : sw_buf_printf(b, "sig %016llx", (unsigned long long)g->sig);
}

/* "2 stalls (604.0 ms in total); longest #1: 302.0 ms" */
static int case_summary(const struct sw_junit_options *o, const struct group *g, struct sw_buf *b)
{
	char label[96], w[32], total[32];
	sw_tree_stall_label(g->example, o->qualify, label, sizeof(label));
	sw_render_weight(g->longest, g->example->info.counts_only, w, sizeof(w));
	sw_render_weight(g->total, g->example->info.counts_only, total, sizeof(total));
	return sw_buf_printf(b, "%zu stall%s (%s in total); longest %s: %s", g->count,
			     g->count == 1 ? "" : "s", total, label, w);
}

static int testcase(struct sw_profile *p, const struct sw_junit_options *o, const struct group *g,
		    struct sw_buf *b)
{
	int r = sw_buf_puts(b, "    <testcase classname=\"stallwatch.stalls\" name=\"");
	if (r >= 0)
		r = case_name(p, g, b);
	if (r >= 0)
		r = sw_buf_printf(b, "\" time=\"%.3f\"", sw_ns_to_s(g->total));
	if (r >= 0 && !g->failing)
		return sw_buf_puts(b, "/>\n");
	if (r >= 0)
		r = sw_buf_puts(b, ">\n      <failure type=\"stall\" message=\"");
	if (r >= 0)
		r = case_summary(o, g, b);
	if (r >= 0)
		r = sw_buf_puts(b, "\">");
	if (r >= 0)
		r = heaviest_text(p, g->example, b);
	if (r >= 0)
		r = sw_buf_puts(b, "</failure>\n");
	return r < 0 ? r : sw_buf_puts(b, "    </testcase>\n");
}

/* The cases that passed, with their paths: a passing <testcase> has no body in Ant's schema. */
static int passed_text(struct sw_profile *p, const struct sw_junit_options *o,
		       const struct group *groups, size_t ng, struct sw_buf *b)
{
	int r = sw_buf_puts(b, "    <system-out>");
	for (size_t i = 0; i < ng && r >= 0; i++) {
		if (groups[i].failing)
			continue;
		r = case_name(p, &groups[i], b);
		if (r >= 0)
			r = sw_buf_puts(b, ": ");
		if (r >= 0)
			r = case_summary(o, &groups[i], b);
		if (r >= 0)
			r = sw_buf_putc(b, '\n');
		if (r >= 0)
			r = heaviest_text(p, groups[i].example, b);
	}
	return r < 0 ? r : sw_buf_puts(b, "</system-out>\n    <system-err></system-err>\n");
}

int sw_render_junit(struct sw_profile *p, const struct sw_junit_options *o, struct sw_buf *out)
{
	size_t n = sw_profile_nstalls(p);
	uint64_t *pairs = malloc((n ? n : 1) * 2 * sizeof(*pairs));
	struct group *groups = malloc((n ? n : 1) * sizeof(*groups));
	if (!pairs || !groups) {
		free(pairs);
		free(groups);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		pairs[2 * i] = sw_tree_stall_signature(p, sw_profile_stall(p, i));
		pairs[2 * i + 1] = i;
	}
	qsort(pairs, n, 2 * sizeof(*pairs), by_sig);
	size_t ng = 0, nfail = 0;
	uint64_t all = 0;
	for (size_t i = 0; i < n;) {
		struct group g = {.sig = pairs[2 * i]};
		for (; i < n && pairs[2 * i] == g.sig; i++) {
			struct sw_tree_stall *s = sw_profile_stall(p, pairs[2 * i + 1]);
			g.count++;
			g.total += s->info.duration_ns;
			g.failing += fails(o, s, g.sig);
			if (!g.example || s->info.duration_ns > g.longest) {
				g.example = s;
				g.longest = s->info.duration_ns;
			}
		}
		all += g.total;
		nfail += g.failing > 0;
		groups[ng++] = g;
	}
	/* Ant's schema: no attributes on testsuites, package, id, timestamp and
	   hostname on each testsuite, properties and system-out/-err always */
	int r = sw_buf_printf(out,
			      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			      "<testsuites>\n"
			      "  <testsuite name=\"stallwatch\" package=\"stallwatch\" id=\"0\" "
			      "timestamp=\"%s\" hostname=\"",
			      o->timestamp);
	if (r >= 0)
		r = xml_text(out, o->hostname && o->hostname[0] ? o->hostname : "localhost");
	if (r >= 0)
		r = sw_buf_printf(out,
				  "\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" time=\"%.3f\">\n"
				  "    <properties></properties>\n",
				  ng, nfail, sw_ns_to_s(all));
	for (size_t i = 0; i < ng && r >= 0; i++)
		r = testcase(p, o, &groups[i], out);
	if (r >= 0)
		r = passed_text(p, o, groups, ng, out);
	if (r >= 0)
		r = sw_buf_puts(out, "  </testsuite>\n</testsuites>\n");
	free(pairs);
	free(groups);
	return r;
}
