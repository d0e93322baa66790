/*
 * --format speedscope: speedscope's own JSON file format
 * (https://www.speedscope.app/file-format-schema.json), one "sampled"
 * profile per stall (per stall and thread with --thread all), frames
 * shared between them.  Each distinct call path of the stall's tree is one
 * sample, root first, weighing its self time in nanoseconds (unit "none"
 * for trees of sample counts), so the weights add up to the tree's total.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-write.h"
#include "render.h"

#define NONE UINT32_MAX

struct ss {
	struct sw_profile *p;
	const struct sw_render_options *o;
	uint32_t *frame_index; /* profile frame id -> shared index + 1 */
	size_t nframes_alloc;
	uint32_t next;
	struct sw_buf frames; /* the shared frames' JSON */
	struct sw_buf profiles;
	uint32_t *path;
	bool any_profile;
};

static int shared_frame(struct ss *c, uint32_t id, uint32_t *ret)
{
	if (id >= c->nframes_alloc) {
		size_t cap = c->nframes_alloc ? c->nframes_alloc : 256;
		while (cap <= id)
			cap *= 2;
		uint32_t *n = realloc(c->frame_index, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		memset(n + c->nframes_alloc, 0, (cap - c->nframes_alloc) * sizeof(*n));
		c->frame_index = n;
		c->nframes_alloc = cap;
	}
	if (c->frame_index[id]) {
		*ret = c->frame_index[id] - 1;
		return 0;
	}
	const struct sw_tree_frame *f = sw_profile_get_frame(c->p, id);
	const struct sw_tree_image *img = sw_profile_get_image(c->p, f->image);
	char scratch[32];
	int r = sw_buf_puts(&c->frames, c->next ? ",{\"name\":" : "{\"name\":");
	if (r >= 0)
		r = sw_json_string(&c->frames, sw_tree_frame_name(c->p, f, c->o->tree.full_names,
								  scratch, sizeof(scratch)));
	/* speedscope shows the file; without one the image says where the code is */
	if (r >= 0 && (f->file || img))
		r = sw_buf_puts(&c->frames, ",\"file\":");
	if (r >= 0 && (f->file || img))
		r = sw_json_string(&c->frames, f->file ? f->file : img->name);
	if (r >= 0 && f->file && f->line)
		r = sw_buf_printf(&c->frames, ",\"line\":%u", f->line);
	if (r >= 0)
		r = sw_buf_putc(&c->frames, '}');
	if (r < 0)
		return r;
	c->frame_index[id] = ++c->next;
	*ret = c->next - 1;
	return 0;
}

static int profile_json(struct ss *c, const struct sw_tree *t, const char *name)
{
	struct sw_buf *b = &c->profiles;
	int r = sw_buf_puts(b, c->any_profile ? ",{\"type\":\"sampled\",\"name\":"
					      : "{\"type\":\"sampled\",\"name\":");
	c->any_profile = true;
	if (r >= 0)
		r = sw_json_string(b, name);
	if (r >= 0)
		r = sw_buf_printf(
		    b, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%llu,\"samples\":[",
		    t->counts_only ? "none" : "nanoseconds", (unsigned long long)t->total);
	bool any = false;
	for (uint32_t i = 0; i < t->nnodes && r >= 0; i++) {
		if (!t->nodes[i].self)
			continue;
		size_t n = 0;
		for (uint32_t k = i; k != NONE && n < SW_TREE_MAX_DEPTH; k = t->nodes[k].parent)
			c->path[n++] = k;
		r = sw_buf_puts(b, any ? ",[" : "[");
		any = true;
		for (size_t j = n; j-- > 0 && r >= 0;) {
			uint32_t idx;
			r = shared_frame(c, t->nodes[c->path[j]].frame, &idx);
			if (r >= 0)
				r = sw_buf_printf(b, j + 1 < n ? ",%u" : "%u", idx);
		}
		if (r >= 0)
			r = sw_buf_putc(b, ']');
	}
	if (r >= 0)
		r = sw_buf_puts(b, "],\"weights\":[");
	any = false;
	for (uint32_t i = 0; i < t->nnodes && r >= 0; i++) {
		if (!t->nodes[i].self)
			continue;
		r = sw_buf_printf(b, any ? ",%llu" : "%llu", (unsigned long long)t->nodes[i].self);
		any = true;
	}
	return r < 0 ? r : sw_buf_puts(b, "]}");
}

static int stall_profiles(struct ss *c, struct sw_tree_stall *s)
{
	struct sw_tree *trees[64];
	long threads[64];
	int n = sw_render_stall_trees(c->p, s, &c->o->tree, trees, threads, 64);
	if (n < 0)
		return n;
	char label[96], w[32], name[512];
	sw_tree_stall_label(s, true, label, sizeof(label));
	int r = 0;
	for (int k = 0; k < n && r >= 0; k++) {
		sw_render_weight(trees[k]->all, trees[k]->counts_only, w, sizeof(w));
		const struct sw_tree_thread *th = threads[k] >= 0 ? &s->threads[threads[k]] : NULL;
		if (th && !th->main)
			snprintf(name, sizeof(name), "%s %s %s thread %s", label, w, s->info.kind,
				 th->name[0] ? th->name : "?");
		else
			snprintf(name, sizeof(name), "%s %s %s main thread", label, w,
				 s->info.kind);
		r = profile_json(c, trees[k], name);
	}
	for (int k = 0; k < n; k++)
		sw_tree_free(trees[k]);
	return r;
}

int sw_render_speedscope(struct sw_profile *p, const struct sw_render_options *o,
			 struct sw_buf *out)
{
	struct ss c = {.p = p, .o = o};
	sw_buf_init(&c.frames, 0);
	sw_buf_init(&c.profiles, 0);
	c.path = malloc(SW_TREE_MAX_DEPTH * sizeof(*c.path));
	int r = c.path ? 0 : -ENOMEM;
	for (size_t i = 0; i < sw_profile_nstalls(p) && r >= 0; i++)
		r = stall_profiles(&c, sw_profile_stall(p, i));
	if (r >= 0)
		r = sw_buf_puts(
		    out, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
			 "\"shared\":{\"frames\":[");
	if (r >= 0)
		r = sw_buf_append(out, c.frames.data, c.frames.len);
	if (r >= 0)
		r = sw_buf_puts(out, "]},\"profiles\":[");
	if (r >= 0)
		r = sw_buf_append(out, c.profiles.data, c.profiles.len);
	if (r >= 0)
		r = sw_buf_printf(out,
				  "],\"name\":\"stallwatch\",\"activeProfileIndex\":0,"
				  "\"exporter\":\"stallwatch %s\"}\n",
				  o->tool_version);
	sw_buf_finish(&c.frames);
	sw_buf_finish(&c.profiles);
	free(c.frame_index);
	free(c.path);
	return r;
}
