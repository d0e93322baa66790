/*
 * Our Swift demangler against the Swift toolchain's own, in one process on
 * the same names: libswiftDemangle is loaded with dlopen and called through
 * its C entry points (swift_demangle_getDemangledName and
 * swift_demangle_getSimplifiedDemangledName), ours through sw_demangle().
 * Each side demangles every name of the file, full and simplified, chunk
 * by chunk in turn (rates() says how); the figures are names per second of
 * thread CPU time and our speed as a multiple of the toolchain's (the
 * baseline).  The outputs are also counted equal or not, so a fast wrong
 * answer shows.  The exit status judges the ratio (GOAL, 2x); 1M names/s
 * is printed beside it, a target of the machine it was set on, as names per
 * second depend on the machine.
 *
 * usage: bench-demangle-toolchain NAMES_FILE LIBSWIFTDEMANGLE
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "demangle/demangle.h"
#include "bench.h"

#define PASSES 15
#define CHUNK  2048
#define TARGET 1e6
#define GOAL   2.0

typedef size_t (*swift_fn)(const char *, char *, size_t);

struct names {
	char **v;
	size_t n;
};

static int read_names(const char *path, struct names *ns)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t cap = 0;
	char *line = NULL;
	size_t lcap = 0;
	ssize_t len;
	while ((len = getline(&line, &lcap, f)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = 0;
		if (!len)
			continue;
		if (ns->n == cap) {
			cap = cap ? cap * 2 : 65536;
			ns->v = realloc(ns->v, cap * sizeof(*ns->v));
			if (!ns->v)
				exit(1);
		}
		ns->v[ns->n++] = strdup(line);
	}
	free(line);
	fclose(f);
	return 0;
}

/*
 * The toolchain's entry points copy their answer with strncpy(), which pads
 * the rest of the buffer with zeros, so the baseline's cost grows with the
 * buffer it is given.  It gets what a caller would give it: a buffer a
 * little longer than most answers, and a bigger one only when the answer
 * did not fit (the call returns the length it needed).
 */
#define OUT_SMALL 1024
static char outbuf[1 << 16];

static size_t call_theirs(swift_fn theirs, const char *name)
{
	size_t n = theirs(name, outbuf, OUT_SMALL);
	if (n >= OUT_SMALL)
		n = theirs(name, outbuf, n < sizeof(outbuf) ? n + 1 : sizeof(outbuf));
	return n;
}

/* Seconds of thread CPU time for one side to demangle names [from, to). */
static double run_side(const struct names *ns, size_t from, size_t to, swift_fn theirs,
		       unsigned flags, struct sw_buf *out)
{
	double t0 = bench_seconds(CLOCK_THREAD_CPUTIME_ID);
	for (size_t i = from; i < to; i++) {
		if (theirs) {
			call_theirs(theirs, ns->v[i]);
		} else {
			sw_buf_reset(out);
			sw_demangle(ns->v[i], flags, out);
		}
	}
	return bench_seconds(CLOCK_THREAD_CPUTIME_ID) - t0;
}

/*
 * Names per second of each side.  The names are cut in chunks of CHUNK
 * (a few milliseconds each); every pass runs each chunk on one side then
 * on the other, and each side's time for a chunk is its best over PASSES
 * passes.  A disturbance (a shared core, a lower clock, a neighbour's
 * cache traffic) lasts longer than a chunk far less often than it lasts
 * longer than a whole pass, and it falls on both sides alike.
 */
static void rates(const struct names *ns, swift_fn theirs, unsigned flags, double *ret_ours,
		  double *ret_theirs)
{
	size_t nchunks = (ns->n + CHUNK - 1) / CHUNK;
	double *best = malloc(2 * nchunks * sizeof(*best));
	if (!best)
		exit(1);
	for (size_t c = 0; c < 2 * nchunks; c++)
		best[c] = 1e30;
	struct sw_buf out;
	sw_buf_init(&out, 1 << 20);
	for (int i = 0; i < PASSES; i++) {
		for (size_t c = 0; c < nchunks; c++) {
			size_t from = c * CHUNK, to = from + CHUNK < ns->n ? from + CHUNK : ns->n;
			double t = run_side(ns, from, to, NULL, flags, &out);
			if (t < best[2 * c])
				best[2 * c] = t;
			t = run_side(ns, from, to, theirs, flags, &out);
			if (t < best[2 * c + 1])
				best[2 * c + 1] = t;
		}
	}
	sw_buf_finish(&out);
	double ours = 0, them = 0;
	for (size_t c = 0; c < nchunks; c++) {
		ours += best[2 * c];
		them += best[2 * c + 1];
	}
	free(best);
	*ret_ours = (double)ns->n / ours;
	*ret_theirs = (double)ns->n / them;
}

/* How many names both demangle to the same text (unknown names: both unchanged). */
static size_t agreeing(const struct names *ns, swift_fn theirs, unsigned flags)
{
	struct sw_buf out;
	sw_buf_init(&out, 1 << 20);
	size_t same = 0;
	for (size_t i = 0; i < ns->n; i++) {
		sw_buf_reset(&out);
		int r = sw_demangle(ns->v[i], flags, &out);
		size_t n = call_theirs(theirs, ns->v[i]);
		const char *ours = r > 0 ? (const char *)out.data : ns->v[i];
		size_t olen = r > 0 ? out.len : strlen(ns->v[i]);
		if (n == 0)
			same += r <= 0;
		else
			same += n < sizeof(outbuf) && n == olen && memcmp(outbuf, ours, n) == 0;
	}
	sw_buf_finish(&out);
	return same;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: bench-demangle-toolchain NAMES_FILE LIBSWIFTDEMANGLE\n");
		return 2;
	}
	struct names ns = {0};
	if (read_names(argv[1], &ns) < 0 || ns.n == 0) {
		fprintf(stderr, "bench-demangle-toolchain: cannot read names from '%s'\n", argv[1]);
		return 1;
	}
	void *lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
	swift_fn full = NULL, simp = NULL;
	if (lib) { /* POSIX's way from dlsym's object pointer to a function's */
		*(void **)&full = dlsym(lib, "swift_demangle_getDemangledName");
		*(void **)&simp = dlsym(lib, "swift_demangle_getSimplifiedDemangledName");
	}
	if (!full || !simp) {
		fprintf(stderr, "bench-demangle-toolchain: cannot load '%s': %s\n", argv[2],
			dlerror());
		return 1;
	}
	printf("%zu distinct Swift names; baseline: the toolchain's libswiftDemangle (%s)\n", ns.n,
	       argv[2]);
	int status = 0;
	for (int s = 0; s < 2; s++) {
		const char *style = s ? "simplified" : "full";
		unsigned flags = s ? SW_DEMANGLE_SIMPLIFIED : 0;
		double ours, theirs;
		rates(&ns, s ? simp : full, flags, &ours, &theirs);
		size_t same = agreeing(&ns, s ? simp : full, flags);
		printf("%-10s  stallwatch %9.0f names/s  libswiftDemangle %9.0f names/s  "
		       "ratio %.2fx the baseline (goal %.0fx)  %.2fx the target of 1M names/s  "
		       "identical output %zu/%zu\n",
		       style, ours, theirs, ours / theirs, GOAL, ours / TARGET, same, ns.n);
		if (ours < GOAL * theirs)
			status = 1;
	}
	return status;
}
