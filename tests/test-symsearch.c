/*
 * Tests for the symbol search (symsearch*.c, host/): ELF debug files
 * split off with objcopy into each conventional place, a recursively
 * indexed tree with a symlink loop, STALLWATCH_SYMBOLS, Mach-O binaries and
 * dSYMs found by UUID, and the list of misses.  Expected ids come from
 * readelf (recorded by make-symsearch-fixtures.sh) and llvm-dwarfdump.
 *
 * usage: test-symsearch ELF-FIXTURE-DIR MACHO-FIXTURE-DIR
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "objfile/macho-format.h"
#include "objfile/macho.h"
#include "symbols/symsearch.h"
#include "test.h"

static const char *elfdir, *machodir;

static char *cat(const char *a, const char *b)
{
	char *s = NULL;

	if (asprintf(&s, "%s/%s", a, b) < 0)
		exit(1);
	return s;
}

static size_t read_id(const char *name, uint8_t id[32])
{
	char *path, line[128];
	size_t n = 0;
	FILE *f;

	path = cat(elfdir, name);
	f = fopen(path, "r");
	free(path);
	if (!f || !fgets(line, sizeof(line), f))
		exit(1);
	fclose(f);
	for (; n < 32 && line[2 * n] && line[2 * n] != '\n'; n++) {
		unsigned v;

		sscanf(line + 2 * n, "%2x", &v);
		id[n] = (uint8_t)v;
	}
	return n;
}

static struct sw_symsearch *fresh(void)
{
	struct sw_symsearch *s;
	char *root = cat(elfdir, "debugroot");

	CHECK_INT(sw_symsearch_new(&s), 0);
	CHECK_INT(sw_symsearch_set_debug_root(s, root), 0);
	CHECK_INT(sw_symsearch_set_cache_dir(s, NULL), 0);
	sw_symsearch_set_debuginfod(s, false);
	free(root);
	return s;
}

/* Finds NAME's debug file for the binary at BINDIR/NAME and expects it at WANT. */
static void check_elf(const char *name, const char *bindir, const char *want_rel)
{
	struct sw_symsearch *s = fresh();
	struct sw_symsearch_result r;
	struct sw_error err;
	uint8_t id[32];
	char idfile[64], *dir = cat(elfdir, bindir), *bin = cat(dir, name);
	char *want = cat(elfdir, want_rel);
	struct sw_symsearch_query q = {.path = bin};

	snprintf(idfile, sizeof(idfile), "%s.buildid", name);
	q.id_len = read_id(idfile, id);
	q.id = id;
	CHECK_INT(q.id_len, 20);
	CHECK_INT(sw_symsearch_find(s, &q, &r, &err), 0);
	CHECK_STR(r.binary, bin);
	CHECK_STR(r.debug, want);
	CHECK_STR(r.arch, "");
	sw_symsearch_result_finish(&r);
	sw_symsearch_free(s);
	free(want);
	free(bin);
	free(dir);
}

static void test_elf_conventions(void)
{
	char want[4096], idhex[41], *root = NULL;
	uint8_t id[32];

	read_id("byid.buildid", id);
	for (int i = 0; i < 20; i++)
		sprintf(idhex + 2 * i, "%02x", id[i]);
	snprintf(want, sizeof(want), "debugroot/.build-id/%.2s/%s.debug", idhex, idhex + 2);
	check_elf("byid", "bin", want);
	check_elf("beside", "beside", "beside/beside.debug");
	check_elf("dotdebug", "dotdebug", "dotdebug/.debug/dotdebug.debug");
	if (asprintf(&root, "debugroot%s/underroot/underroot.debug", elfdir) < 0)
		exit(1);
	if (elfdir[0] == '/')
		check_elf("underroot", "underroot", root);
	free(root);
}

/* A debug file found only by indexing a tree (which holds a symlink loop). */
static void test_index(void)
{
	struct sw_symsearch *s = fresh();
	struct sw_symsearch_result r;
	struct sw_error err;
	uint8_t id[32];
	char *tree = cat(elfdir, "tree"), *want = cat(elfdir, "tree/a/b/c/indexed.debug");
	char *bin = cat(elfdir, "bin/indexed");
	struct sw_symsearch_query q = {.id = id};

	q.id_len = read_id("indexed.buildid", id);
	CHECK_INT(sw_symsearch_find(s, &q, &r, &err), -ENOENT);
	CHECK(strstr(err.msg, "no binary or debug file for ") != NULL);
	CHECK_INT(sw_symsearch_add_path(s, tree), 0);
	CHECK_INT(sw_symsearch_find(s, &q, &r, &err), 0);
	CHECK(r.binary == NULL);
	CHECK_STR(r.debug, want);
	sw_symsearch_result_finish(&r);
	CHECK_INT(sw_symsearch_indexed(s), 1);
	q.path = bin;
	CHECK_INT(sw_symsearch_find(s, &q, &r, &err), 0);
	CHECK_STR(r.binary, bin);
	CHECK_STR(r.debug, want);
	sw_symsearch_result_finish(&r);
	sw_symsearch_free(s);

	/* The same through STALLWATCH_SYMBOLS, among paths that do not exist. */
	{
		char env[8192];

		snprintf(env, sizeof(env), "/nonexistent-a:%s:/nonexistent-b", tree);
		setenv("STALLWATCH_SYMBOLS", env, 1);
		s = fresh();
		CHECK_INT(sw_symsearch_add_env(s), 3);
		q.path = NULL;
		CHECK_INT(sw_symsearch_find(s, &q, &r, &err), 0);
		CHECK_STR(r.debug, want);
		sw_symsearch_result_finish(&r);
		sw_symsearch_free(s);
		unsetenv("STALLWATCH_SYMBOLS");
	}
	free(tree);
	free(want);
	free(bin);
}

static void test_misses(void)
{
	struct sw_symsearch *s = fresh();
	const struct sw_symsearch_miss *m;
	struct sw_symsearch_result r;
	struct sw_error err;
	uint8_t lost[32], other[32], unknown[20];
	char *bin = cat(elfdir, "bin/lost"), *wrong = cat(elfdir, "bin/byid"), expect[65];
	struct sw_symsearch_query q = {.id = lost, .path = bin};

	q.id_len = read_id("lost.buildid", lost);
	CHECK_INT(sw_symsearch_find(s, &q, &r, &err), 0);
	CHECK_STR(r.binary, bin);
	CHECK(r.debug == NULL);
	sw_symsearch_result_finish(&r);
	/* A file at the path with another build-id is not the image. */
	q.id = other;
	q.id_len = read_id("beside.buildid", other);
	q.path = wrong;
	CHECK_INT(sw_symsearch_find(s, &q, &r, &err), -ENOENT);
	memset(unknown, 0x5a, sizeof(unknown));
	q.id = unknown;
	q.id_len = sizeof(unknown);
	q.path = "/nonexistent/libgone.so";
	CHECK_INT(sw_symsearch_find(s, &q, &r, &err), -ENOENT);
	CHECK(strstr(err.msg, "5a5a5a") && strstr(err.msg, "/nonexistent/libgone.so"));
	CHECK_INT(sw_symsearch_misses(s, &m), 3);
	sw_symsearch_id_str(lost, 20, false, expect);
	CHECK_STR(m[0].id, expect);
	CHECK_STR(m[0].path, bin);
	CHECK_INT(m[0].missing, SW_SYMFILE_DEBUG);
	CHECK_INT(m[1].missing, SW_SYMFILE_BINARY | SW_SYMFILE_DEBUG);
	CHECK_STR(m[2].id, "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a");
	CHECK_STR(m[2].path, "/nonexistent/libgone.so");
	/* Asking again does not add a second entry. */
	CHECK_INT(sw_symsearch_find(s, &q, &r, &err), -ENOENT);
	CHECK_INT(sw_symsearch_misses(s, &m), 3);
	sw_symsearch_free(s);
	free(bin);
	free(wrong);
}

static void uuid_of(const char *uuidfile, const char *arch, uint8_t out[16])
{
	char *path = cat(machodir, uuidfile), line[512], want[32];
	FILE *f = fopen(path, "r");

	snprintf(want, sizeof(want), "(%s)", arch);
	memset(out, 0, 16);
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "UUID: ", 6) == 0 && strstr(line, want)) {
			line[42] = 0;
			CHECK_INT(sw_macho_uuid_parse(line + 6, out), 0);
		}
	if (f)
		fclose(f);
	free(path);
}

/* The file holds a slice with uuid; returns its file type (0: none). */
static uint32_t slice_type(const char *path, const uint8_t uuid[16], const char *arch)
{
	struct sw_macho_slice s[SW_MACHO_MAX_SLICES];
	size_t n;

	if (!path || sw_macho_peek_file(path, s, SW_MACHO_MAX_SLICES, &n, NULL) < 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i].has_uuid && memcmp(s[i].uuid, uuid, 16) == 0 && !strcmp(s[i].arch, arch))
			return s[i].filetype;
	return 0;
}

static void test_macho(void)
{
	struct sw_symsearch *s = fresh();
	struct sw_symsearch_result r;
	struct sw_error err;
	uint8_t uuid[16];
	char *bin = cat(machodir, "app-arm64");
	char *dsym = cat(machodir, "app-arm64.dSYM/Contents/Resources/DWARF/app-arm64");
	struct sw_symsearch_query q = {.id = uuid, .id_len = 16, .macho = true, .path = bin};

	uuid_of("app-arm64.dSYM.uuid", "arm64", uuid);
	/* Beside the binary, without any search path. */
	CHECK_INT(sw_symsearch_find(s, &q, &r, &err), 0);
	CHECK_STR(r.binary, bin);
	CHECK_STR(r.debug, dsym);
	CHECK_STR(r.arch, "arm64");
	sw_symsearch_result_finish(&r);
	/* By UUID alone through the index; each file must really hold the UUID. */
	CHECK_INT(sw_symsearch_add_path(s, machodir), 0);
	q.path = NULL;
	CHECK_INT(sw_symsearch_find(s, &q, &r, &err), 0);
	CHECK_INT(slice_type(r.binary, uuid, "arm64") != 0 &&
		      slice_type(r.binary, uuid, "arm64") != MH_DSYM,
		  1);
	CHECK_INT(slice_type(r.debug, uuid, "arm64"), MH_DSYM);
	CHECK_STR(r.arch, "arm64");
	sw_symsearch_result_finish(&r);
	/* x86_64: in its own dSYM or the universal one. */
	uuid_of("app-universal.dSYM.uuid", "x86_64", uuid);
	q.arch = "x86_64";
	CHECK_INT(sw_symsearch_find(s, &q, &r, &err), 0);
	CHECK_INT(slice_type(r.debug, uuid, "x86_64"), MH_DSYM);
	CHECK_STR(r.arch, "x86_64");
	sw_symsearch_result_finish(&r);
	/* The right UUID but the wrong architecture is no match. */
	q.arch = "arm64";
	CHECK_INT(sw_symsearch_find(s, &q, &r, &err), -ENOENT);
	CHECK(strstr(err.msg, "no binary or debug file for ") != NULL);
	{
		const struct sw_symsearch_miss *m;
		char u[37];

		sw_macho_uuid_str(uuid, u);
		CHECK_INT(sw_symsearch_misses(s, &m), 1);
		CHECK_STR(m[0].id, u);
		CHECK_STR(m[0].arch, "arm64");
	}
	sw_symsearch_free(s);
	free(bin);
	free(dsym);
}

/* Finds the indexed debug file with the disk cache in dir; returns the cache hits. */
static size_t cached_run(const char *dir, const char *tree, const uint8_t *id, size_t len,
			 size_t *ret_files)
{
	struct sw_symsearch *s = fresh();
	struct sw_symsearch_result r;
	struct sw_error err;
	struct sw_symsearch_query q = {.id = id, .id_len = len};
	char *want = cat(elfdir, "tree/a/b/c/indexed.debug");
	size_t hits;

	CHECK_INT(sw_symsearch_set_cache_dir(s, dir), 0);
	CHECK_INT(sw_symsearch_add_path(s, tree), 0);
	CHECK_INT(sw_symsearch_add_path(s, machodir), 0);
	CHECK_INT(sw_symsearch_find(s, &q, &r, &err), 0);
	CHECK_STR(r.debug, want);
	sw_symsearch_result_finish(&r);
	*ret_files = sw_symsearch_indexed(s);
	hits = sw_symsearch_cache_hits(s);
	sw_symsearch_free(s);
	free(want);
	return hits;
}

static void test_disk_cache(void)
{
	char *dir = cat(elfdir, "cache/stallwatch"), *tree = cat(elfdir, "tree");
	char *file = cat(dir, "symindex-v1"), *debug = cat(elfdir, "tree/a/b/c/indexed.debug");
	struct timespec times[2] = {{0, UTIME_OMIT}, {0, 0}};
	struct stat st;
	uint8_t id[32];
	size_t len = read_id("indexed.buildid", id), files, files2;
	FILE *f;

	unlink(file);
	CHECK_INT(cached_run(dir, tree, id, len, &files), 0);
	CHECK(files > 40);
	CHECK(access(file, R_OK) == 0);
	/* Every file comes from the cache the second time. */
	CHECK_INT(cached_run(dir, tree, id, len, &files2), files);
	CHECK_INT(files2, files);
	/* A changed file is read again, and what it holds now counts. */
	CHECK_INT(stat(debug, &st), 0);
	times[1].tv_sec = st.st_mtim.tv_sec + 1;
	CHECK_INT(utimensat(AT_FDCWD, debug, times, 0), 0);
	CHECK_INT(cached_run(dir, tree, id, len, &files2), files - 1);
	CHECK_INT(cached_run(dir, tree, id, len, &files2), files);
	/* A damaged cache is an empty one. */
	f = fopen(file, "r+");
	CHECK(f != NULL);
	if (f) {
		fseek(f, 40, SEEK_SET);
		fputs("E 9 9 zz\nF x\n\n\nE", f);
		fclose(f);
	}
	CHECK(cached_run(dir, tree, id, len, &files2) < files);
	CHECK_INT(cached_run(dir, tree, id, len, &files2), files);
	free(dir);
	free(tree);
	free(file);
	free(debug);
}

int main(int argc, char **argv)
{
	char *skip, cwd[4096];

	if (argc != 3) {
		fprintf(stderr, "usage: test-symsearch ELF-FIXTURE-DIR MACHO-FIXTURE-DIR\n");
		return 2;
	}
	/* The search names what it finds by absolute paths. */
	elfdir = argv[1][0] == '/' ? argv[1] : cat(getcwd(cwd, sizeof(cwd)), argv[1]);
	machodir = argv[2][0] == '/' ? argv[2] : cat(getcwd(cwd, sizeof(cwd)), argv[2]);
	skip = cat(elfdir, "SKIP");
	if (access(skip, F_OK) == 0)
		sw_test_skip("ELF fixture tools missing");
	free(skip);
	test_elf_conventions();
	test_index();
	test_misses();
	skip = cat(machodir, "SKIP");
	if (access(skip, F_OK) != 0) {
		test_macho();
		test_disk_cache();
	} else
		printf("Mach-O part skipped: fixture tools missing\n");
	free(skip);
	return sw_test_end();
}
