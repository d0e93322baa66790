/*
 * Benchmark for call trees and the default renderer: aggregates one
 * million samples of 64 frames into 100 stalls, renders them in the tree
 * format with the summary, and builds one tree over every stall as a
 * renderer would show it, against its targets: under 1 s of CPU and under
 * 200 MB on the development machine, so that a day of stalls prints at
 * once.  Outside the targets it then builds that tree whole (what folded
 * and pprof output need) and renders every stall as ndjson.
 *
 * The samples are drawn from the mix of bench/gen-recording.c, whose
 * recording `stallwatch report` is measured on (bench-report.py), so the
 * two measure the same work: 100,000 distinct stacks made by branching off
 * each other at random depths (so they share prefixes the way real call
 * stacks do: a common start/main/run-loop base, then subsystems), over
 * 20,000 functions (1,000 per image) in 20 images.  Draws follow a Zipf-like
 * law (a few hot stacks, a long tail), and each sample is drawn
 * independently, which gives the previous-sample prefix cache no help
 * beyond what the shared prefixes give.
 *
 *   bench-tree [SAMPLES [DEPTH]]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "render/render.h"
#include "bench.h"

#define NSTACKS    100000
#define NFUNCS     20000
#define NIMAGES    20
#define NSTALLS    100
#define TARGET_S   1.0
#define TARGET_MIB 200.0

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double peak_mib(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_maxrss / 1024.0;
}

int main(int argc, char **argv)
{
	size_t nsamples = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
	size_t depth = argc > 2 ? strtoull(argv[2], NULL, 10) : 64;
	if (depth < 8 || depth > 4096)
		return 2;
	struct sw_profile *p;
	if (sw_profile_new(&p) < 0)
		return 1;
	uint32_t images[NIMAGES];
	for (int i = 0; i < NIMAGES; i++) {
		char path[64];
		snprintf(path, sizeof(path), i < 8 ? "/usr/lib/libsys%d.so" : "/opt/app/lib%d.so",
			 i);
		struct sw_tree_image img = {
		    .path = path, .load_address = 0x7f0000000000ull + (uint64_t)i * 0x1000000};
		sw_profile_image(p, &img, &images[i]);
	}
	/* a frame per function and call site: the symbolicator's cache gives these ids */
	uint32_t *funcs = malloc(NFUNCS * sizeof(*funcs));
	for (int i = 0; i < NFUNCS; i++) {
		char name[64], mangled[64];
		snprintf(mangled, sizeof(mangled), "_ZN3app9subsystem%dE8functionEv", i);
		snprintf(name, sizeof(name), "app::subsystem%d::function()", i);
		struct sw_tree_frame f = {.image = images[i % NIMAGES],
					  .linkage = mangled,
					  .name = name,
					  .file = "src/subsystem.cc",
					  .line = (uint32_t)(10 + i),
					  .address = 0x7f0000000000ull + (uint64_t)i * 0x40};
		sw_profile_frame(p, &f, &funcs[i]);
	}
	/* stacks branching off earlier ones */
	uint32_t *stacks = malloc((size_t)NSTACKS * depth * sizeof(*stacks));
	for (size_t s = 0; s < NSTACKS; s++) {
		uint32_t *st = stacks + s * depth;
		size_t keep = 0;
		if (s > 0) {
			const uint32_t *base = stacks + (bench_xorshift(&rng) % s) * depth;
			keep = 6 + bench_xorshift(&rng) % (depth - 6);
			memcpy(st, base, keep * sizeof(*st));
		}
		for (size_t d = keep; d < depth; d++)
			st[d] = funcs[d < 6 ? d : bench_xorshift(&rng) % NFUNCS];
	}
	/* Zipf-like weights over stacks: cumulative table */
	double *cum = malloc(NSTACKS * sizeof(*cum));
	double total = 0;
	for (size_t s = 0; s < NSTACKS; s++)
		cum[s] = total += 1.0 / pow((double)(s + 1), 1.1);
	double t0 = bench_seconds(CLOCK_MONOTONIC), c0 = bench_seconds(CLOCK_PROCESS_CPUTIME_ID);
	struct sw_tree_stall *stalls[NSTALLS];
	for (int k = 0; k < NSTALLS; k++) {
		struct sw_tree_stall_info in = {
		    .id = (uint64_t)k + 1, .thread_id = 1, .kind = "busy"};
		uint32_t th;
		sw_profile_add_stall(p, &in, &stalls[k]);
		sw_tree_stall_thread(p, stalls[k], 1, "main", &th);
	}
	for (size_t i = 0; i < nsamples; i++) {
		double x = (double)(bench_xorshift(&rng) >> 11) / 9007199254740992.0 * total;
		size_t lo = 0, hi = NSTACKS - 1;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (cum[mid] < x)
				lo = mid + 1;
			else
				hi = mid;
		}
		struct sw_tree_stall *s = stalls[i * NSTALLS / nsamples];
		stalls[i * NSTALLS / nsamples]->info.duration_ns += 10000000;
		if (sw_tree_stall_add_sample(p, s, 0, stacks + lo * depth, depth, 10000000) < 0)
			return 1;
	}
	double t1 = bench_seconds(CLOCK_MONOTONIC), c1 = bench_seconds(CLOCK_PROCESS_CPUTIME_ID);
	struct sw_render_options o;
	sw_render_options_init(&o);
	struct sw_buf out;
	sw_buf_init(&out, 0);
	size_t tree_bytes = 0;
	for (int k = 0; k < NSTALLS; k++) {
		if (sw_render_tree_stall(p, stalls[k], &o, &out) < 0)
			return 1;
		tree_bytes += out.len;
		sw_buf_reset(&out);
	}
	struct sw_summary sum;
	sw_summary_compute(p, &sum);
	sw_summary_text(p, &sum, &o, &out);
	double t2 = bench_seconds(CLOCK_MONOTONIC), c2 = bench_seconds(CLOCK_PROCESS_CPUTIME_ID);
	/* the run summary: one tree over every stall, built as renderers build what they show */
	struct sw_tree_options shown = o.tree;
	shown.expand_percent = shown.min_percent;
	struct sw_tree *all;
	if (sw_tree_build(p, stalls, NSTALLS, &shown, -1, &all) < 0)
		return 1;
	uint32_t nodes = all->nnodes;
	sw_tree_free(all);
	double t3 = bench_seconds(CLOCK_MONOTONIC), c3 = bench_seconds(CLOCK_PROCESS_CPUTIME_ID);
	double mib = peak_mib();
	/* extras, outside the targets: the same tree whole (folded, pprof), and ndjson */
	if (sw_tree_build(p, stalls, NSTALLS, &o.tree, -1, &all) < 0)
		return 1;
	uint32_t whole_nodes = all->nnodes;
	sw_tree_free(all);
	double t3w = bench_seconds(CLOCK_MONOTONIC);
	size_t nd_bytes = 0;
	for (int k = 0; k < NSTALLS; k++) {
		sw_buf_reset(&out);
		if (sw_render_json_stall(p, stalls[k], &o, true, &out) < 0)
			return 1;
		nd_bytes += out.len;
	}
	double t4 = bench_seconds(CLOCK_MONOTONIC);
	double secs = t3 - t0, cpus = c3 - c0;
	printf("bench-tree: %zu samples x %zu frames, %d distinct stacks, %d stalls\n", nsamples,
	       depth, NSTACKS, NSTALLS);
	printf("  aggregate        %7.3f s  CPU %.3f s (%.0f ns/sample, %.1f ns/frame)\n", t1 - t0,
	       c1 - c0, (c1 - c0) * 1e9 / (double)nsamples,
	       (c1 - c0) * 1e9 / (double)nsamples / (double)depth);
	printf("  trees + render   %7.3f s  CPU %.3f s (%zu bytes of tree output, signatures, "
	       "summary)\n",
	       t2 - t1, c2 - c1, tree_bytes);
	printf("  run summary tree %7.3f s  (%u nodes over %.1f%%, the heaviest path)\n", t3 - t2,
	       nodes, o.tree.min_percent);
	printf("  whole (extra)    %7.3f s  (%u nodes)\n", t3w - t3, whole_nodes);
	printf("  ndjson (extra)   %7.3f s  (%zu bytes)\n", t4 - t3w, nd_bytes);
	printf(
	    "  total            %7.3f s  (CPU %.3f s; the machine is shared, CPU time is judged)\n",
	    secs, cpus);
	printf("  target < %.1f s CPU: %s (%.2fx of the target)\n", TARGET_S,
	       cpus < TARGET_S ? "met" : "MISSED", cpus / TARGET_S);
	printf("  peak RSS         %7.1f MiB target < %.0f MiB: %s (%.2fx of the target; "
	       "%.1f MiB with the extras)\n",
	       mib, TARGET_MIB, mib < TARGET_MIB ? "met" : "MISSED", mib / TARGET_MIB, peak_mib());
	sw_buf_finish(&out);
	sw_profile_free(p);
	free(stacks);
	free(funcs);
	free(cum);
	return cpus < TARGET_S && mib < TARGET_MIB ? 0 : 1;
}
