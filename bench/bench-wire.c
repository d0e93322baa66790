/*
 * Benchmark of the wire format: bytes per frame of sample messages and the
 * decoder's rate, on stacks made from real binaries' functions.
 *
 * Input (stdin): one function a line, "IMAGE ADDRESS SIZE" in hex, as
 * bench-wire.sh extracts them from a few installed libraries.  Stacks are
 * drawn from a fixed call graph over those functions: deep shared prefixes,
 * a few thousand distinct stacks, program counters wandering inside their
 * function, as a stalled main loop samples.  The baseline is 8 bytes per
 * frame, the raw address.
 *
 * With a recording as argument (`bench-wire FILE.swtrace`) it measures the
 * agent's own samples instead: the recording's stream as the agent encoded
 * it, and the decoder's rate over it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/error.h"
#include "wire/recording.h"
#include "wire/wire.h"
#include "bench.h"

struct func {
	uint64_t addr, size;
};

static struct func *funcs;
static size_t nfuncs;
static uint64_t rng = 88172645463325252ull;

static int read_funcs(void)
{
	size_t cap = 0;
	unsigned image;
	unsigned long long addr, size;
	uint64_t base[64] = {0};
	while (scanf("%u %llx %llx", &image, &addr, &size) == 3) {
		if (image >= 64 || size < 8)
			continue;
		if (!base[image])
			base[image] = 0x7f0000000000ull + (uint64_t)image * 0x10000000ull;
		if (nfuncs == cap) {
			cap = cap ? cap * 2 : 4096;
			funcs = realloc(funcs, cap * sizeof(*funcs));
			if (!funcs)
				return -ENOMEM;
		}
		funcs[nfuncs++] = (struct func){base[image] + addr, size};
	}
	return nfuncs >= 100 ? 0 : -EINVAL;
}

/* A return address somewhere inside a function. */
static uint64_t site(size_t f)
{
	return funcs[f].addr + 1 + bench_xorshift(&rng) % (funcs[f].size - 1);
}

#define CHAINS    48
#define VARIANTS  64
#define MAX_DEPTH 160

/* Call chains from the root, and leaf-side variants hanging off them. */
static uint64_t chains[CHAINS][MAX_DEPTH];
static uint32_t chain_depth[CHAINS];
static uint64_t variants[CHAINS][VARIANTS][12];
static uint32_t variant_depth[CHAINS][VARIANTS];
static size_t variant_leaf[CHAINS][VARIANTS];

static void build_graph(uint32_t min_depth, uint32_t max_depth)
{
	for (int c = 0; c < CHAINS; c++) {
		chain_depth[c] =
		    min_depth + (uint32_t)(bench_xorshift(&rng) % (max_depth - min_depth + 1)) - 5;
		/* chains share their root part in groups, like real programs */
		for (uint32_t i = 0; i < chain_depth[c]; i++)
			chains[c][i] = (c >= 4 && i < chain_depth[c] / 2)
					   ? chains[c % 4][i]
					   : site(bench_xorshift(&rng) % nfuncs);
		for (int v = 0; v < VARIANTS; v++) {
			variant_depth[c][v] = 1 + (uint32_t)(bench_xorshift(&rng) % 8);
			for (uint32_t i = 0; i < variant_depth[c][v]; i++)
				variants[c][v][i] = site(bench_xorshift(&rng) % nfuncs);
			variant_leaf[c][v] = bench_xorshift(&rng) % nfuncs;
		}
	}
}

/* Writes a stack, leaf first; returns its depth. */
static uint32_t draw_stack(uint64_t *frames, int chain, int variant)
{
	uint32_t vd = variant_depth[chain][variant], cd = chain_depth[chain], n = 0;
	size_t leaf = variant_leaf[chain][variant];
	frames[n++] = funcs[leaf].addr + bench_xorshift(&rng) % funcs[leaf].size;
	for (uint32_t i = vd; i-- > 0;)
		frames[n++] = variants[chain][variant][i];
	for (uint32_t i = cd; i-- > 0;)
		frames[n++] = chains[chain][i];
	return n;
}

struct result {
	size_t bytes, frames, samples;
	double decode_rate;
};

static int run(uint32_t min_depth, uint32_t max_depth, int threads, size_t stall_len,
	       size_t nsamples, struct result *res)
{
	build_graph(min_depth, max_depth);
	size_t cap = nsamples * 256 + (1 << 20);
	uint8_t *stream = malloc(cap);
	if (!stream)
		return -ENOMEM;
	static struct sw_wire_encoder enc;
	sw_wire_encoder_reset(&enc);
	size_t len = 0;
	uint64_t frames[MAX_DEPTH + 16];
	*res = (struct result){0};
	int chain = 0, variant = 0;
	for (size_t s = 0; s < nsamples; s++) {
		/* a stall of about 40 samples stays in one chain */
		if (s % stall_len == 0)
			chain = (int)(bench_xorshift(&rng) % CHAINS);
		if (stall_len == 1 || bench_xorshift(&rng) % 4 == 0)
			variant = (int)(bench_xorshift(&rng) % VARIANTS);
		uint32_t depth = draw_stack(frames, chain, variant);
		struct sw_wire_msg m = {
		    .type = SW_MSG_SAMPLE,
		    .sample = {.stall_id = s / 40,
			       .time = 5000000000ull + s * 10000000ull,
			       .thread_id = 31337 + (uint64_t)(s % (size_t)threads),
			       .thread_name = "main",
			       .depth = depth,
			       .frames = frames}};
		if (cap - len < SW_WIRE_MAX_MESSAGE / 64)
			break;
		int n = sw_wire_encode(&enc, stream + len, cap - len, &m);
		if (n < 0)
			return n;
		len += (size_t)n;
		res->frames += depth;
		res->samples++;
	}
	res->bytes = len;

	struct sw_wire_decoder *dec;
	if (sw_wire_decoder_new(&dec) < 0)
		return -ENOMEM;
	double best = 0;
	for (int round = 0; round < 5; round++) {
		sw_wire_decoder_reset(dec);
		double t0 = bench_seconds(CLOCK_MONOTONIC);
		size_t pos = 0, decoded = 0;
		struct sw_wire_msg msg;
		struct sw_error err = {0};
		while (pos < len) {
			int n = sw_wire_decode(dec, stream + pos, len - pos, pos, &msg, &err);
			if (n <= 0) {
				fprintf(stderr, "decode failed: %s\n", sw_error_str(&err));
				return -EBADMSG;
			}
			pos += (size_t)n;
			decoded++;
		}
		double rate = (double)decoded / (bench_seconds(CLOCK_MONOTONIC) - t0);
		if (rate > best)
			best = rate;
	}
	res->decode_rate = best;
	sw_wire_decoder_free(dec);
	free(stream);
	return 0;
}

/* Measures a recording made by the agent. */
static int bench_recording(const char *path)
{
	struct sw_recording *rec;
	struct sw_error err = {0};
	if (sw_recording_open(path, &rec, &err) < 0) {
		fprintf(stderr, "bench-wire: cannot read '%s': %s\n", path, sw_error_str(&err));
		return 1;
	}
	/* re-encode every sample into one stream, as the agent sent them */
	size_t cap = 1 << 20, len = 0, samples = 0, frames = 0;
	uint8_t *stream = malloc(cap);
	static struct sw_wire_encoder enc;
	sw_wire_encoder_reset(&enc);
	struct sw_wire_msg msg;
	int r;
	while (stream && (r = sw_recording_next(rec, &msg, &err)) == 1) {
		if (msg.type != SW_MSG_SAMPLE)
			continue;
		if (cap - len < SW_WIRE_MAX_MESSAGE) {
			cap *= 2;
			stream = realloc(stream, cap);
			if (!stream)
				break;
		}
		int n = sw_wire_encode(&enc, stream + len, cap - len, &msg);
		if (n < 0)
			break;
		len += (size_t)n;
		samples++;
		frames += msg.sample.depth;
	}
	sw_recording_free(rec);
	if (!stream || !samples) {
		fprintf(stderr, "bench-wire: no samples in '%s'\n", path);
		return 1;
	}
	struct sw_wire_decoder *dec;
	if (sw_wire_decoder_new(&dec) < 0)
		return 1;
	double best = 0;
	for (int round = 0; round < 20; round++) {
		sw_wire_decoder_reset(dec);
		double t0 = bench_seconds(CLOCK_MONOTONIC);
		size_t pos = 0;
		while (pos < len) {
			int n = sw_wire_decode(dec, stream + pos, len - pos, pos, &msg, &err);
			if (n <= 0)
				return 1;
			pos += (size_t)n;
		}
		double rate = (double)samples / (bench_seconds(CLOCK_MONOTONIC) - t0);
		best = rate > best ? rate : best;
	}
	double bpf = (double)len / (double)frames;
	printf("agent recording: %zu samples, %.1f frames each\n", samples,
	       (double)frames / (double)samples);
	printf("  bytes per frame  %.2f   raw 8.00: %.1fx smaller   target <= 3: %s\n", bpf,
	       8.0 / bpf, bpf <= 3.0 ? "met" : "MISSED");
	printf("  decode           %.2f M samples/s\n", best / 1e6);
	sw_wire_decoder_free(dec);
	free(stream);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return bench_recording(argv[1]);
	if (read_funcs() < 0) {
		fprintf(stderr, "bench-wire: expected 'IMAGE ADDRESS SIZE' lines on stdin\n");
		return 1;
	}
	printf("wire format benchmark: %zu real functions\n", nfuncs);
	struct {
		const char *name;
		uint32_t min, max;
		int threads;
		size_t stall_len;
	} cases[] = {
	    {"40-frame stacks, main thread", 40, 40, 1, 40},
	    {"40-120-frame stacks, main thread", 40, 120, 1, 40},
	    {"40-120-frame stacks, 8 threads", 40, 120, 8, 40},
	    {"40-frame stacks, a new chain every sample (worst case)", 40, 40, 1, 1},
	};
	int failed = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct result r;
		if (run(cases[i].min, cases[i].max, cases[i].threads, cases[i].stall_len, 400000,
			&r) < 0)
			return 1;
		double bpf = (double)r.bytes / (double)r.frames;
		printf("%s: %zu samples, %.1f frames each\n", cases[i].name, r.samples,
		       (double)r.frames / (double)r.samples);
		printf("  bytes per frame  %.2f   raw 8.00: %.1fx smaller   target <= 3: %s\n", bpf,
		       8.0 / bpf, bpf <= 3.0 ? "met" : "MISSED");
		printf("  decode           %.2f M samples/s   target >= 2 M/s: %.2fx %s\n",
		       r.decode_rate / 1e6, r.decode_rate / 2e6,
		       r.decode_rate >= 2e6 ? "met" : "MISSED");
		if (cases[i].stall_len > 1)
			failed |= bpf > 3.0;
	}
	return failed;
}
