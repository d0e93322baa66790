/*
 * Our Swift demangler against the Swift toolchain's own, in one process on
 * the same names: libswiftDemangle is loaded with dlopen and called through
 * its C entry points (swift_demangle_getDemangledName and
 * swift_demangle_getSimplifiedDemangledName), ours through sw_demangle().
 * Each side demangles every name of the file, full and simplified, in
 * passes taken in turn; the figures are names per second of thread CPU time
 * (best pass of each side) and our speed as a multiple of the toolchain's
 * (the baseline).  The outputs are also counted equal or
 * not, so a fast wrong answer shows.  The exit status judges the ratio
 * (goal 3x); 1M names/s is printed beside it, a target of the machine it
 * was set on, as names per second depend on the machine.
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
#define TARGET 1e6

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

static char outbuf[1 << 16];

/* Seconds of thread CPU time for one side to demangle every name once. */
static double pass(const struct names *ns, swift_fn theirs, unsigned flags, struct sw_buf *out)
{
	double t0 = bench_seconds(CLOCK_THREAD_CPUTIME_ID);
	for (size_t i = 0; i < ns->n; i++) {
		if (theirs) {
			theirs(ns->v[i], outbuf, sizeof(outbuf));
		} else {
			sw_buf_reset(out);
			sw_demangle(ns->v[i], flags, out);
		}
	}
	return bench_seconds(CLOCK_THREAD_CPUTIME_ID) - t0;
}

/*
 * Names per second of each side, from the best of PASSES passes taken in
 * turn, so that load from the rest of the machine (a shared core, a lower
 * clock) falls on both sides alike and a disturbed pass is dropped.
 */
static void rates(const struct names *ns, swift_fn theirs, unsigned flags, double *ret_ours,
		  double *ret_theirs)
{
	struct sw_buf out;
	sw_buf_init(&out, 1 << 20);
	double best_ours = 1e30, best_theirs = 1e30;
	for (int i = 0; i < PASSES; i++) {
		double t = pass(ns, NULL, flags, &out);
		if (t < best_ours)
			best_ours = t;
		t = pass(ns, theirs, flags, &out);
		if (t < best_theirs)
			best_theirs = t;
	}
	sw_buf_finish(&out);
	*ret_ours = (double)ns->n / best_ours;
	*ret_theirs = (double)ns->n / best_theirs;
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
		size_t n = theirs(ns->v[i], outbuf, sizeof(outbuf));
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
		       "ratio %.2fx the baseline (goal 3x)  %.2fx the target of 1M names/s  "
		       "identical output %zu/%zu\n",
		       style, ours, theirs, ours / theirs, ours / TARGET, same, ns.n);
		if (ours < 3 * theirs)
			status = 1;
	}
	return status;
}
