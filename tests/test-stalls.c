/*
 * Tests of the stall collector and the single-stall renderers: stalls are
 * handed out once, complete, with their samples; orphans (samples and ends
 * of stalls whose begin was never seen) are counted and skipped; a new hello
 * forgets the old stream's open stalls; images are found by address, a later
 * image at the same range wins; ceilings hold; the NDJSON object carries the
 * fields stallwatch-run(1) documents and groups identical stacks; busy and
 * blocked follow the documented rule; the report keeps stacks of one hash
 * apart.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/render-stall.h"
#include "report/report.h"
#include "tree/tree.h"
#include "wire/stalls.h"
#include "test.h"

static struct sw_stalls *c;

static int feed(struct sw_wire_msg *m, const struct sw_stall **ret)
{
	const struct sw_stall *st = NULL;
	int r = sw_stalls_feed(c, m, &st);
	if (ret)
		*ret = st;
	return r;
}

static void hello(uint64_t pid)
{
	struct sw_wire_msg m = {.type = SW_MSG_HELLO};
	m.hello.protocol = SW_WIRE_PROTOCOL;
	m.hello.process_name = "app";
	m.hello.bundle_id = "org.example.app";
	m.hello.arch = "x86_64";
	m.hello.pid = pid;
	m.hello.clock_numer = m.hello.clock_denom = 1;
	m.hello.clock_base = 1000000000;
	m.hello.config.interval_us = 10000;
	m.hello.config.threshold_ms = 250;
	CHECK_INT(feed(&m, NULL), 0);
}

static void image(uint32_t index, uint64_t load, uint64_t size, const char *path)
{
	struct sw_wire_msg m = {.type = SW_MSG_IMAGE_ADDED};
	m.image.index = index;
	m.image.load_address = load;
	m.image.text_vmaddr = 0x1000;
	m.image.text_size = size;
	m.image.id_kind = SW_ID_BUILD_ID;
	m.image.id_len = 4;
	memcpy(m.image.id, "\xde\xad\xbe\xef", 4);
	m.image.path = path;
	m.image.arch = "x86_64";
	CHECK_INT(feed(&m, NULL), 0);
}

static void begin(uint64_t id, uint64_t start)
{
	struct sw_wire_msg m = {.type = SW_MSG_STALL_BEGIN};
	m.stall_begin.stall_id = id;
	m.stall_begin.thread_id = 42;
	m.stall_begin.start_time = start;
	m.stall_begin.detect_time = start + 250000000;
	m.stall_begin.context = "main loop";
	CHECK_INT(feed(&m, NULL), 0);
}

static int sample(uint64_t id, uint64_t time, uint64_t tid, uint32_t flags, const uint64_t *fr,
		  uint32_t depth)
{
	struct sw_wire_msg m = {.type = SW_MSG_SAMPLE};
	m.sample.stall_id = id;
	m.sample.time = time;
	m.sample.thread_id = tid;
	m.sample.thread_name = tid == 42 ? "main" : "worker";
	m.sample.flags = flags;
	m.sample.depth = depth;
	m.sample.frames = fr;
	return feed(&m, NULL);
}

static const struct sw_stall *end(uint64_t id, uint64_t end_time, uint64_t duration, uint64_t cpu,
				  uint64_t samples)
{
	struct sw_wire_msg m = {.type = SW_MSG_STALL_END};
	m.stall_end.stall_id = id;
	m.stall_end.end_time = end_time;
	m.stall_end.duration_ns = duration;
	m.stall_end.cpu_ns = cpu;
	m.stall_end.samples = samples;
	const struct sw_stall *st = NULL;
	int r = feed(&m, &st);
	return r == 1 ? st : NULL;
}

static void complete_stall(void)
{
	static const uint64_t a[] = {0x401010, 0x401020, 0x7f0000001100};
	static const uint64_t b[] = {0x401030, 0x401020, 0x7f0000001100};
	hello(7);
	image(0, 0x400000, 0x10000, "/usr/bin/app");
	image(1, 0x7f0000000000, 0x100000, "/lib/libc.so.6");
	begin(1, 5000000);
	for (int i = 0; i < 30; i++)
		CHECK_INT(sample(1, 15000000 + i * 10000000ull, 42, 0, i % 3 ? a : b, 3), 0);
	CHECK_INT(sample(1, 20000000, 43, SW_SAMPLE_BLOCKED, b, 3), 0);
	const struct sw_stall *st = end(1, 305000000, 300000000, 290000000, 30);
	CHECK(st != NULL);
	if (!st)
		return;
	CHECK_INT(st->nsamples, 31);
	CHECK(st->ended);
	/* each sample carries its stack's hash: equal for equal stacks, never 0 */
	for (size_t i = 0; i < st->nsamples; i++) {
		const struct sw_stall_sample *x = &st->sample[i];
		CHECK(x->hash == sw_stalls_stack_hash(x->frames, x->depth) && x->hash != 0);
		CHECK((x->hash == st->sample[0].hash) ==
		      (x->depth == st->sample[0].depth &&
		       !memcmp(x->frames, st->sample[0].frames, x->depth * sizeof(uint64_t))));
		/* and which of the stall's distinct stacks it is, in the order first seen: b, a */
		CHECK_INT(x->stack, x->frames[0] == b[0] ? 0 : 1);
	}
	CHECK_STR(st->context, "main loop");
	struct sw_stall_figures f;
	sw_stall_figures(c, st, &f);
	CHECK_STR(f.kind, "busy");
	CHECK_INT((int)(f.sampled_ms + 0.5), 300);

	struct sw_buf out;
	sw_buf_init(&out, 0);
	CHECK_INT(sw_render_ndjson_stall(&out, c, st), 0);
	const char *json = sw_buf_str(&out);
	const char *want[] = {
	    "{\"schema\":1,\"type\":\"stall\",\"id\":1,",
	    "\"pid\":7,",
	    "\"process\":\"app\"",
	    "\"thread\":42,",
	    "\"duration_ms\":300.000,",
	    "\"cpu_ms\":290.000,",
	    "\"samples\":30,",
	    "\"kind\":\"busy\"",
	    "\"monotonic_start_ns\":1005000000,",
	    ("{\"count\":20,\"thread\":42,\"thread_name\":\"main\",\"flags\":[],\"frames\":"
	     "[\"0x401010\",\"0x401020\",\"0x7f0000001100\"]}"),
	    "{\"count\":10,\"thread\":42,",
	    "\"flags\":[\"blocked\"]",
	    "\"path\":\"/usr/bin/app\"",
	    "\"path\":\"/lib/libc.so.6\"",
	    "\"build_id\":\"deadbeef\"",
	    "\"sample_times_ms\":[10.000,20.000,",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		if (!strstr(json, want[i]))
			fprintf(stderr, "missing %s in %s\n", want[i], json);
		CHECK(strstr(json, want[i]) != NULL);
	}
	CHECK(json[out.len - 1] == '\n' && strchr(json, '\n') == json + out.len - 1);
	/* the heaviest stack first */
	CHECK(strstr(json, "\"count\":20") < strstr(json, "\"count\":10"));
	sw_buf_finish(&out);
}

static void blocked_and_orphans(void)
{
	static const uint64_t a[] = {0x401010};
	begin(2, 400000000);
	for (int i = 0; i < 10; i++)
		sample(2, 410000000 + i * 10000000ull, 42, SW_SAMPLE_BLOCKED, a, 1);
	const struct sw_stall *st = end(2, 700000000, 300000000, 1000000, 10);
	struct sw_stall_figures f;
	if (st) {
		sw_stall_figures(c, st, &f);
		CHECK_STR(f.kind, "blocked");
	}
	/* a starved busy thread: little CPU, but runnable when sampled */
	begin(3, 800000000);
	for (int i = 0; i < 10; i++)
		sample(3, 810000000 + i * 10000000ull, 42, 0, a, 1);
	st = end(3, 1100000000, 300000000, 1000000, 10);
	if (st) {
		sw_stall_figures(c, st, &f);
		CHECK_STR(f.kind, "busy");
	}
	uint64_t before = sw_stalls_info(c)->orphans;
	CHECK_INT(sample(99, 1, 42, 0, a, 1), 0);
	CHECK(end(99, 1, 1, 1, 1) == NULL);
	CHECK_INT(sw_stalls_info(c)->orphans, before + 2);
	/* a new stream forgets stalls open in the old one */
	begin(4, 1);
	hello(8);
	CHECK(sw_stalls_flush(c) == NULL);
	CHECK_INT(sw_stalls_info(c)->pid, 8);
	/* a stall cut off by the end of the stream */
	begin(5, 1000);
	sample(5, 20001000, 42, 0, a, 1);
	st = sw_stalls_flush(c);
	CHECK(st != NULL && !st->ended);
	if (st) {
		sw_stall_figures(c, st, &f);
		CHECK_INT((int)(f.duration_ms + 0.5), 20);
	}
}

static void images_by_address(void)
{
	image(5, 0x500000, 0x1000, "/old.so");
	struct sw_wire_msg m = {.type = SW_MSG_IMAGE_REMOVED};
	m.image_removed.index = 5;
	feed(&m, NULL);
	const struct sw_stall_image *im = sw_stalls_image_at(c, 0x500010);
	CHECK(im && !strcmp(im->path, "/old.so")); /* still there for old samples */
	image(5, 0x500000, 0x1000, "/new.so");
	im = sw_stalls_image_at(c, 0x500010);
	CHECK(im && !strcmp(im->path, "/new.so"));
	CHECK(sw_stalls_image_at(c, 0x501000) == NULL);

	/* ranges inside others: the one still loaded, else the newer, holds the address */
	image(6, 0x600000, 0x8000, "/outer.so");
	image(7, 0x602000, 0x1000, "/inner.so");
	im = sw_stalls_image_at(c, 0x602500);
	CHECK(im && !strcmp(im->path, "/inner.so"));
	im = sw_stalls_image_at(c, 0x607000); /* past the inner range: found below it */
	CHECK(im && !strcmp(im->path, "/outer.so"));
	m.image_removed.index = 7;
	feed(&m, NULL);
	im = sw_stalls_image_at(c, 0x602500);
	CHECK(im && !strcmp(im->path, "/outer.so"));
	m.image_removed.index = 6;
	feed(&m, NULL);
	im = sw_stalls_image_at(c, 0x602500);
	CHECK(im && !strcmp(im->path, "/inner.so"));
	CHECK(sw_stalls_image_at(c, 0x608000) == NULL);
}

/* Further executable segments, hints and what the agent watched (issue 14). */
static void issue14(void)
{
	struct sw_stalls *saved = c;
	CHECK_INT(sw_stalls_new(&c), 0);
	hello(7);
	struct sw_wire_msg m = {.type = SW_MSG_STATS};
	uint64_t first = 1;
	CHECK_INT(sw_stalls_watched(c, &first),
		  SW_WATCHED_UNKNOWN); /* an agent that does not say */
	m.stats.has_loop = true;
	feed(&m, NULL);
	CHECK_INT(sw_stalls_watched(c, &first), SW_WATCHED_NEVER);
	CHECK(sw_stalls_watched_advice(SW_WATCHED_NEVER) &&
	      strstr(sw_stalls_watched_advice(SW_WATCHED_NEVER), "stallwatch_before_wait()"));
	m.stats.loop_first_wait = 600000000 + 1; /* ticks + 1, 1/1 clock: 600 ms */
	feed(&m, NULL);
	CHECK_INT(sw_stalls_watched(c, &first), SW_WATCHED_LATE);
	CHECK(first == 600000000);
	m.stats.loop_first_wait = 20000000 + 1;
	feed(&m, NULL);
	CHECK_INT(sw_stalls_watched(c, &first), SW_WATCHED_YES);
	CHECK(sw_stalls_watched_advice(SW_WATCHED_YES) == NULL);

	/* a second executable segment 64 MiB on, same slide */
	m = (struct sw_wire_msg){.type = SW_MSG_IMAGE_ADDED};
	m.image = (struct sw_wire_image){.index = 1,
					 .load_address = 0x10001000,
					 .text_vmaddr = 0x1000,
					 .text_size = 0x1000,
					 .path = "/far",
					 .arch = "x86_64",
					 .nmore_text = 1};
	m.image.more_text[0] = (struct sw_wire_text_range){0x4001000, 0x100};
	CHECK_INT(feed(&m, NULL), 0);
	const struct sw_stall_image *im = sw_stalls_image_at(c, 0x14001010);
	CHECK(im && !strcmp(im->path, "/far"));
	CHECK(sw_stalls_image_at(c, 0x14001100) == NULL);
	CHECK(sw_stalls_image_at(c, 0x10002000) == NULL);

	/* hints: kept sorted once each, found by offset within their size */
	const char *names[] = {"b", "a", "b-again"};
	uint64_t offsets[] = {0x200, 0x100, 0x200};
	for (int i = 0; i < 3; i++) {
		m = (struct sw_wire_msg){.type = SW_MSG_SYMBOL_HINT};
		m.symbol_hint = (struct sw_wire_symbol_hint){1, offsets[i], 0x40, names[i]};
		CHECK_INT(feed(&m, NULL), 0);
	}
	/* sorted, each offset once, by the time a stall is handed out */
	m = (struct sw_wire_msg){.type = SW_MSG_STALL_BEGIN};
	m.stall_begin.stall_id = 900;
	CHECK_INT(feed(&m, NULL), 0);
	m = (struct sw_wire_msg){.type = SW_MSG_STALL_END};
	m.stall_end.stall_id = 900;
	CHECK_INT(feed(&m, NULL), 1);
	im = sw_stalls_image_at(c, 0x10001000);
	CHECK(im && im->nhints == 2);
	const struct sw_stall_hint *h = im ? sw_stalls_hint_at(im, 0x23f) : NULL;
	CHECK(h && !strcmp(h->name, "b"));
	CHECK(im && sw_stalls_hint_at(im, 0x140) == NULL);
	CHECK(im && sw_stalls_hint_at(im, 0xff) == NULL);

	/* unwinding stopped: cut for another reason than the limit */
	uint64_t fr[3] = {0x10001010, 0x10001020, 0x10001030};
	struct sw_stall_sample s = {.flags = SW_SAMPLE_TRUNCATED, .depth = 3, .frames = fr};
	CHECK(sw_stalls_sample_stopped(c, &s));
	s.depth = 512; /* the default limit: cut there, not stopped */
	CHECK(!sw_stalls_sample_stopped(c, &s));
	s.flags |= SW_SAMPLE_ELIDED; /* agents that keep both ends never cut at the limit */
	CHECK(sw_stalls_sample_stopped(c, &s));
	s.flags = SW_SAMPLE_ELIDED;
	CHECK(!sw_stalls_sample_stopped(c, &s));
	sw_stalls_free(c);
	c = saved;
}

static void ceilings(void)
{
	static uint64_t deep[SW_WIRE_MAX_FRAMES];
	for (uint64_t i = 0; i < SW_WIRE_MAX_FRAMES; i++)
		deep[i] = 0x401000 + i;
	int r = 0;
	for (uint64_t id = 100; id < 200 && r == 0; id++) {
		struct sw_wire_msg m = {.type = SW_MSG_STALL_BEGIN};
		m.stall_begin.stall_id = id;
		r = feed(&m, NULL);
	}
	CHECK_INT(r, -E2BIG); /* open stalls are bounded */
	/* a stack repeated (a stuck thread) is held once: 2000 x 4096 frames fit */
	r = 0;
	for (int k = 0; k < 2000 && r == 0; k++)
		r = sample(101, 1, 42, 0, deep, SW_WIRE_MAX_FRAMES);
	CHECK_INT(r, 0);
	int n = 0;
	do {
		deep[0] = 0x400000 + (uint64_t)n; /* a new stack each time */
		r = sample(100, 1, 42, 0, deep, SW_WIRE_MAX_FRAMES);
	} while (r == 0 && ++n < 100000);
	CHECK_INT(r, -E2BIG); /* frames of distinct stacks are bounded */
	CHECK_INT(n, (1 << 22) / SW_WIRE_MAX_FRAMES - 1); /* stall 101 holds one */
	CHECK(!strcmp(sw_stalls_limit(c),
		      "more than 4194304 frames of distinct stacks in open stalls"));
}

/* The images of a stall's raw stacks: each one a frame is in, once, and no other. */
static void raw_images(void)
{
	struct sw_stalls *saved = c;
	CHECK_INT(sw_stalls_new(&c), 0);
	hello(8);
	image(0, 0x400000, 0x10000, "/usr/bin/app");
	image(1, 0x7f0000000000, 0x100000, "/lib/libc.so.6");
	image(2, 0x7f1000000000, 0x100000, "/lib/libm.so.6");
	image(3, 0x7f2000000000, 0x100000, "/lib/unused.so");
	CHECK_INT(sw_stalls_nimages(c), 4);
	static const uint64_t heavy[] = {0x7f0000001100, 0x401020, 0x7f0000001200};
	static const uint64_t light[] = {0x7f1000000100, 0x401020, 0x7f0000001200};
	begin(3, 5000000);
	for (int i = 0; i < 6; i++)
		CHECK_INT(sample(3, 15000000 + i * 10000000ull, 42, 0, i == 5 ? light : heavy, 3),
			  0);
	const struct sw_stall *st = end(3, 85000000, 80000000, 80000000, 6);
	CHECK(st != NULL);
	struct sw_buf out;
	sw_buf_init(&out, 0);
	if (st)
		CHECK_INT(sw_render_ndjson_stall(&out, c, st), 0);
	const char *json = sw_buf_str(&out);
	const char *images = strstr(json, "\"images\":[");
	CHECK(images != NULL);
	if (images) {
		/* libc and app from the heavier stack, then libm, which only the lighter one has */
		const char *libc = strstr(images, "/lib/libc.so.6"),
			   *app = strstr(images, "/usr/bin/app");
		const char *libm = strstr(images, "/lib/libm.so.6");
		CHECK(libc && app && libm && libc < app && app < libm);
		CHECK(!strstr(images, "unused.so"));
		CHECK(libc && !strstr(libc + 1, "/lib/libc.so.6"));
	}
	sw_buf_finish(&out);
	sw_stalls_free(c);
	c = saved;
}

/* Raw frames of every length print as printf's "0x%" PRIx64 does; the fields alone too. */
static void hex_frames(void)
{
	struct sw_stalls *saved = c;
	CHECK_INT(sw_stalls_new(&c), 0);
	hello(9);
	uint64_t frames[40];
	uint32_t n = 0;
	frames[n++] = 0;
	frames[n++] = UINT64_MAX;
	for (unsigned bits = 1; bits <= 64 && n < 40; bits += 2) /* 1 to 16 digits, every digit */
		frames[n++] =
		    (1ull << (bits - 1)) | (0x0123456789abcdefull & ((1ull << (bits - 1)) - 1));
	begin(4, 5000000);
	CHECK_INT(sample(4, 15000000, 42, 0, frames, n), 0);
	const struct sw_stall *st = end(4, 25000000, 20000000, 20000000, 1);
	CHECK(st != NULL);
	char want[40 * 24] = "\"frames\":[";
	for (uint32_t k = 0; k < n; k++)
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s\"0x%" PRIx64 "\"",
			 k ? "," : "", frames[k]);
	strcat(want, "]");
	struct sw_buf line, fields;
	sw_buf_init(&line, 0);
	sw_buf_init(&fields, 0);
	if (st) {
		CHECK_INT(sw_render_ndjson_stall(&line, c, st), 0);
		CHECK_INT(sw_render_ndjson_stall_fields(&fields, c, st), 0);
	}
	const char *json = sw_buf_str(&line);
	CHECK(strstr(json, want) != NULL);
	/* the line is its header, the fields and the closing brace */
	const char *head = "{\"schema\":1,\"type\":\"stall\",";
	CHECK(strncmp(json, head, strlen(head)) == 0);
	CHECK(line.len == strlen(head) + fields.len + 2 &&
	      memcmp(json + strlen(head), sw_buf_str(&fields), fields.len) == 0 &&
	      strcmp(json + strlen(head) + fields.len, "}\n") == 0);
	sw_buf_finish(&line);
	sw_buf_finish(&fields);
	sw_stalls_free(c);
	c = saved;
}

/*
 * The report's memory of raw stacks (report.c) holds stacks by hash and
 * compares them whole: two stacks made to have one hash, the same but for
 * the root frame, stay two stacks, in the stall that has both and in a
 * later one that meets them again the other way round.
 */
static void report_memo(void)
{
	struct sw_stalls *saved = c;
	CHECK_INT(sw_stalls_new(&c), 0);
	static const uint64_t a[] = {0x401010, 0x401020, 0x401030};
	static const uint64_t b[] = {0x401010, 0x401020, 0x401040};
	hello(9);
	image(0, 0x400000, 0x10000, "/nonexistent/app");
	struct sw_profile *p;
	struct sw_report *r;
	CHECK_INT(sw_profile_new(&p), 0);
	CHECK_INT(sw_report_new(p, NULL, &r), 0);
	uint32_t leaf[2][2] = {{0}}; /* by stall, for a and b */
	for (uint64_t id = 1; id <= 2; id++) {
		begin(id, id * 1000000000);
		for (int i = 0; i < 4; i++) {
			/* a, b, b, a in the first stall; b, a, a, b in the second */
			bool is_a = (i == 0 || i == 3) == (id == 1);
			CHECK_INT(sample(id, id * 1000000000 + (i + 1) * 10000000ull, 42, 0,
					 is_a ? a : b, 3),
				  0);
		}
		struct sw_stall *st =
		    (struct sw_stall *)end(id, id * 1000000000 + 50000000, 50000000, 50000000, 4);
		CHECK(st != NULL);
		if (!st)
			break;
		uint64_t h = sw_stalls_stack_hash(a, 3);
		for (size_t i = 0; i < st->nsamples; i++)
			st->sample[i].hash = h; /* a collision, as unlikely as it may be */
		struct sw_tree_stall *ts;
		CHECK_INT(sw_report_add_stall(r, c, st, NULL, &ts), 0);
		CHECK_INT(ts->nsamples, 4);
		if (ts->nsamples != 4)
			break;
		for (int i = 0; i < 4; i++) {
			bool is_a = (i == 0 || i == 3) == (id == 1);
			if (i < 2)
				leaf[id - 1][!is_a] = ts->samples[i].stack;
			else
				CHECK_INT(ts->samples[i].stack, leaf[id - 1][!is_a]);
		}
		CHECK(leaf[id - 1][0] != leaf[id - 1][1]);
	}
	CHECK_INT(leaf[1][0], leaf[0][0]);
	CHECK_INT(leaf[1][1], leaf[0][1]);
	sw_report_free(r);
	sw_profile_free(p);
	sw_stalls_free(c);
	c = saved;
}

/*
 * The hello of the agent in the process's next image (an exec: the same
 * pid, a new clock base): the old images lose their ranges to the new
 * ones, the counters add up, and the loop that waited before was watched.
 * A hello of the same agent again (a client reconnecting) keeps the images.
 */
static void exec_hello(void)
{
	struct sw_stalls *saved = c;
	CHECK_INT(sw_stalls_new(&c), 0);
	hello(7);
	image(0, 0x400000, 0x10000, "/usr/bin/sh");
	struct sw_wire_msg m = {.type = SW_MSG_STATS};
	m.stats = (struct sw_wire_stats){
	    .samples = 10, .stalls = 1, .agent_cpu_ns = 5, .has_loop = true, .loop_first_wait = 2};
	feed(&m, NULL);
	hello(7); /* the same agent again */
	const struct sw_stall_image *im = sw_stalls_image_at(c, 0x400100);
	CHECK(im && !strcmp(im->path, "/usr/bin/sh"));

	struct sw_wire_msg h = {.type = SW_MSG_HELLO};
	h.hello = (struct sw_wire_hello){.protocol = SW_WIRE_PROTOCOL,
					 .process_name = "python3",
					 .arch = "x86_64",
					 .pid = 7,
					 .clock_numer = 1,
					 .clock_denom = 1,
					 .clock_base = 2000000000};
	CHECK_INT(feed(&h, NULL), 0);
	CHECK(!strcmp(sw_stalls_info(c)->process_name, "python3"));
	uint64_t first;
	/* the new agent has not said yet: the loop waited in the image before */
	CHECK_INT(sw_stalls_watched(c, &first), SW_WATCHED_YES);
	image(0, 0x400000, 0x20000, "/usr/bin/python3");
	im = sw_stalls_image_at(c, 0x400100);
	CHECK(im && !strcmp(im->path, "/usr/bin/python3"));
	m.stats = (struct sw_wire_stats){.samples = 4, .stalls = 2, .has_loop = true};
	feed(&m, NULL);
	const struct sw_wire_stats *st = &sw_stalls_info(c)->stats;
	CHECK(st->samples == 14 && st->stalls == 3 && st->agent_cpu_ns == 5);
	CHECK_INT(sw_stalls_watched(c, &first), SW_WATCHED_YES);

	/* an agent that never saw its loop wait, in a process that never did */
	sw_stalls_free(c);
	CHECK_INT(sw_stalls_new(&c), 0);
	hello(7);
	m.stats = (struct sw_wire_stats){.has_loop = true};
	feed(&m, NULL);
	CHECK_INT(feed(&h, NULL), 0);
	feed(&m, NULL);
	CHECK_INT(sw_stalls_watched(c, &first), SW_WATCHED_NEVER);
	sw_stalls_free(c);
	c = saved;
}

int main(void)
{
	CHECK_INT(sw_stalls_new(&c), 0);
	complete_stall();
	blocked_and_orphans();
	images_by_address();
	issue14();
	ceilings();
	raw_images();
	hex_frames();
	report_memo();
	exec_hello();
	sw_stalls_free(c);
	sw_stalls_free(NULL);
	return sw_test_end();
}
