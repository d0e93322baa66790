/*
 * A test helper: loads a stack description (tests/data/render-stacks.txt
 * explains the lines) into a profile and prints it in one format, so that
 * test-render.py can read every format back with an independent reader.
 *
 *   render-fixture FILE FORMAT [--invert] [--hide-system] [--thread all]
 *                  [--min-percent P] [--max-depth N] [--flatten-recursion]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/render.h"

static struct sw_profile *profile;
static struct sw_tree_stall *stall;

static const char *field(char **s)
{
	char *f = strsep(s, "|");
	return f && strcmp(f, "-") ? f : NULL;
}

static int parse_frame(char *text, uint32_t *ret)
{
	struct sw_tree_frame f = {0};
	const char *img = field(&text);
	f.image = img ? (uint32_t)atoi(img) : 0;
	f.linkage = field(&text);
	f.name = field(&text);
	f.file = field(&text);
	const char *line = field(&text);
	f.line = line ? (uint32_t)atoi(line) : 0;
	const char *addr = field(&text);
	f.address = addr ? strtoull(addr, NULL, 0) : 0;
	const char *inl = field(&text);
	f.inlined = inl && atoi(inl);
	return sw_profile_frame(profile, &f, ret);
}

static int parse_id(const char *hex, struct sw_tree_image *img)
{
	if (strcmp(hex, "-") == 0)
		return 0;
	size_t n = strlen(hex) / 2;
	if (n > sizeof(img->id))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		sscanf(hex + 2 * i, "%2x", &v);
		img->id[i] = (uint8_t)v;
	}
	img->id_len = (uint32_t)n;
	return 0;
}

static int load_line(char *line)
{
	char *rest = line;
	char *word = strsep(&rest, " ");
	if (strcmp(word, "image") == 0) {
		struct sw_tree_image img = {0};
		strsep(&rest, " ");
		img.path = strsep(&rest, " ");
		img.load_address = strtoull(strsep(&rest, " "), NULL, 0);
		img.text_size = strtoull(strsep(&rest, " "), NULL, 0);
		if (parse_id(strsep(&rest, " "), &img) < 0)
			return -EINVAL;
		uint32_t idx;
		return sw_profile_image(profile, &img, &idx);
	}
	if (strcmp(word, "stall") == 0) {
		struct sw_tree_stall_info in = {0};
		in.id = strtoull(strsep(&rest, " "), NULL, 0);
		in.source = strsep(&rest, " ");
		in.thread_id = strtoull(strsep(&rest, " "), NULL, 0);
		in.duration_ns = strtoull(strsep(&rest, " "), NULL, 0);
		in.cpu_ns = strtoull(strsep(&rest, " "), NULL, 0);
		in.kind = strsep(&rest, " ");
		in.mode = strsep(&rest, " ");
		if (in.mode && strcmp(in.mode, "-") == 0)
			in.mode = NULL;
		return sw_profile_add_stall(profile, &in, &stall);
	}
	if (strcmp(word, "thread") == 0) {
		uint64_t tid = strtoull(strsep(&rest, " "), NULL, 0);
		uint32_t idx;
		return sw_tree_stall_thread(profile, stall, tid, rest, &idx);
	}
	if (strcmp(word, "sample") == 0) {
		uint64_t tid = strtoull(strsep(&rest, " "), NULL, 0);
		uint64_t w = strtoull(strsep(&rest, " "), NULL, 0);
		uint32_t frames[256], idx;
		size_t depth = 0;
		for (char *f = strsep(&rest, ";"); f && depth < 256; f = strsep(&rest, ";"))
			if (parse_frame(f, &frames[depth++]) < 0)
				return -EINVAL;
		int r = sw_tree_stall_thread(profile, stall, tid, NULL, &idx);
		return r < 0 ? r : sw_tree_stall_add_sample(profile, stall, idx, frames, depth, w);
	}
	return 0;
}

/* Writes what the renderer drains, as the command does, and counts the drains. */
static unsigned drains;

static int drain(void *ctx, struct sw_buf *b)
{
	(void)ctx;
	fwrite(b->data, 1, b->len, stdout);
	sw_buf_reset(b);
	drains++;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	FILE *in = fopen(argv[1], "r");
	enum sw_format fmt;
	if (!in || sw_format_parse(argv[2], &fmt) < 0 || sw_profile_new(&profile) < 0)
		return 2;
	struct sw_render_options o;
	sw_render_options_init(&o);
	o.qualify = true;
	o.drain = drain;
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "--invert") == 0)
			o.tree.invert = true;
		else if (strcmp(argv[i], "--hide-system") == 0)
			o.tree.hide_system = true;
		else if (strcmp(argv[i], "--flatten-recursion") == 0)
			o.tree.flatten_recursion = true;
		else if (strcmp(argv[i], "--full-names") == 0)
			o.tree.full_names = true;
		else if (strcmp(argv[i], "--thread") == 0 && i + 1 < argc &&
			 !strcmp(argv[++i], "all"))
			o.tree.thread = SW_THREAD_ALL;
		else if (strcmp(argv[i], "--min-percent") == 0 && i + 1 < argc)
			o.tree.min_percent = atof(argv[++i]);
		else if (strcmp(argv[i], "--max-depth") == 0 && i + 1 < argc)
			o.tree.max_depth = (uint32_t)atoi(argv[++i]);
		else
			return 2;
	}
	static char line[65536];
	while (fgets(line, sizeof(line), in)) {
		line[strcspn(line, "\n")] = 0;
		if (line[0] == '#' || !line[0])
			continue;
		if (load_line(line) < 0) {
			fprintf(stderr, "render-fixture: bad line: %s\n", line);
			return 1;
		}
	}
	fclose(in);
	struct sw_renderer *r;
	struct sw_buf out;
	sw_buf_init(&out, 0);
	int e = sw_renderer_new(fmt, &o, &r);
	if (e == -ENOTSUP)
		return 77;
	for (size_t i = 0; e >= 0 && i < sw_profile_nstalls(profile); i++)
		e = sw_renderer_stall(r, profile, sw_profile_stall(profile, i), &out);
	if (e >= 0)
		e = sw_renderer_end(r, profile, &out);
	if (e < 0) {
		fprintf(stderr, "render-fixture: %s\n", strerror(-e));
		return 1;
	}
	fwrite(out.data, 1, out.len, stdout);
	if (drains)
		fprintf(stderr, "render-fixture: %u drains\n", drains);
	sw_buf_finish(&out);
	sw_renderer_free(r);
	sw_profile_free(profile);
	return 0;
}
