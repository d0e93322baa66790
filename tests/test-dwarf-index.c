/*
 * Tests of the DWARF index file (lib/dwarf/dwarf-index*.c) on this test's
 * own executable: a reader given the index answers exactly as one that
 * parses DWARF, without parsing; a file truncated anywhere, with a byte
 * changed anywhere, of another version or record size, or written for
 * another key is ignored or, where a changed byte still passes every
 * check, never crashes a lookup; readers racing writers that rename new
 * files into place always see a whole file.  A batch's lookups at rising
 * addresses start where the last one ended: answers do not depend on the
 * order of the lookups, with or without the index, for DWARF and for the
 * symbol table.  Units read on several threads answer alike.  Runs under
 * the sanitizers with the rest of the unit suite.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dwarf/dwarf-index-format.h"
#include "dwarf/dwarf.h"
#include "objfile/object.h"
#include "test.h"

#define MAX_ADDRS 3000

static const struct sw_object *obj;
static uint64_t addrs[MAX_ADDRS];
static size_t naddrs;
static char *reference[MAX_ADDRS];
static const uint8_t key[] = {'t', 'e', 's', 't', 1, 2, 3};

/* Every frame of addr as one line of text (NULL when the lookup fails). */
static char *answer(struct sw_dwarf *d, uint64_t addr)
{
	struct sw_dwarf_frame fr[64];
	int n = sw_dwarf_lookup(d, addr, 0, fr, 64, NULL);
	if (n < 0)
		return NULL;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	for (int i = 0; f && i < n; i++)
		fprintf(f, "%s|%s|%u|%u;", fr[i].function ? fr[i].function : "?",
			fr[i].file ? fr[i].file : "?", fr[i].line, fr[i].column);
	if (f)
		fclose(f);
	return text;
}

static struct sw_dwarf *reader(void)
{
	struct sw_dwarf *d = NULL;
	if (sw_dwarf_new(&obj->dwarf, &d, NULL) < 0)
		return NULL;
	return d;
}

/* Whether every answer of d equals the parsed reference. */
static bool same_answers(struct sw_dwarf *d)
{
	bool same = true;
	for (size_t i = 0; i < naddrs; i++) {
		char *a = answer(d, addrs[i]);
		if (!a || !reference[i] || strcmp(a, reference[i]) != 0)
			same = false;
		free(a);
	}
	return same;
}

/* Looks every address up, whatever the answers: the checks are the sanitizers'. */
static void any_answers(struct sw_dwarf *d)
{
	for (size_t i = 0; i < naddrs; i++)
		free(answer(d, addrs[i]));
}

static void pick_addresses(void)
{
	size_t step = obj->nsymbols / MAX_ADDRS + 1;
	for (size_t i = 0; i < obj->nsymbols && naddrs < MAX_ADDRS; i += step) {
		addrs[naddrs++] = obj->symbols[i].addr + 1;
		if (naddrs < MAX_ADDRS && obj->symbols[i].size > 8)
			addrs[naddrs++] = obj->symbols[i].addr + obj->symbols[i].size / 2;
	}
}

static uint8_t *slurp(const char *path, size_t *size)
{
	struct stat st;
	int fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0)
		return NULL;
	uint8_t *b = malloc((size_t)st.st_size);
	ssize_t n = b ? read(fd, b, (size_t)st.st_size) : -1;
	close(fd);
	*size = (size_t)st.st_size;
	return n == st.st_size ? b : NULL;
}

static void spill(const char *path, const uint8_t *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	CHECK(f && fwrite(b, 1, n, f) == n);
	if (f)
		fclose(f);
}

/* A reader given path: whether it took the index, and whether its answers are right. */
static int try_index(const char *path, bool *ret_same)
{
	struct sw_dwarf *d = reader();
	int r = sw_dwarf_index_open(d, path, key, sizeof(key));
	if (ret_same)
		*ret_same = same_answers(d);
	else
		any_answers(d);
	sw_dwarf_free(d);
	return r;
}

static void test_round_trip(const char *path)
{
	/* falling addresses: no lookup starts where the last one ended */
	struct sw_dwarf *d = reader();
	for (size_t i = naddrs; i-- > 0;)
		reference[i] = answer(d, addrs[i]);
	CHECK(sw_dwarf_index_stale(d));
	CHECK_INT(sw_dwarf_index_write(d, path, key, sizeof(key), NULL), 0);
	CHECK(!sw_dwarf_index_stale(d));
	sw_dwarf_free(d);

	/* the index answers alike, and nothing was parsed to do it */
	d = reader();
	CHECK_INT(sw_dwarf_index_open(d, path, key, sizeof(key)), 0);
	CHECK(same_answers(d));
	CHECK(!sw_dwarf_index_stale(d));
	sw_dwarf_free(d);

	/* another key: ignored */
	d = reader();
	static const uint8_t other[] = {'t', 'e', 's', 't', 1, 2, 4};
	CHECK_INT(sw_dwarf_index_open(d, path, other, sizeof(other)), -EINVAL);
	CHECK(same_answers(d));
	CHECK(sw_dwarf_index_stale(d));
	sw_dwarf_free(d);
}

static void test_truncated(const char *path, const char *bad)
{
	size_t size;
	uint8_t *b = slurp(path, &size);
	CHECK(b && size > sizeof(struct ix_header) + 64);
	if (!b)
		return;
	size_t cuts[] = {0,
			 1,
			 8,
			 offsetof(struct ix_header, file_size),
			 sizeof(struct ix_header) - 1,
			 sizeof(struct ix_header),
			 sizeof(struct ix_header) + 8,
			 size / 4,
			 size / 2,
			 size - 9,
			 size - 1};
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		spill(bad, b, cuts[i]);
		bool same = false;
		CHECK_INT(try_index(bad, &same), -EINVAL);
		CHECK(same);
	}
	/* a longer file is as wrong as a shorter one */
	uint8_t *longer = calloc(1, size + 8);
	memcpy(longer, b, size);
	spill(bad, longer, size + 8);
	CHECK_INT(try_index(bad, NULL), -EINVAL);
	free(longer);
	free(b);
}

static void set_u32(uint8_t *b, size_t off, uint32_t v)
{
	memcpy(b + off, &v, sizeof(v));
}

static void test_foreign(const char *path, const char *bad)
{
	size_t size;
	uint8_t *b = slurp(path, &size);
	if (!b)
		return;
	struct {
		size_t off;
		uint32_t value;
	} edits[] = {
	    {offsetof(struct ix_header, version), IX_VERSION + 1},
	    {offsetof(struct ix_header, order), 0x04030201},
	    {offsetof(struct ix_header, header_size), sizeof(struct ix_header) + 8},
	    {offsetof(struct ix_header, func_size), sizeof(struct ix_func) + 4},
	    {offsetof(struct ix_header, row_size), 24},
	    {offsetof(struct ix_header, key_len), sizeof(key) - 1},
	    {offsetof(struct ix_header, magic), 0x58444457},
	    {offsetof(struct ix_header, nunits), 0},
	    {offsetof(struct ix_header, nrows), 1},
	};
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		uint8_t *c = malloc(size);
		memcpy(c, b, size);
		set_u32(c, edits[i].off, edits[i].value);
		spill(bad, c, size);
		bool same = false;
		CHECK_INT(try_index(bad, &same), -EINVAL);
		CHECK(same);
		free(c);
	}
	free(b);
}

/* One byte changed at offsets all over the file: every lookup survives. */
static void test_damaged(const char *path, const char *bad)
{
	size_t size;
	uint8_t *b = slurp(path, &size);
	if (!b)
		return;
	size_t tried = 0, refused = 0;
	for (size_t off = 0; off < size; off += off < sizeof(struct ix_header) ? 1 : size / 97) {
		uint8_t *c = malloc(size);
		memcpy(c, b, size);
		c[off] ^= 0x5a;
		spill(bad, c, size);
		if (try_index(bad, NULL) < 0)
			refused++;
		tried++;
		free(c);
	}
	/* every header byte but the unused key bytes and padding is checked */
	CHECK(refused >= offsetof(struct ix_header, key) + sizeof(key));
	CHECK(tried > refused);
	free(b);
}

/* Writers renaming new files over the index while a reader reads it. */
static void test_concurrent(const char *path)
{
	pid_t kids[3];
	for (int k = 0; k < 3; k++) {
		kids[k] = fork();
		if (kids[k] == 0) {
			for (int i = 0; i < 15; i++) {
				struct sw_dwarf *d = reader();
				for (size_t j = 0; j < naddrs; j += 1 + (size_t)k)
					free(answer(d, addrs[j]));
				sw_dwarf_index_write(d, path, key, sizeof(key), NULL);
				sw_dwarf_free(d);
			}
			_exit(0);
		}
	}
	int bad = 0;
	for (int i = 0; i < 30; i++) {
		bool same = false;
		try_index(path, &same);
		bad += !same;
	}
	for (int k = 0; k < 3; k++) {
		int status = 0;
		waitpid(kids[k], &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	CHECK_INT(bad, 0);
}

/*
 * Every byte of a stretch of text, looked up rising (each lookup starting
 * where the last ended, a row or a subroutine further on, or in the next
 * unit), falling, and hopping back and forth, by a reader parsing DWARF
 * and one given the index: the same answers.  The symbol table likewise.
 */
static void test_order(const char *path)
{
	enum { SPAN = 6000 };
	uint64_t lo = addrs[naddrs / 3];
	static char *want[SPAN];
	struct sw_dwarf *d = reader();
	for (size_t i = SPAN; i-- > 0;)
		want[i] = answer(d, lo + i);
	sw_dwarf_free(d);
	const struct sw_symbol *sym_want[SPAN];
	for (size_t i = 0; i < SPAN; i++)
		sym_want[i] = sw_object_find_symbol(obj, lo + i);

	for (int from_index = 0; from_index < 2; from_index++) {
		d = reader();
		if (from_index)
			CHECK_INT(sw_dwarf_index_open(d, path, key, sizeof(key)), 0);
		size_t differ = 0;
		for (int pass = 0; pass < 3; pass++) {
			for (size_t k = 0; k < SPAN; k++) {
				/* rising; falling; rising by 37 modulo SPAN (hops back) */
				size_t i = pass == 0 ? k : pass == 1 ? SPAN - 1 - k : k * 37 % SPAN;
				char *a = answer(d, lo + i);
				if (!a || !want[i] || strcmp(a, want[i]) != 0)
					differ++;
				free(a);
			}
		}
		CHECK_INT(differ, 0);
		sw_dwarf_free(d);
	}

	struct sw_symbol_hint h = {0};
	size_t differ = 0;
	for (int pass = 0; pass < 3; pass++) {
		for (size_t k = 0; k < SPAN; k++) {
			size_t i = pass == 0 ? k : pass == 1 ? SPAN - 1 - k : k * 37 % SPAN;
			differ += sw_object_find_symbol_near(obj, lo + i, &h) != sym_want[i];
		}
	}
	CHECK_INT(differ, 0);
	/* the stretch holds several functions, so the searches moved */
	CHECK(sym_want[0] != sym_want[SPAN - 1]);
	for (size_t i = 0; i < SPAN; i++)
		free(want[i]);
}

/*
 * Units read on several threads before the lookups (a large batch) give
 * the same answers as units read one at a time by the lookups, and the
 * index written afterwards holds them.
 */
static void test_threads(const char *path)
{
	for (unsigned threads = 2; threads <= 4; threads += 2) {
		struct sw_dwarf *d = reader();
		int used = sw_dwarf_read_units(d, addrs, naddrs, threads);
		CHECK(used >= 2); /* the reading was shared out */
		CHECK(sw_dwarf_index_stale(d));
		CHECK(same_answers(d));
		/* read already: another call has nothing to share out */
		CHECK_INT(sw_dwarf_read_units(d, addrs, naddrs, threads), 0);
		CHECK_INT(sw_dwarf_index_write(d, path, key, sizeof(key), NULL), 0);
		sw_dwarf_free(d);
		bool same = false;
		CHECK_INT(try_index(path, &same), 0);
		CHECK(same);
	}
	/* with the index, nothing is left to read */
	struct sw_dwarf *d = reader();
	CHECK_INT(sw_dwarf_index_open(d, path, key, sizeof(key)), 0);
	CHECK_INT(sw_dwarf_read_units(d, addrs, naddrs, 2), 0);
	CHECK(same_answers(d));
	sw_dwarf_free(d);
}

/* The file's arrays of units and of the address -> unit map, laid out as the format says. */
static bool file_whole(const uint8_t *b, size_t size)
{
	const struct ix_header *h = (const struct ix_header *)b;
	size_t units = (sizeof(*h) + 7) & ~(size_t)7;
	size_t map = (units + h->nunits * sizeof(struct ix_unit) + 7) & ~(size_t)7;
	CHECK(map + h->ncu_map * sizeof(struct dw_seg) <= size);
	const struct ix_unit *u = (const struct ix_unit *)(b + units);
	const struct dw_seg *m = (const struct dw_seg *)(b + map);
	for (uint64_t i = 0; i < h->ncu_map; i++)
		if (!u[m[i].func].held)
			return false;
	return true;
}

/* Whether a reader given the file at path says it holds every unit the map names. */
static bool index_whole(const char *path)
{
	struct sw_dwarf *d = reader();
	CHECK_INT(sw_dwarf_index_open(d, path, key, sizeof(key)), 0);
	bool whole = sw_dwarf_index_whole(d);
	sw_dwarf_free(d);
	return whole;
}

/*
 * sw_dwarf_index_whole(): no index, an index of one unit, an index of
 * every unit a lookup can reach, and that index with one unit's record
 * marked not held, each against the file read here.
 */
static void test_whole(const char *path, const char *bad)
{
	struct sw_dwarf *d = reader();
	CHECK(!sw_dwarf_index_whole(d));
	free(answer(d, addrs[naddrs / 2]));
	CHECK_INT(sw_dwarf_index_write(d, path, key, sizeof(key), NULL), 0);
	sw_dwarf_free(d);
	size_t size;
	uint8_t *b = slurp(path, &size);
	CHECK(b && !file_whole(b, size));
	CHECK(!index_whole(path));
	free(b);

	/* every function's start: every unit with code */
	uint64_t *all = malloc(obj->nsymbols * sizeof(*all));
	size_t n = 0;
	for (size_t i = 0; all && i < obj->nsymbols; i++)
		all[n++] = obj->symbols[i].addr;
	d = reader();
	CHECK_INT(sw_dwarf_index_open(d, path, key, sizeof(key)), 0);
	for (size_t i = 0; i < n; i++)
		free(answer(d, all[i]));
	CHECK_INT(sw_dwarf_index_write(d, path, key, sizeof(key), NULL), 0);
	sw_dwarf_free(d);
	free(all);
	b = slurp(path, &size);
	CHECK(b && file_whole(b, size));
	CHECK(index_whole(path));

	/* one unit the map names, not held: not whole, and still answered right */
	const struct ix_header *h = (const struct ix_header *)b;
	size_t units = (sizeof(*h) + 7) & ~(size_t)7;
	size_t map = (units + h->nunits * sizeof(struct ix_unit) + 7) & ~(size_t)7;
	uint32_t unit = ((const struct dw_seg *)(b + map))[h->ncu_map / 2].func;
	((struct ix_unit *)(b + units))[unit].held = 0;
	spill(bad, b, size);
	free(b);
	CHECK(!index_whole(bad));
	bool same = false;
	CHECK_INT(try_index(bad, &same), 0);
	CHECK(same);
}

int main(int argc, char **argv)
{
	struct sw_object *o = NULL;
	if (sw_object_open("/proc/self/exe", NULL, &o, NULL) < 0 || !o->has_debug_info)
		sw_test_skip("this test was built without DWARF");
	obj = o;
	pick_addresses();
	char dir[] = "/tmp/sw-dwarf-index-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char path[64], bad[64];
	snprintf(path, sizeof(path), "%s/x.dwx", dir);
	snprintf(bad, sizeof(bad), "%s/bad.dwx", dir);

	test_round_trip(path);
	test_order(path);
	test_threads(path);
	test_whole(path, bad);
	test_truncated(path, bad);
	test_foreign(path, bad);
	test_damaged(path, bad);
	test_concurrent(path);

	unlink(path);
	unlink(bad);
	rmdir(dir);
	for (size_t i = 0; i < naddrs; i++)
		free(reference[i]);
	sw_object_free(o);
	(void)argc;
	(void)argv;
	return sw_test_end();
}
