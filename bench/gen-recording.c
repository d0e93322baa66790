/*
 * Writes a synthetic .swtrace recording for the report benchmarks and the
 * bounded-cost tests (issues 17 and 11): a fixed seed, so the same
 * arguments always give the same bytes.
 *
 *   gen-recording [--whole] OUT.swtrace [SAMPLES [STACKS [DEPTH [IMAGES [PER-STALL]]]]]
 *
 * The samples go through the recording's stack table, as `record` writes
 * them; with --whole, each stack is written as an agent sends it (whole, or
 * against the thread's previous one), as recordings were before the table.
 *
 * Defaults: 1,000,000 samples of 64 frames over 100,000 distinct stacks in
 * 20 images, in stalls of 10,000 samples.  Stacks branch off earlier ones
 * at random depths (so they share prefixes the way real call stacks do) and
 * every stack is drawn at least once: every tenth sample takes the next
 * stack in order, the others follow a Zipf-like law (a few hot stacks, a
 * long tail).  Return addresses are call sites inside functions, so one
 * function shows up under several addresses.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "wire/recording.h"
#include "wire/wire.h"

#define FUNCS_PER_IMAGE 1000
#define SITES           8 /* call sites per function */

static uint64_t rng = 0x5eed5eed5eed5eedull;

static uint64_t site(uint32_t nimages)
{
	uint64_t r = bench_xorshift(&rng);
	uint64_t image = r % nimages, func = (r >> 8) % FUNCS_PER_IMAGE, s = (r >> 20) % SITES;
	return 0x7f0000000000ull + image * 0x1000000 + func * 0x400 + 0x10 + s * 0x20;
}

static bool whole;

/* Written the way `record` writes what an agent sends, or as sent (--whole). */
static int emit(struct sw_recording_writer *w, const struct sw_wire_msg *m)
{
	static struct sw_wire_encoder enc;
	static uint8_t buf[SW_WIRE_MAX_MESSAGE];
	if (!whole)
		return sw_recording_writer_message(w, m, NULL, 0);
	if (m->type == SW_MSG_HELLO)
		sw_wire_encoder_reset(&enc);
	int n = sw_wire_encode(&enc, buf, sizeof(buf), m);
	return n < 0 ? n : sw_recording_writer_write(w, buf, (size_t)n);
}

static int header(struct sw_recording_writer *w, uint32_t nimages)
{
	struct sw_wire_msg m = {.type = SW_MSG_HELLO,
				.hello = {.protocol = SW_WIRE_PROTOCOL,
					  .platform = SW_PLATFORM_LINUX,
					  .agent_version = "gen",
					  .arch = "x86_64",
					  .os_version = "",
					  .device_model = "",
					  .process_name = "gen",
					  .bundle_id = "",
					  .pid = 4242,
					  .clock_numer = 1,
					  .clock_denom = 1,
					  .config = {.present = 15,
						     .threshold_ms = 250,
						     .interval_us = 1000,
						     .max_depth = 512}}};
	int e = emit(w, &m);
	for (uint32_t i = 0; i < nimages && e >= 0; i++) {
		char path[64];
		snprintf(path, sizeof(path),
			 i < 8 ? "/nonexistent/libsys%u.so" : "/nonexistent/app%u", i);
		m = (struct sw_wire_msg){
		    .type = SW_MSG_IMAGE_ADDED,
		    .image = {.index = i,
			      .load_address = 0x7f0000000000ull + i * 0x1000000ull,
			      .text_size = 0x1000000,
			      .id_kind = SW_ID_BUILD_ID,
			      .id_len = 20,
			      .path = path,
			      .arch = "x86_64"}};
		for (int k = 0; k < 20; k++)
			m.image.id[k] = (uint8_t)(i * 31 + k);
		e = emit(w, &m);
	}
	return e;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--whole") == 0) {
		whole = true;
		argv++;
		argc--;
	}
	if (argc < 2 || argc > 7) {
		fprintf(stderr,
			"usage: gen-recording [--whole] OUT [SAMPLES [STACKS [DEPTH [IMAGES "
			"[PER-STALL]]]]]\n");
		return 2;
	}
	size_t nsamples = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000;
	size_t nstacks = argc > 3 ? strtoull(argv[3], NULL, 10) : 100000;
	uint32_t depth = argc > 4 ? (uint32_t)strtoul(argv[4], NULL, 10) : 64;
	uint32_t nimages = argc > 5 ? (uint32_t)strtoul(argv[5], NULL, 10) : 20;
	size_t per_stall = argc > 6 ? strtoull(argv[6], NULL, 10) : 10000;
	if (!per_stall || !nstacks || depth < 2 || depth > SW_WIRE_MAX_FRAMES || !nimages ||
	    nimages > 1000)
		return 2;
	uint64_t *stacks = malloc(nstacks * depth * sizeof(*stacks));
	if (!stacks)
		return 1;
	/* stack i: a prefix (root side) of an earlier stack, then new frames */
	for (size_t i = 0; i < nstacks; i++) {
		uint64_t *s = stacks + i * depth;
		size_t keep = 0;
		if (i) {
			const uint64_t *parent = stacks + (bench_xorshift(&rng) % i) * depth;
			keep = bench_xorshift(&rng) % depth;
			memcpy(s, parent, keep * sizeof(*s));
		}
		for (size_t k = keep; k < depth; k++)
			s[k] = site(nimages);
	}
	struct sw_recording_writer *w;
	struct sw_error err = {0};
	if (sw_recording_writer_open(argv[1], &w, &err) < 0) {
		fprintf(stderr, "gen-recording: cannot write '%s': %s\n", argv[1],
			sw_error_str(&err));
		return 1;
	}
	int e = header(w, nimages);
	uint64_t frames[SW_WIRE_MAX_FRAMES];
	uint64_t t = 1000000000;
	for (size_t i = 0; i < nsamples && e >= 0; i++) {
		uint64_t id = 1 + i / per_stall;
		if (i % per_stall == 0) {
			struct sw_wire_msg b = {
			    .type = SW_MSG_STALL_BEGIN,
			    .stall_begin = {.stall_id = id, .thread_id = 1, .start_time = t}};
			e = emit(w, &b);
		}
		size_t k = i % 10 == 0
			       ? (i / 10) % nstacks
			       : (size_t)(pow((double)(bench_xorshift(&rng) % 1000000) / 1e6, 3.0) *
					  (double)nstacks);
		if (k >= nstacks)
			k = nstacks - 1;
		/* the wire wants the leaf first; stacks are kept root first */
		for (uint32_t d = 0; d < depth; d++)
			frames[d] = stacks[k * depth + depth - 1 - d];
		t += 1000000;
		struct sw_wire_msg m = {.type = SW_MSG_SAMPLE,
					.sample = {.stall_id = id,
						   .time = t,
						   .thread_id = 1,
						   .thread_name = "main",
						   .depth = depth,
						   .frames = frames}};
		if (e >= 0)
			e = emit(w, &m);
		if (e >= 0 && (i + 1 == nsamples || (i + 1) % per_stall == 0)) {
			uint64_t n = i % per_stall + 1;
			struct sw_wire_msg end = {.type = SW_MSG_STALL_END,
						  .stall_end = {.stall_id = id,
								.end_time = t,
								.duration_ns = n * 1000000,
								.cpu_ns = n * 1000000,
								.samples = n}};
			e = emit(w, &end);
		}
	}
	free(stacks);
	if (e < 0 || sw_recording_writer_close(w, &err) < 0) {
		fprintf(stderr, "gen-recording: cannot write '%s'\n", argv[1]);
		return 1;
	}
	return 0;
}
