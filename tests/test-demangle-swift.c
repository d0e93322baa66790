/*
 * Tests of the demanglers against the peer suites vendored in
 * tests/data/demangle: Swift's own demangler cases (full, simplified, with
 * Clang types) and LLVM's Itanium cases, each line "mangled ---> demangled"
 * or "mangled<TAB>demangled".  The expected outputs come from Swift's and
 * LLVM's test files, not from this code.  Prints every failing line, how
 * many cases ran and the pass rates; fails when a list ran fewer cases than
 * it holds (a truncated or missing file) or when a rate falls below 99% for
 * the current Swift mangling, 90% for all Swift lines and 98% for Itanium.
 * Also unit checks of the text filter and of hostile input (deep nesting,
 * huge counts, substitutions out of range).
 *
 * usage: test-demangle-swift CORPUS_DIR [-v]
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "demangle/demangle.h"
#include "test.h"

/* The cases each vendored list holds (tests/data/demangle/README.md). */
enum {
	SWIFT_CASES = 495,
	SWIFT_SIMPLIFIED_CASES = 216,
	SWIFT_CLANG_TYPE_CASES = 2,
	ITANIUM_CASES = 29740,
};

static bool verbose;

struct rate {
	unsigned total, pass;
};

static double pct(struct rate r)
{
	return r.total ? 100.0 * r.pass / r.total : 100.0;
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = 0;
	return s;
}

static bool current_mangling(const char *s)
{
	return strncmp(s, "$s", 2) == 0 || strncmp(s, "$S", 2) == 0 || strncmp(s, "_$s", 3) == 0 ||
	       strncmp(s, "_$S", 3) == 0;
}

/* Runs one "mangled ---> expected" file; returns false if it is missing. */
static bool run_swift(const char *path, unsigned flags, struct rate *all, struct rate *current)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	char line[8192];
	struct sw_buf out;
	sw_buf_init(&out, 1 << 20);
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " ---> ");
		if (!sep)
			continue;
		*sep = 0;
		char *name = trim(line);
		char *want = trim(sep + 6);
		/* "{T:...,C} " is swift-demangle -classify's annotation, not the name */
		if (want[0] == '{') {
			char *close = strstr(want, "} ");
			if (close)
				want = close + 2;
		}
		sw_buf_reset(&out);
		int r = sw_demangle(name, flags | SW_DEMANGLE_NO_CXX, &out);
		const char *got = r > 0 ? sw_buf_str(&out) : name;
		bool ok = r >= 0 && strcmp(got, want) == 0;
		all->total++;
		all->pass += ok;
		if (current && current_mangling(name)) {
			current->total++;
			current->pass += ok;
		}
		if (!ok)
			printf("FAIL%s %s\n  want: %.400s\n  got:  %.400s\n",
			       flags & SW_DEMANGLE_SIMPLIFIED ? " (simplified)" : "", name, want,
			       r < 0 ? "(error)" : got);
	}
	fclose(f);
	sw_buf_finish(&out);
	return true;
}

static bool run_itanium(const char *path, struct rate *rate)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	static char line[1 << 16];
	struct sw_buf out;
	sw_buf_init(&out, 1 << 20);
	while (fgets(line, sizeof(line), f)) {
		char *tab = strchr(line, '\t');
		if (!tab)
			continue;
		*tab = 0;
		char *want = trim(tab + 1);
		sw_buf_reset(&out);
		int r = sw_demangle(line, SW_DEMANGLE_NO_SWIFT, &out);
		const char *got = r > 0 ? sw_buf_str(&out) : line;
		bool ok = strcmp(got, want) == 0;
		rate->total++;
		rate->pass += ok;
		if (!ok && verbose)
			printf("FAIL (c++) %s\n  want: %s\n  got:  %s\n", line, want, got);
	}
	fclose(f);
	sw_buf_finish(&out);
	return true;
}

static void check_filter(void)
{
	struct sw_buf out;
	sw_buf_init(&out, 1 << 20);
	const char *in = "at $s4main3fooyyF+12 and _$s4main3fooyyF. also _Z1Av, $sum $ not\n";
	int r = sw_demangle_filter(in, strlen(in), 0, &out);
#if SW_HAVE_IBERTY
	CHECK_INT(r, 3);
	CHECK_STR(sw_buf_str(&out),
		  "at main.foo() -> ()+12 and main.foo() -> (). also A(), $sum $ not\n");
#else
	CHECK_INT(r, 2);
#endif
	sw_buf_reset(&out);
	r = sw_demangle_filter(in, strlen(in), SW_DEMANGLE_SIMPLIFIED | SW_DEMANGLE_NO_CXX, &out);
	CHECK_INT(r, 2);
	CHECK_STR(sw_buf_str(&out), "at foo()+12 and foo(). also _Z1Av, $sum $ not\n");
	/* plain text passes through untouched */
	sw_buf_reset(&out);
	r = sw_demangle_filter("hello world", 11, 0, &out);
	CHECK_INT(r, 0);
	CHECK_STR(sw_buf_str(&out), "hello world");
	/* a name that is not mangled leaves the buffer untouched */
	sw_buf_reset(&out);
	CHECK_INT(sw_demangle("main", 0, &out), 0);
	CHECK_INT((int)out.len, 0);
	/* function types with their Clang type (swift-manglings-with-clang-types.txt) */
	sw_buf_reset(&out);
	CHECK_INT(sw_demangle("$s3tmp1fyySiyXzC9_ZTSPFmvEF", 0, &out), 1);
	CHECK_STR(sw_buf_str(&out),
		  "tmp.f(@convention(c, mangledCType: \"_ZTSPFmvE\") () -> Swift.Int) -> ()");
	sw_buf_reset(&out);
	/* Mach-O's extra underscore */
	CHECK_INT(sw_demangle("_$s4main3fooyyF", 0, &out), 1);
	CHECK_STR(sw_buf_str(&out), "main.foo() -> ()");
	sw_buf_finish(&out);
}

/*
 * A PLT entry's name as objdump and symbolizers write it, and a Mach-O
 * stub's as we do: the name demangled, the suffix kept (as c++filt does).
 */
static void check_stub_suffixes(void)
{
	static const struct {
		const char *in, *out;
		unsigned flags;
	} cases[] = {
	    {"_Z3foov@plt", "foo()@plt", 0},
	    {"_Z3foov stub", "foo() stub", 0},
	    {"$ss16IndexingIteratorV4next7ElementQzSgyFSnySiG_Tg5@plt",
	     "generic specialization <Swift.Range<Swift.Int>> of Swift.IndexingIterator.next() -> "
	     "A.Element?@plt",
	     0},
	    {"$ss16IndexingIteratorV4next7ElementQzSgyFSnySiG_Tg5@plt",
	     "specialized IndexingIterator.next()@plt", SW_DEMANGLE_SIMPLIFIED},
	};
	struct sw_buf out = {0};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sw_buf_reset(&out);
		CHECK_INT(sw_demangle(cases[i].in, cases[i].flags, &out), 1);
		CHECK_STR(sw_buf_str(&out), cases[i].out);
	}
	/* a plain name with the suffix is left alone, and so is the suffix alone */
	sw_buf_reset(&out);
	CHECK_INT(sw_demangle("puts@plt", 0, &out), 0);
	CHECK_INT(sw_demangle("@plt", 0, &out), 0);
	CHECK_INT((int)out.len, 0);
	sw_buf_finish(&out);
}

static void check_hostile(void)
{
	struct sw_buf out;
	sw_buf_init(&out, 1 << 16);
	size_t n = 200000;
	char *s = malloc(n + 16);
	/* deep nesting: optional of optional of ... */
	memset(s, 0, n + 16);
	strcpy(s, "$sSi");
	for (size_t i = 4; i + 2 < n; i += 2)
		memcpy(s + i, "Sg", 2);
	int r = sw_demangle(s, 0, &out);
	CHECK(r <= 1);
	/* nested tuples */
	memset(s, 0, n + 16);
	strcpy(s, "$s");
	for (size_t i = 2; i + 2 < n; i += 2)
		memcpy(s + i, i % 4 ? "yt" : "_t", 2);
	r = sw_demangle(s, 0, &out);
	CHECK(r <= 1);
	/* bound generic types built from substitutions of the previous one: the
	 * text doubles at each level, so it must hit the per-name cap, fast */
	size_t len = (size_t)sprintf(s, "$s1a1bVyACACG");
	for (int i = 0; i < 23; i++) /* substitutions AD to AZ */
		len += (size_t)sprintf(s + len, "ACyA%cA%cG", 'D' + i, 'D' + i);
	strcpy(s + len, "D");
	sw_buf_reset(&out);
	struct sw_buf big;
	sw_buf_init(&big, 0); /* no ceiling of the caller's: the demangler's own applies */
	r = sw_demangle(s, 0, &big);
	CHECK_INT(r, 0);
	CHECK_INT((int)big.len, 0);
	sw_buf_finish(&big);
	/* a few levels of the same are a valid name */
	strcpy(s, "$s1a1bVyACACGACyADADGD");
	r = sw_demangle(s, 0, &out);
	CHECK_INT(r, 1);
	/* huge repetition counts and word / substitution indexes out of range */
	const char *bad[] = {
	    "$sS999999999999i",
	    "$sS4294967297i",
	    "$sA99999999999_",
	    "$sAz",
	    "$sAZ",
	    "$s0zA",
	    "$s3abc0Z",
	    "$sBi99999999_",
	    "$sBv4294967296_Bp",
	    "$sxq999999999999999999_",
	    "$s99999999999999999999a",
	    "$s1aL999999999999999_",
	    "$s2hiTf4pi99999999999999999999_n",
	    "$s00_",
	    "_TtGSqGSqGSqGSqGSq",
	    "_TtBv99999999999999Bp",
	    "_TtS99999999999999_",
	    "$sSiSgAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sw_buf_reset(&out);
		r = sw_demangle(bad[i], 0, &out);
		CHECK(r <= 1);
		if (r == 0)
			CHECK_INT((int)out.len, 0);
	}
	/* the same substitution repeated far too often must hit a ceiling */
	sprintf(s, "$sSi");
	len = 4;
	for (int i = 0; i < 2000; i++)
		len += (size_t)sprintf(s + len, "AA");
	r = sw_demangle(s, 0, &out);
	CHECK(r <= 1);
	free(s);
	sw_buf_finish(&out);
}

/*
 * A byte below 0x20 anywhere in a name refuses it (symbolic references),
 * whichever of the scan's eight-byte words it falls in, and the bytes from
 * 0x20 up do not.
 */
static void check_control_bytes(void)
{
	/* a case of Swift's swift-manglings.txt */
	const char *name = "$s3red4testyAA3ResOyxSayq_GAEs5ErrorAAq_sAFHD1__HCg_GADyxq_GsAFR_r0_lF";
	const char *want = "red.test<A, B where B: Swift.Error>(red.Res<A, B>) -> red.Res<A, [B]>";
	size_t len = strlen(name);
	struct sw_buf out;
	sw_buf_init(&out, 1 << 16);
	CHECK_INT(sw_demangle_n(name, len, 0, &out), 1);
	CHECK(out.len == strlen(want) && memcmp(out.data, want, out.len) == 0);
	char s[128];
	const unsigned char bad[] = {0x00, 0x01, 0x09, 0x0a, 0x17, 0x1f};
	for (size_t i = 0; i < len; i++) {
		for (size_t b = 0; b < sizeof(bad); b++) {
			memcpy(s, name, len);
			s[i] = (char)bad[b];
			sw_buf_reset(&out);
			int r = sw_demangle_n(s, len, 0, &out);
			if (r != 0)
				fprintf(stderr, "byte 0x%02x at %zu: %d\n", bad[b], i, r);
			CHECK_INT(r, 0);
		}
	}
	/* the same name, demangled from every offset of a buffer: the words fall
	 * differently, and the bytes around it (0x20 and up) are not read */
	for (size_t off = 0; off < 8; off++) {
		memset(s, 0x7f, sizeof(s));
		memcpy(s + off, name, len);
		sw_buf_reset(&out);
		CHECK_INT(sw_demangle_n(s + off, len, 0, &out), 1);
		CHECK(out.len == strlen(want) && memcmp(out.data, want, out.len) == 0);
	}
	sw_buf_finish(&out);
}

/* Runs one Swift list of DIR; a missing list is a failure, not a skip. */
static void swift_list(const char *dir, const char *file, unsigned flags, struct rate *all,
		       struct rate *current)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	bool read = run_swift(path, flags, all, current);
	if (!read)
		fprintf(stderr, "cannot read '%s'\n", path);
	CHECK(read);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test-demangle-swift CORPUS_DIR [-v]\n");
		return 2;
	}
	verbose = argc > 2 && strcmp(argv[2], "-v") == 0;
	const char *dir = argv[1];

	struct rate all = {0}, current = {0}, simp = {0}, clang = {0}, cxx = {0};
	swift_list(dir, "swift-manglings.txt", 0, &all, &current);
	swift_list(dir, "swift-simplified-manglings.txt", SW_DEMANGLE_SIMPLIFIED, &simp, NULL);
	swift_list(dir, "swift-manglings-with-clang-types.txt", 0, &clang, NULL);
	char path[4096];
	snprintf(path, sizeof(path), "%s/itanium-manglings.txt", dir);
	bool have_cxx = SW_HAVE_IBERTY && run_itanium(path, &cxx);
	if (SW_HAVE_IBERTY && !have_cxx)
		fprintf(stderr, "cannot read '%s'\n", path);
	CHECK(have_cxx == SW_HAVE_IBERTY);

	printf("swift current mangling ($s/$S/_$s/_$S): %u/%u exact (%.2f%%)\n", current.pass,
	       current.total, pct(current));
	printf("swift: ran %u cases, %u exact (%.2f%%)\n", all.total, all.pass, pct(all));
	printf("swift simplified: ran %u cases, %u exact (%.2f%%)\n", simp.total, simp.pass,
	       pct(simp));
	printf("swift with clang types: ran %u cases, %u exact\n", clang.total, clang.pass);
	if (have_cxx)
		printf("itanium (libiberty): ran %u cases, %u exact (%.2f%%)\n", cxx.total,
		       cxx.pass, pct(cxx));
	else
		printf("itanium: not run (built without libiberty)\n");
	CHECK(all.total >= SWIFT_CASES);
	CHECK(simp.total >= SWIFT_SIMPLIFIED_CASES);
	CHECK(clang.total >= SWIFT_CLANG_TYPE_CASES);
	CHECK(clang.pass == clang.total);
	CHECK(pct(current) >= 99.0);
	CHECK(pct(all) >= 90.0);
	CHECK(pct(simp) >= 90.0);
	if (have_cxx) {
		CHECK(cxx.total >= ITANIUM_CASES);
		CHECK(pct(cxx) >= 98.0);
	}

	check_filter();
	check_stub_suffixes();
	check_hostile();
	check_control_bytes();
	return sw_test_end();
}
