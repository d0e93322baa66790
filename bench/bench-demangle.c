/*
 * Benchmark of the Swift demangler: names per second over the Swift corpus
 * (tests/data/demangle/swift-manglings.txt, its mangled names repeated to one
 * million), full and simplified styles, and the peak memory of the process.
 * Times are CPU time of the thread, so other load on the machine matters
 * less.  Figures are printed with their ratio to the target (one million names per
 * second) and to a named baseline: swift-demangle when it is installed, and
 * always libiberty's cplus_demangle over the Itanium corpus, the C demangler
 * most hosts have.
 *
 * usage: bench-demangle CORPORA_DIR [NAMES]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "config.h"
#include "demangle/demangle.h"
#include "bench.h"

#if SW_HAVE_IBERTY
#include <libiberty/demangle.h>
#endif

#define TARGET 1e6

/* VmHWM: the peak RSS of this image alone (ru_maxrss also counts what a
 * parent such as meson's Python had before exec) */
static long vm_hwm_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	char line[256];
	long v = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

struct names {
	char **v;
	size_t n, cap;
};

static void push(struct names *ns, const char *s, size_t len)
{
	if (ns->n == ns->cap) {
		ns->cap = ns->cap ? ns->cap * 2 : 1024;
		ns->v = realloc(ns->v, ns->cap * sizeof(*ns->v));
		if (!ns->v)
			exit(1);
	}
	ns->v[ns->n] = strndup(s, len);
	if (!ns->v[ns->n])
		exit(1);
	ns->n++;
}

/* Reads the names of a corpus: before " ---> " (Swift) or before a tab (Itanium). */
static int load(const char *path, const char *sep, struct names *ns)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	static char line[1 << 16];
	while (fgets(line, sizeof(line), f)) {
		char *end = strstr(line, sep);
		if (!end)
			continue;
		char *s = line;
		while (*s == ' ')
			s++;
		while (end > s && end[-1] == ' ')
			end--;
		push(ns, s, (size_t)(end - s));
	}
	fclose(f);
	return 0;
}

static double run(const struct names *ns, size_t total, unsigned flags, size_t *ret_ok)
{
	struct sw_buf out;
	sw_buf_init(&out, 1 << 20);
	size_t ok = 0;
	double t0 = bench_seconds(CLOCK_THREAD_CPUTIME_ID);
	for (size_t i = 0; i < total; i++) {
		sw_buf_reset(&out);
		if (sw_demangle(ns->v[i % ns->n], flags, &out) > 0)
			ok++;
	}
	double dt = bench_seconds(CLOCK_THREAD_CPUTIME_ID) - t0;
	sw_buf_finish(&out);
	*ret_ok = ok;
	return (double)total / dt;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench-demangle CORPORA_DIR [NAMES]\n");
		return 2;
	}
	size_t total = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000000;
	char path[4096];
	struct names swift = {0}, cxx = {0};
	snprintf(path, sizeof(path), "%s/swift-manglings.txt", argv[1]);
	if (load(path, " ---> ", &swift) < 0 || swift.n == 0) {
		printf("SKIP: no %s\n", path);
		return 77;
	}
	size_t ok;
	double full = run(&swift, total, SW_DEMANGLE_NO_CXX, &ok);
	printf("swift full:       %10.0f names/s (%zu names, %zu distinct, %.0f%% demangled)"
	       "  = %.2fx target\n",
	       full, total, swift.n, 100.0 * ok / total, full / TARGET);
	double simp = run(&swift, total, SW_DEMANGLE_NO_CXX | SW_DEMANGLE_SIMPLIFIED, &ok);
	printf("swift simplified: %10.0f names/s                                        = %.2fx "
	       "target\n",
	       simp, simp / TARGET);

	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("peak memory after the Swift runs: ru_maxrss %ld KiB, VmHWM %ld KiB\n", ru.ru_maxrss,
	       vm_hwm_kib());

	if (system("command -v swift-demangle >/dev/null 2>&1") == 0)
		printf("swift-demangle is installed: compare with `swift-demangle < names`\n");
	else
		printf("swift-demangle: not installed (baseline below is libiberty)\n");

#if SW_HAVE_IBERTY
	snprintf(path, sizeof(path), "%s/itanium-manglings.txt", argv[1]);
	if (load(path, "\t", &cxx) == 0 && cxx.n) {
		size_t n = total < cxx.n * 4 ? total : cxx.n * 4;
		double t0 = bench_seconds(CLOCK_THREAD_CPUTIME_ID);
		size_t good = 0;
		for (size_t i = 0; i < n; i++) {
			char *r = cplus_demangle(cxx.v[i % cxx.n], DMGL_PARAMS | DMGL_ANSI);
			good += r != NULL;
			free(r);
		}
		double lib = (double)n / (bench_seconds(CLOCK_THREAD_CPUTIME_ID) - t0);
		printf("libiberty cplus_demangle (itanium corpus): %10.0f names/s (%zu names, "
		       "%.0f%% demangled)\n",
		       lib, n, 100.0 * (double)good / (double)n);
		printf("ratio swift full / libiberty: %.2fx\n", full / lib);
	}
#endif
	getrusage(RUSAGE_SELF, &ru);
	printf("peak memory at the end, Itanium corpus loaded: ru_maxrss %ld KiB, VmHWM %ld KiB\n",
	       ru.ru_maxrss, vm_hwm_kib());
	return 0;
}
