/*
 * Tests of the symbol cache (lib/objfile/symbol-cache.c): a table taken
 * from the cache is the table read from the object, entry by entry, with
 * the same answers; a file written for another key or another object size
 * is ignored; a file truncated anywhere or with a byte changed anywhere is
 * ignored or, where the change passes every check, gives names that are
 * strings and addresses that rise, never a crash.  Objects: this test's
 * own executable and, when the fixtures were built, a stripped Mach-O
 * (function starts and exports) and a universal one.  The symbolicator
 * writes the cache of a binary of 3,000 functions once and then reads it.
 *
 * usage: test-symbol-cache MACHO_FIXTURE_DIR
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "objfile/object.h"
#include "symbols/symbolicate.h"
#include "test.h"

static char dir[] = "/tmp/sw-symbol-cache-XXXXXX";
static const uint8_t key[] = {'k', 'e', 'y', 1, 2, 3};

static struct sw_object *deferred(const char *path, const char *arch)
{
	struct sw_object *o = NULL;
	struct sw_error err = {0};
	if (sw_object_open_deferred(path, arch, &o, &err) < 0) {
		fprintf(stderr, "%s: %s\n", path, sw_error_str(&err));
		return NULL;
	}
	return o;
}

static bool same_tables(const struct sw_object *a, const struct sw_object *b)
{
	if (a->nsymbols != b->nsymbols || a->nfunction_starts != b->nfunction_starts)
		return false;
	for (size_t i = 0; i < a->nsymbols; i++) {
		const struct sw_symbol *x = &a->symbols[i], *y = &b->symbols[i];
		if (x->addr != y->addr || x->size != y->size || x->flags != y->flags ||
		    strcmp(x->name, y->name) != 0)
			return false;
	}
	for (size_t i = 0; i < a->nfunction_starts; i++)
		if (a->function_starts[i] != b->function_starts[i])
			return false;
	/* and the lookups: every symbol's start, middle and the byte before it */
	for (size_t i = 0; i < a->nsymbols; i++) {
		uint64_t at[3] = {a->symbols[i].addr, a->symbols[i].addr + a->symbols[i].size / 2,
				  a->symbols[i].addr - 1};
		for (int k = 0; k < 3; k++) {
			const struct sw_symbol *x = sw_object_find_symbol(a, at[k]);
			const struct sw_symbol *y = sw_object_find_symbol(b, at[k]);
			if (!x != !y || (x && (x->addr != y->addr || strcmp(x->name, y->name))))
				return false;
		}
	}
	return true;
}

static uint8_t *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc((size_t)n);
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*size = (size_t)n;
	return b;
}

static void spill(const char *path, const uint8_t *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	CHECK(f && fwrite(b, 1, n, f) == n);
	if (f)
		fclose(f);
}

/* A table from a damaged file, if one was taken at all, must be usable. */
static void check_sane(const struct sw_object *o)
{
	size_t bad = 0;
	for (size_t i = 0; i < o->nsymbols; i++) {
		bad += !o->symbols[i].name || (i && o->symbols[i].addr < o->symbols[i - 1].addr);
		(void)strlen(o->symbols[i].name);
	}
	CHECK_INT(bad, 0);
}

static void check_object(const char *path, const char *arch)
{
	char cache[256], bad[256];
	snprintf(cache, sizeof(cache), "%s/c.sym", dir);
	snprintf(bad, sizeof(bad), "%s/bad.sym", dir);
	printf("object %s %s\n", path, arch ? arch : "");

	/* read, written, taken back: the same table */
	struct sw_object *read = deferred(path, arch);
	CHECK(read != NULL);
	if (!read)
		return;
	CHECK(sw_object_symbols_pending(read));
	CHECK_INT(sw_object_symbols_to_cache(read, cache, key, sizeof(key)), -EINVAL);
	CHECK_INT(sw_object_load_symbols(read, NULL), 0);
	CHECK(!sw_object_symbols_pending(read));
	CHECK(read->nsymbols > 0);
	CHECK_INT(sw_object_symbols_to_cache(read, cache, key, sizeof(key)), 0);

	struct sw_object *cached = deferred(path, arch);
	CHECK_INT(sw_object_symbols_from_cache(cached, cache, key, sizeof(key)), 0);
	CHECK(!sw_object_symbols_pending(cached));
	CHECK(same_tables(read, cached));
	/* once taken, not again */
	CHECK_INT(sw_object_symbols_from_cache(cached, cache, key, sizeof(key)), -EALREADY);
	sw_object_free(cached);

	/* another key: ignored, and the symbols can still be read */
	static const uint8_t other[] = {'k', 'e', 'y', 1, 2, 4};
	struct sw_object *o = deferred(path, arch);
	CHECK_INT(sw_object_symbols_from_cache(o, cache, other, sizeof(other)), -EINVAL);
	CHECK(sw_object_symbols_pending(o) && o->nsymbols == 0);
	CHECK_INT(sw_object_load_symbols(o, NULL), 0);
	CHECK(same_tables(read, o));
	sw_object_free(o);

	/* truncated anywhere: ignored */
	size_t size = 0;
	uint8_t *file = slurp(cache, &size);
	CHECK(file != NULL);
	size_t step = size / 300 + 1, taken = 0;
	for (size_t cut = 0; file && cut < size; cut += step) {
		spill(bad, file, cut);
		o = deferred(path, arch);
		taken += sw_object_symbols_from_cache(o, bad, key, sizeof(key)) == 0;
		sw_object_free(o);
	}
	CHECK_INT(taken, 0);

	/* a byte changed anywhere: ignored, or a table that can be used */
	size_t kept = 0;
	for (size_t at = 0; file && at < size; at += step) {
		file[at] ^= 0x5a;
		spill(bad, file, size);
		file[at] ^= 0x5a;
		o = deferred(path, arch);
		if (sw_object_symbols_from_cache(o, bad, key, sizeof(key)) == 0) {
			kept++;
			check_sane(o);
			(void)sw_object_find_symbol(o, read->symbols[0].addr + 1);
		}
		sw_object_free(o);
	}
	printf("  %zu bytes; %zu of %zu changed copies still pass the checks\n", size, kept,
	       (size + step - 1) / step);
	free(file);
	sw_object_free(read);
	unlink(cache);
	unlink(bad);
}

/* The symbolicator writes the cache on its first run and reads it on the next. */
static void check_symbolicator(const char *path)
{
	char cache[256];
	snprintf(cache, sizeof(cache), "%s/root", dir);
	struct sw_image_ref ref = {.path = path};
	const struct sw_object *obj;
	uint64_t addr = 0;
	const char *first_name = NULL;
	for (int run = 0; run < 2; run++) {
		struct sw_symbolicator *s = NULL;
		CHECK_INT(sw_symbolicator_new(SW_SYMBOLICATE_NO_DEMANGLE, &s), 0);
		CHECK_INT(sw_symbolicator_set_cache_dir(s, cache), 0);
		CHECK(sw_symbolicator_image(s, &ref, &obj, NULL) >= 0);
		/* the first run read the symbols and has a cache to write; the second has none */
		CHECK_INT(sw_symbolicator_index_pending(s), run == 0);
		if (run == 0)
			addr = obj->symbols[obj->nsymbols / 2].addr;
		struct sw_frame fr[SW_SYMBOLICATE_MAX_FRAMES];
		int n =
		    sw_symbolicate_file_addr(s, &ref, addr, fr, SW_SYMBOLICATE_MAX_FRAMES, NULL);
		CHECK(n >= 1);
		if (n >= 1 && run == 0)
			first_name = strdup(fr[n - 1].function ? fr[n - 1].function : "?");
		else if (n >= 1)
			CHECK_STR(fr[n - 1].function ? fr[n - 1].function : "?", first_name);
		sw_symbolicator_free(s); /* writes what is pending */
	}
	free((void *)first_name);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", cache);
	CHECK_INT(system(cmd), 0);
}

/* A binary with more functions than the symbolicator bothers to cache below. */
static bool make_large(const char *bin)
{
	char src[300], cmd[1024];
	snprintf(src, sizeof(src), "%s/large.c", dir);
	FILE *f = fopen(src, "w");
	if (!f)
		return false;
	for (int i = 0; i < 3000; i++)
		fprintf(f, "int f%d(int x) { return x * %d + 1; }\n", i, i);
	fprintf(f, "int main(void) { return f0(1) - 1; }\n");
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -O0 -o %s %s", bin, src);
	bool ok = system(cmd) == 0;
	unlink(src);
	return ok;
}

int main(int argc, char **argv)
{
	CHECK(mkdtemp(dir) != NULL);
	check_object("/proc/self/exe", NULL);
	char large[300];
	snprintf(large, sizeof(large), "%s/large", dir);
	if (make_large(large)) {
		check_object(large, NULL);
		check_symbolicator(large);
		unlink(large);
	} else {
		printf("no C compiler: the symbolicator's cache is not tried\n");
	}
	char path[1024];
	static const char *const macho[][2] = {
	    {"app-arm64-stripped", NULL}, {"app-arm64", NULL}, {"app-universal", "x86_64"}};
	for (size_t i = 0; argc > 1 && i < sizeof(macho) / sizeof(macho[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", argv[1], macho[i][0]);
		if (access(path, R_OK) == 0)
			check_object(path, macho[i][1]);
		else
			printf("no fixture %s\n", path);
	}
	rmdir(dir);
	return sw_test_end();
}
