/*
 * Tests of the range table (lib/symbols/symbolicate-table.c): on real
 * binaries built here (C and C++ at -O2 with inlined calls and .cold
 * clones, its stripped copy, this test's own executable, and a Mach-O
 * binary with its dSYM), a symbolicator that answers from the table must
 * answer every address of the text and around it exactly as one that reads
 * the symbols and DWARF (no cache folder), with inlined calls and without,
 * demangled and not.  A stripped copy of a binary (same build-id) gets a
 * table of its own, and a small binary gets its table from a run that read
 * one of its units.  A table cut anywhere is ignored, one with bytes
 * changed never crashes a lookup (the sanitizers watch), and one written
 * for another binary is ignored.
 *
 * usage: test-symbolicate-table SOURCE_ROOT MACHO_FIXTURES
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbols/symbolicate.h"
#include "test.h"

static char workdir[64];

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* Every frame of an answer as one line, to compare. */
static void describe(const struct sw_frame *f, int n, char *out, size_t cap)
{
	size_t len = 0;
	out[0] = '\0';
	for (int i = 0; i < n && len < cap; i++) {
		int k = snprintf(out + len, cap - len, "%s|%s|%u|%u|%x|%" PRIx64 "|%" PRIx64 ";",
				 f[i].function ? f[i].function : "-", f[i].file ? f[i].file : "-",
				 f[i].line, f[i].column, f[i].flags, f[i].symbol_addr, f[i].offset);
		len += k > 0 ? (size_t)k : 0;
	}
}

static struct sw_symbolicator *symbolicator(unsigned flags, const char *cache)
{
	struct sw_symbolicator *s = NULL;
	if (sw_symbolicator_new(flags, &s) < 0)
		return NULL;
	sw_symbolicator_set_cache_dir(s, cache);
	return s;
}

/*
 * Writes the image's index, symbol cache and range table into cache: a
 * large batch over the whole text reads every unit first, as a first run
 * of `stallwatch symbolicate` does; with one, a single address, which
 * leaves the rest of a small DWARF for the table to read.
 */
static bool write_table(const struct sw_image_ref *ref, const char *cache, bool one)
{
	struct sw_symbolicator *s = symbolicator(SW_SYMBOLICATE_TABLES, cache);
	const struct sw_object *obj;
	if (!s || sw_symbolicator_image(s, ref, &obj, NULL) < 0)
		return false;
	size_t n = one ? 1 : obj->text_size / 4 + 1;
	uint64_t *addrs = malloc(n * sizeof(*addrs));
	struct sw_symbolicate_batch batch = {0};
	size_t done;
	for (size_t i = 0; addrs && i < n; i++)
		addrs[i] = obj->text_vmaddr + 4 * i;
	if (addrs)
		sw_symbolicate_file_addrs(s, ref, addrs, n, &batch, &done, NULL);
	sw_symbolicate_batch_finish(&batch);
	free(addrs);
	sw_symbolicator_save_indexes(s);
	sw_symbolicator_free(s);
	return true;
}

/* The addresses compared: every byte of the text and 256 on each side, and the far ends. */
static size_t probe_addrs(const struct sw_object *obj, uint64_t **ret)
{
	size_t span = obj->text_size + 512, n = 0;
	if (span > 600000)
		span = 600000; /* the start of a large text */
	uint64_t *v = malloc((span + 8) * sizeof(*v));
	if (!v)
		return 0;
	uint64_t from = obj->text_vmaddr >= 256 ? obj->text_vmaddr - 256 : 0;
	for (size_t i = 0; i < span; i++)
		v[n++] = from + i;
	uint64_t far[] = {0,
			  1,
			  obj->text_vmaddr + obj->text_size + 4096,
			  UINT64_C(1) << 32,
			  obj->text_vmaddr + (UINT64_C(1) << 33),
			  UINT64_MAX - 1,
			  UINT64_MAX};
	for (size_t i = 0; i < sizeof(far) / sizeof(far[0]); i++)
		v[n++] = far[i];
	*ret = v;
	return n;
}

/*
 * How many of addrs the table answers otherwise than the files do, for
 * symbolicators with these flags; prints the first few.
 */
static size_t compare(const char *label, const struct sw_image_ref *ref, const char *cache,
		      unsigned flags, const uint64_t *addrs, size_t n)
{
	struct sw_symbolicator *table = symbolicator(flags, cache),
			       *files = symbolicator(flags, NULL);
	size_t bad = 0;
	CHECK(table && files);
	if (!table || !files)
		return 1;
	CHECK(sw_symbolicator_table(table, ref, NULL) != NULL);
	struct sw_frame a[SW_SYMBOLICATE_MAX_FRAMES], b[SW_SYMBOLICATE_MAX_FRAMES];
	static char da[16384], db[16384];
	for (size_t i = 0; i < n; i++) {
		int na = sw_symbolicate_file_addr(table, ref, addrs[i], a,
						  SW_SYMBOLICATE_MAX_FRAMES, NULL);
		int nb = sw_symbolicate_file_addr(files, ref, addrs[i], b,
						  SW_SYMBOLICATE_MAX_FRAMES, NULL);
		describe(a, na, da, sizeof(da));
		describe(b, nb, db, sizeof(db));
		if (na == nb && strcmp(da, db) == 0)
			continue;
		if (bad++ < 5)
			fprintf(stderr, "%s (flags %x) 0x%" PRIx64 ":\n  table %s\n  files %s\n",
				label, flags, addrs[i], da, db);
	}
	sw_symbolicator_free(table);
	sw_symbolicator_free(files);
	return bad;
}

/* The one file in cache/stallwatch/ranges, or "" when there is none or several. */
static void table_file(const char *cache, char *out, size_t cap)
{
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/ranges", cache);
	out[0] = '\0';
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] != '.' && strstr(e->d_name, ".swr")) {
			snprintf(out, cap, "%s/%s", dir, e->d_name);
			found++;
		}
	}
	if (d)
		closedir(d);
	if (found != 1)
		out[0] = '\0';
}

/* The cache folder of the image with this label. */
static void cache_of(const char *label, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s/cache-", workdir);
	for (const char *p = label; *p && n + 2 < (int)cap; p++)
		out[n++] = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ? *p : '_';
	out[n] = '\0';
}

static void check_image(const char *label, const struct sw_image_ref *ref, bool one)
{
	char cache[512];
	cache_of(label, cache, sizeof(cache));
	CHECK(write_table(ref, cache, one));
	struct sw_symbolicator *s = symbolicator(0, NULL);
	const struct sw_object *obj = NULL;
	bool opened = s && sw_symbolicator_image(s, ref, &obj, NULL) >= 0;
	CHECK(opened);
	uint64_t *addrs = NULL;
	size_t n = opened ? probe_addrs(obj, &addrs) : 0;
	sw_symbolicator_free(s);
	CHECK(n > 0);
	if (n == 0)
		return;
	unsigned flag_sets[] = {SW_SYMBOLICATE_NO_DEMANGLE, 0, SW_SYMBOLICATE_NO_INLINES,
				SW_SYMBOLICATE_NO_INLINES | SW_SYMBOLICATE_NO_DEMANGLE};
	size_t bad = 0;
	for (size_t i = 0; i < sizeof(flag_sets) / sizeof(flag_sets[0]); i++)
		bad += compare(label, ref, cache, flag_sets[i], addrs, n);
	CHECK_INT(bad, 0);
	printf("%-28s %zu addresses, 4 ways: %zu differ\n", label, n, bad);
	free(addrs);
}

/* Reads the whole file at path into *ret: its size, or 0. */
static size_t slurp(const char *path, uint8_t **ret)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *data = size > 0 ? malloc((size_t)size) : NULL;
	size_t got = data ? fread(data, 1, (size_t)size, f) : 0;
	fclose(f);
	if (got != (size_t)size) {
		free(data);
		return 0;
	}
	*ret = data;
	return got;
}

static void spit(const char *path, const uint8_t *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	if (f) {
		CHECK_INT(fwrite(data, 1, n, f), n);
		fclose(f);
	}
}

/* Lookups of addresses all over the text through a table that may be damaged. */
static bool looks_up(const struct sw_image_ref *ref, const char *cache, uint64_t lo, uint64_t size,
		     bool *used)
{
	struct sw_symbolicator *s = symbolicator(0, cache);
	if (!s)
		return false;
	*used = sw_symbolicator_table(s, ref, NULL) != NULL;
	struct sw_frame fr[SW_SYMBOLICATE_MAX_FRAMES];
	bool ok = true;
	for (uint64_t a = lo > 64 ? lo - 64 : 0; a < lo + size + 64; a += 7) {
		int n = sw_symbolicate_file_addr(s, ref, a, fr, SW_SYMBOLICATE_MAX_FRAMES, NULL);
		ok &= n >= 1 && n <= SW_SYMBOLICATE_MAX_FRAMES;
		for (int i = 0; i < n; i++) {
			/* every string the table gives must be readable to its end */
			ok &= !fr[i].function || strlen(fr[i].function) < (1u << 24);
			ok &= !fr[i].file || strlen(fr[i].file) < (1u << 24);
		}
	}
	sw_symbolicator_free(s);
	return ok;
}

static void check_damage(const struct sw_image_ref *ref, const char *label)
{
	char cache[512], path[1024];
	cache_of(label, cache, sizeof(cache));
	table_file(cache, path, sizeof(path));
	CHECK(path[0] != '\0');
	uint8_t *good = NULL;
	size_t size = path[0] ? slurp(path, &good) : 0;
	CHECK(size > 0);
	struct sw_symbolicator *s = symbolicator(0, NULL);
	const struct sw_object *obj = NULL;
	bool opened = s && sw_symbolicator_image(s, ref, &obj, NULL) >= 0;
	CHECK(opened);
	uint64_t lo = opened ? obj->text_vmaddr : 0;
	uint64_t text = !opened ? 0 : obj->text_size < 20000 ? obj->text_size : 20000;
	sw_symbolicator_free(s);
	bool used;
	/* cut anywhere: never taken */
	size_t cuts = 0, taken = 0;
	for (size_t len = 0; size && len < size; len += len < 512 ? 13 : size / 37 + 1) {
		spit(path, good, len);
		CHECK(looks_up(ref, cache, lo, text, &used));
		cuts++;
		taken += used;
	}
	CHECK_INT(taken, 0);
	/* a byte changed: taken or not, no lookup crashes */
	srand(7);
	size_t changed = 0, still = 0;
	uint8_t *bad = size ? malloc(size) : NULL;
	for (int i = 0; bad && i < 200; i++) {
		memcpy(bad, good, size);
		size_t at =
		    i < 100 ? (size_t)rand() % (size < 512 ? size : 512) : (size_t)rand() % size;
		bad[at] ^= (uint8_t)(1 + rand() % 255);
		spit(path, bad, size);
		CHECK(looks_up(ref, cache, lo, text, &used));
		changed++;
		still += used;
	}
	free(bad);
	/* the whole file back: taken again */
	if (size) {
		spit(path, good, size);
		CHECK(looks_up(ref, cache, lo, text, &used));
		CHECK(used);
	}
	printf("%-28s %zu bytes: %zu cuts ignored, %zu of %zu changed copies still taken\n", label,
	       size, cuts, still, changed);
	free(good);
}

/* A table written for one binary, put where another's goes: ignored. */
static void check_other_key(const struct sw_image_ref *a, const char *la,
			    const struct sw_image_ref *b, const char *lb)
{
	char ca[512], cb[512], pa[1024], pb[1024];
	cache_of(la, ca, sizeof(ca));
	cache_of(lb, cb, sizeof(cb));
	table_file(ca, pa, sizeof(pa));
	table_file(cb, pb, sizeof(pb));
	CHECK(pa[0] && pb[0]);
	CHECK(strcmp(strrchr(pa, '/'), strrchr(pb, '/')) != 0);
	if (!pa[0] || !pb[0])
		return;
	CHECK_INT(sh("cp '%s' '%s'", pa, pb), 0);
	struct sw_symbolicator *s = symbolicator(0, cb);
	CHECK(s && sw_symbolicator_table(s, b, NULL) == NULL);
	sw_symbolicator_free(s);
	(void)a;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: test-symbolicate-table SOURCE_ROOT MACHO_FIXTURES\n");
		return 2;
	}
	const char *src = argv[1], *macho = argv[2];
	snprintf(workdir, sizeof(workdir), "/tmp/sw-table-XXXXXX");
	if (!mkdtemp(workdir))
		return 1;
	char cxx[256], stripped[256], self[1024];
	snprintf(cxx, sizeof(cxx), "%s/cxx-O2", workdir);
	snprintf(stripped, sizeof(stripped), "%s/cxx-O2-stripped", workdir);
	if (sh("g++ -O2 -g -Wl,--build-id -o %s %s/tests/data/symbolize/main.c "
	       "%s/tests/data/symbolize/util.c %s/tests/data/symbolize/cxx.cc 2>/dev/null",
	       cxx, src, src, src) != 0)
		sw_test_skip("g++ cannot build the fixture");
	CHECK_INT(sh("strip -o %s %s", stripped, cxx), 0);
	ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[k > 0 ? k : 0] = '\0';

	struct sw_image_ref cxx_ref = {.path = cxx}, stripped_ref = {.path = stripped},
			    self_ref = {.path = self};
	char app[512], dsym[512];
	snprintf(app, sizeof(app), "%s/app-arm64", macho);
	snprintf(dsym, sizeof(dsym), "%s/app-arm64.dSYM", macho);
	struct sw_image_ref macho_ref = {.path = app, .debug_path = dsym};

	check_image("c++ -O2", &cxx_ref, false);
	check_image("c++ -O2 stripped", &stripped_ref, false);
	check_image("this test", &self_ref, false);
	check_image("this test, one address", &self_ref, true);
	if (access(app, R_OK) == 0)
		check_image("mach-o arm64 + dSYM", &macho_ref, false);
	else
		printf("no Mach-O fixture at %s: not compared\n", app);

	check_damage(&cxx_ref, "c++ -O2");
	check_other_key(&cxx_ref, "c++ -O2", &stripped_ref, "c++ -O2 stripped");

	sh("rm -rf %s", workdir);
	return sw_test_end();
}
