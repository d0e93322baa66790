/*
 * Tests of the symbolication pipeline (symbolicate.c): slides, the
 * return-address rule, the symbol-table fallback with offsets, the image
 * cache, demangling, and the printing of `stallwatch symbolicate`.  The
 * fixture is built here with gcc from tests/data/symbolize/freestanding.c;
 * expected names and lines come from llvm-nm and llvm-symbolizer.
 *
 * usage: test-symbolicate SOURCE_ROOT
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "symbols/symbolicate.h"
#include "symbols/symsearch.h"
#include "test.h"

static char workdir[64];

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static void sh_lines(char out[][512], int n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void sh_lines(char out[][512], int n, const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	for (int i = 0; i < n; i++)
		out[i][0] = '\0';
	FILE *p = popen(cmd, "r");
	for (int i = 0; p && i < n && fgets(out[i], 512, p); i++)
		out[i][strcspn(out[i], "\n")] = '\0';
	if (p)
		pclose(p);
}

static uint64_t nm_addr(const char *bin, const char *sym)
{
	char line[1][512];
	sh_lines(line, 1, "llvm-nm-14 %s | awk '$3 == \"%s\" {print $1}'", bin, sym);
	return strtoull(line[0], NULL, 16);
}

/* "name\nfile:line:column" of llvm-symbolizer's innermost frame at addr. */
static void oracle(const char *bin, uint64_t addr, char *name, char *loc)
{
	char lines[2][512];
	sh_lines(lines, 2, "llvm-symbolizer-14 --no-demangle -e %s 0x%llx", bin,
		 (unsigned long long)addr);
	strcpy(name, lines[0]);
	strcpy(loc, lines[1]);
}

static void frame_loc(const struct sw_frame *f, char *out)
{
	snprintf(out, 512, "%s:%u:%u", f->file ? f->file : "??", f->line, f->column);
}

static void test_slide_and_return_address(const char *bin)
{
	struct sw_symbolicator *s = NULL;
	CHECK_INT(sw_symbolicator_new(SW_SYMBOLICATE_NO_DEMANGLE, &s), 0);
	const struct sw_object *obj = NULL;
	struct sw_image_ref ref = {.path = bin};
	CHECK(sw_symbolicator_image(s, &ref, &obj, NULL) >= 0);
	if (!obj) {
		sw_symbolicator_free(s);
		return;
	}
	uint64_t worker = nm_addr(bin, "worker"), start = nm_addr(bin, "_start");
	CHECK(worker && start);
	const uint64_t slide = 0x7f0000000000ull;
	ref.load_addr = obj->text_vmaddr + slide;

	/* a return address in _start (after the call to worker) */
	char name[512], loc[512], got[512];
	struct sw_frame fr[SW_SYMBOLICATE_MAX_FRAMES];
	for (uint64_t a = start + 1; a < start + 24; a++) {
		int n =
		    sw_symbolicate(s, &ref, a + slide, true, fr, SW_SYMBOLICATE_MAX_FRAMES, NULL);
		CHECK(n >= 1);
		oracle(bin, a - 1, name, loc);
		frame_loc(&fr[0], got);
		CHECK_STR(got, loc);
		/* the first frame of a sample is taken as is */
		n = sw_symbolicate(s, &ref, a + slide, false, fr, SW_SYMBOLICATE_MAX_FRAMES, NULL);
		oracle(bin, a, name, loc);
		frame_loc(&fr[0], got);
		CHECK_STR(got, loc);
		CHECK_STR(fr[0].function ? fr[0].function : "??", name);
	}
	/* a slide stated by the image list: the same answers */
	struct sw_image_ref stated = ref;
	stated.has_text_vmaddr = true;
	stated.text_vmaddr = obj->text_vmaddr + 0x100;
	stated.load_addr = ref.load_addr + 0x100;
	struct sw_frame fa[SW_SYMBOLICATE_MAX_FRAMES], fb[SW_SYMBOLICATE_MAX_FRAMES];
	int na =
	    sw_symbolicate(s, &ref, worker + slide + 3, false, fa, SW_SYMBOLICATE_MAX_FRAMES, NULL);
	int nb = sw_symbolicate(s, &stated, worker + slide + 3, false, fb,
				SW_SYMBOLICATE_MAX_FRAMES, NULL);
	CHECK(na >= 1 && na == nb);
	if (na >= 1 && na == nb)
		CHECK(fa[0].line == fb[0].line && fa[na - 1].function == fb[nb - 1].function);
	/* the same image again is the same object */
	const struct sw_object *again = NULL;
	CHECK(sw_symbolicator_image(s, &ref, &again, NULL) >= 0);
	CHECK(again == obj);
	CHECK_INT(sw_symbolicate_return_adjust("x86_64"), 1);
	CHECK_INT(sw_symbolicate_return_adjust("arm64e"), 4);
	CHECK_INT(sw_symbolicate_return_adjust("aarch64"), 4);
	sw_symbolicator_free(s);
}

static void test_symbols_only(const char *bin)
{
	char stripped[300];
	snprintf(stripped, sizeof(stripped), "%s.nodebug", bin);
	CHECK_INT(sh("llvm-objcopy-14 --strip-debug %s %s", bin, stripped), 0);
	struct sw_symbolicator *s = NULL;
	CHECK_INT(sw_symbolicator_new(0, &s), 0);
	struct sw_image_ref ref = {.path = stripped};
	uint64_t worker = nm_addr(bin, "worker");
	struct sw_frame fr[4];
	struct sw_error err = {0};
	int n = sw_symbolicate_file_addr(s, &ref, worker + 5, fr, 4, &err);
	CHECK_INT(n, 1);
	CHECK_STR(fr[0].function, "worker");
	CHECK(fr[0].flags & SW_FRAME_SYMBOL);
	CHECK_INT(fr[0].symbol_addr, worker);
	CHECK_INT(fr[0].offset, 5);
	CHECK(fr[0].file == NULL);
	struct sw_buf out;
	sw_buf_init(&out, 0);
	CHECK_INT(sw_symbolicate_print_text(fr, 1, &out), 0);
	CHECK_STR(sw_buf_str(&out), "worker + 0x5\n??:0:0\n\n");
	sw_buf_reset(&out);
	CHECK_INT(sw_symbolicate_print_json(worker + 5, fr, 1, &out), 0);
	char want[512];
	snprintf(want, sizeof(want),
		 "{\"schema\":1,\"type\":\"address\",\"address\":\"0x%llx\",\"frames\":[{"
		 "\"function\":\"worker\",\"file\":null,\"line\":0,\"column\":0,\"inlined\":false,"
		 "\"symbol_address\":\"0x%llx\",\"offset\":5}]}\n",
		 (unsigned long long)(worker + 5), (unsigned long long)worker);
	CHECK_STR(sw_buf_str(&out), want);
	sw_buf_finish(&out);
	/* an address before every symbol is unknown, not an error */
	n = sw_symbolicate_file_addr(s, &ref, 1, fr, 4, &err);
	CHECK_INT(n, 1);
	CHECK(fr[0].function == NULL);
	sw_symbolicator_free(s);
}

/* Many addresses at once answer as one by one, in input order. */
static void test_batch(const char *bin)
{
	struct sw_symbolicator *s = NULL;
	CHECK_INT(sw_symbolicator_new(SW_SYMBOLICATE_NO_DEMANGLE, &s), 0);
	struct sw_image_ref ref = {.path = bin};
	uint64_t start = nm_addr(bin, "_start"), worker = nm_addr(bin, "worker");
	uint64_t addrs[64];
	for (int i = 0; i < 64; i++)
		addrs[i] = (i % 2 ? start : worker) + (uint64_t)((i * 37) % 50);
	addrs[5] = addrs[9]; /* duplicates too */
	struct sw_symbolicate_batch batch = {0};
	size_t done = 0;
	CHECK_INT(sw_symbolicate_file_addrs(s, &ref, addrs, 64, &batch, &done, NULL), 0);
	CHECK_INT(done, 64);
	for (int i = 0; i < 64; i++) {
		struct sw_frame fr[SW_SYMBOLICATE_MAX_FRAMES];
		int n = sw_symbolicate_file_addr(s, &ref, addrs[i], fr, SW_SYMBOLICATE_MAX_FRAMES,
						 NULL);
		CHECK_INT(batch.count[i], n);
		for (int j = 0; j < n && (size_t)n == batch.count[i]; j++) {
			const struct sw_frame *b = &batch.frames[batch.first[i] + (size_t)j];
			CHECK(b->function == fr[j].function && b->file == fr[j].file &&
			      b->line == fr[j].line && b->column == fr[j].column);
		}
	}
	sw_symbolicate_batch_finish(&batch);
	sw_symbolicator_free(s);
}

/* An image named only by its build-id, found through the symbol search. */
static void test_by_id(const char *bin)
{
	struct sw_symsearch *ss = NULL;
	CHECK_INT(sw_symsearch_new(&ss), 0);
	if (!ss)
		return;
	sw_symsearch_set_cache_dir(ss, NULL);
	sw_symsearch_set_debug_root(ss, "");
	sw_symsearch_set_debuginfod(ss, false);
	CHECK_INT(sw_symsearch_add_path(ss, workdir), 0);
	struct sw_symbolicator *s = NULL;
	CHECK_INT(sw_symbolicator_new(SW_SYMBOLICATE_NO_DEMANGLE, &s), 0);
	sw_symbolicator_set_symsearch(s, ss);
	const struct sw_object *obj = NULL;
	struct sw_image_ref by_path = {.path = bin};
	CHECK(sw_symbolicator_image(s, &by_path, &obj, NULL) >= 0);
	uint8_t id[32];
	size_t id_len = obj ? obj->id_len : 0;
	CHECK(id_len > 0);
	if (obj)
		memcpy(id, obj->id, id_len);
	sw_symbolicator_free(s);

	CHECK_INT(sw_symbolicator_new(SW_SYMBOLICATE_NO_DEMANGLE, &s), 0);
	sw_symbolicator_set_symsearch(s, ss);
	struct sw_image_ref by_id = {.id = id, .id_len = id_len};
	uint64_t worker = nm_addr(bin, "worker");
	struct sw_frame fr[SW_SYMBOLICATE_MAX_FRAMES];
	struct sw_error err = {0};
	int n = sw_symbolicate_file_addr(s, &by_id, worker, fr, SW_SYMBOLICATE_MAX_FRAMES, &err);
	if (n < 0)
		fprintf(stderr, "by id: %s\n", sw_error_str(&err));
	CHECK(n >= 1);
	if (n >= 1)
		CHECK_STR(fr[n - 1].function, "worker");
	sw_symbolicator_free(s);
	sw_symsearch_free(ss);
}

static void test_errors(void)
{
	struct sw_symbolicator *s = NULL;
	CHECK_INT(sw_symbolicator_new(0, &s), 0);
	struct sw_frame fr[4];
	struct sw_error err = {0};
	struct sw_image_ref ref = {.path = "/nonexistent/binary"};
	CHECK_INT(sw_symbolicate_file_addr(s, &ref, 0x1000, fr, 4, &err), -ENOENT);
	CHECK(strstr(err.msg, "No such file") != NULL);
	static const uint8_t id[20] = {1, 2, 3};
	struct sw_image_ref by_id = {.id = id, .id_len = sizeof(id)};
	sw_error_clear(&err);
	CHECK(sw_symbolicate_file_addr(s, &by_id, 0x1000, fr, 4, &err) < 0);
	CHECK(strstr(err.msg, "no binary") != NULL);
	sw_symbolicator_free(s);

	uint64_t v = 0;
	CHECK_INT(sw_symbolicate_parse_addr("0x1f", &v), 0);
	CHECK_INT(v, 0x1f);
	CHECK_INT(sw_symbolicate_parse_addr("  DEADbeef \r", &v), 0);
	CHECK_INT(v, 0xdeadbeef);
	CHECK_INT(sw_symbolicate_parse_addr("0x", &v), -EINVAL);
	CHECK_INT(sw_symbolicate_parse_addr("12g", &v), -EINVAL);
	CHECK_INT(sw_symbolicate_parse_addr("0x10000000000000000", &v), -ERANGE);
}

/* The fast line scanner takes exactly the lines it promises, and parse_addr() the rest. */
static void test_scan_line(void)
{
	static const struct {
		const char *text;
		size_t len; /* 0: left to parse_addr() */
		uint64_t v;
	} cases[] = {
	    {"0x1f\n", 5, 0x1f},
	    {"0X1F\n", 5, 0x1f},
	    {"deadBEEF\n", 9, 0xdeadbeef},
	    {"0\n", 2, 0},
	    {"0x0\n", 4, 0},
	    {"ffffffffffffffff\n", 17, UINT64_MAX},
	    {"0x0123456789abcdef\n", 19, 0x0123456789abcdefull},
	    {"0x1ffffffffffffffff\n", 0, 0}, /* 17 digits */
	    {"0x\n", 0, 0},
	    {"\n", 0, 0},
	    {"0x1f\r\n", 0, 0},
	    {" 0x1f\n", 0, 0},
	    {"0x1f \n", 0, 0},
	    {"0x1g\n", 0, 0},
	    {"0x1f", 0, 0}, /* the last line, without its newline */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *t = cases[i].text;
		uint64_t v = 12345;
		size_t len = sw_symbolicate_scan_line(t, t + strlen(t), &v);
		CHECK_INT(len, cases[i].len);
		if (len)
			CHECK_INT(v, cases[i].v);
		else
			CHECK_INT(v, 12345);
	}
	/* the end is the buffer's, not the string's: a line cut by it is not taken */
	static const char two[] = "0x1f\n0x2\n";
	uint64_t v;
	CHECK_INT(sw_symbolicate_scan_line(two, two + 4, &v), 0);
	CHECK_INT(sw_symbolicate_scan_line(two, two + 5, &v), 5);
	CHECK_INT(sw_symbolicate_scan_line(two + 5, two + sizeof(two) - 1, &v), 4);
	CHECK_INT(v, 2);
	/*
	 * Lines in the middle of a large buffer take the scanner's word path:
	 * it must take what a plain parse of the line takes, digit by digit,
	 * for lines of every length and mistakes at every place.
	 */
	static const char alphabet[] = "0123456789abcdefABCDEFxXgG:/@`\n\r \x80\xff";
	char buf[64];
	srand(3);
	size_t taken = 0, differ = 0;
	for (int i = 0; i < 200000; i++) {
		size_t n = (size_t)(rand() % 24);
		int prefix = rand() % 3;
		size_t at = 0;
		if (prefix) {
			buf[at++] = '0';
			buf[at++] = prefix == 1 ? 'x' : 'X';
		}
		for (size_t k = 0; k < n; k++)
			buf[at++] = rand() % 4 ? "0123456789abcdefABCDEF"[rand() % 22]
					       : alphabet[rand() % (sizeof(alphabet) - 1)];
		buf[at++] = '\n';
		memset(buf + at, 'z', sizeof(buf) - at);
		/* what a line of 1 to 16 digits and a newline should give */
		size_t d = buf[0] == '0' && (buf[1] | 0x20) == 'x' ? 2 : 0, digits = 0;
		uint64_t want = 0;
		while (digits < 17 && strchr("0123456789abcdefABCDEF", buf[d + digits]) &&
		       buf[d + digits])
			want = want << 4 |
			       (uint64_t)(buf[d + digits] <= '9'   ? buf[d + digits] - '0'
					  : buf[d + digits] <= 'F' ? buf[d + digits] - 'A' + 10
								   : buf[d + digits] - 'a' + 10),
			digits++;
		size_t want_len =
		    digits >= 1 && digits <= 16 && buf[d + digits] == '\n' ? d + digits + 1 : 0;
		uint64_t got = 0;
		size_t len = sw_symbolicate_scan_line(buf, buf + sizeof(buf), &got);
		taken += len != 0;
		differ += len != want_len || (len && got != want);
	}
	CHECK_INT(differ, 0);
	CHECK(taken > 10000);
}

/* Frames of every length print alike, whether they fit the first room or not. */
static void test_print_lengths(void)
{
	static const size_t lens[] = {1, 7, 8, 9, 200, 383, 384, 385, 447, 448, 449, 1000, 5000};
	char *name = malloc(6000), *file = malloc(6000), *want = malloc(13000);
	struct sw_buf out;
	sw_buf_init(&out, 0);
	for (size_t a = 0; a < sizeof(lens) / sizeof(lens[0]); a++) {
		for (size_t b = 0; b < sizeof(lens) / sizeof(lens[0]); b += 3) {
			for (int sym = 0; sym < 2; sym++) {
				memset(name, 'n', lens[a]);
				name[lens[a]] = '\0';
				memset(file, 'f', lens[b]);
				file[lens[b]] = '\0';
				struct sw_frame f[2] = {
				    {.function = name,
				     .file = file,
				     .line = 4294967295u,
				     .column = 0},
				    {.function = NULL, .file = NULL, .line = 7, .column = 10}};
				if (sym) {
					f[0].flags = SW_FRAME_SYMBOL;
					f[0].offset = 0xabcdef0123ull;
				}
				snprintf(want, 13000, "%s%s\n%s:4294967295:0\n??\n??:7:10\n\n",
					 name, sym ? " + 0xabcdef0123" : "", file);
				sw_buf_reset(&out);
				CHECK_INT(sw_symbolicate_print_text(f, 2, &out), 0);
				CHECK_STR(sw_buf_str(&out), want);
			}
		}
	}
	sw_buf_finish(&out);
	free(name);
	free(file);
	free(want);
}

/*
 * Names that end at the last byte of a page, before one that cannot be
 * read: the copy must not read past them (a fault would end the test), and
 * every line and column number prints as printf prints it.
 */
static void test_print_edges(void)
{
	long page = sysconf(_SC_PAGESIZE);
	char *map = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(map != MAP_FAILED);
	if (map == MAP_FAILED)
		return;
	CHECK_INT(mprotect(map + page, (size_t)page, PROT_NONE), 0);
	static const uint32_t numbers[] = {0,     1,      9,      10,      11,         99,
					   100,   999,    1000,   9999,    10000,      65535,
					   99999, 100000, 123456, 1000000, 4000000000u};
	struct sw_buf out;
	sw_buf_init(&out, 0);
	char want[512];
	for (size_t len = 0; len < 70; len++) {
		char *name = map + page - 1 - len;
		memset(name, 'a' + (int)(len % 26), len);
		name[len] = '\0';
		uint32_t line = numbers[len % 17], column = numbers[(len * 7) % 17];
		struct sw_frame f = {
		    .function = name, .file = name, .line = line, .column = column};
		sw_buf_reset(&out);
		CHECK_INT(sw_symbolicate_print_text(&f, 1, &out), 0);
		snprintf(want, sizeof(want), "%s\n%s:%u:%u\n\n", name, name, line, column);
		CHECK_STR(sw_buf_str(&out), want);
	}
	/* a name longer than a frame's room, between frames that fit theirs */
	static char long_name[2000];
	memset(long_name, 'x', sizeof(long_name) - 1);
	struct sw_frame three[] = {{.function = "f", .file = "a.c", .line = 1},
				   {.function = long_name, .file = "b.c", .line = 22, .column = 3},
				   {.function = "g", .file = "c.c", .line = 333}};
	sw_buf_reset(&out);
	CHECK_INT(sw_symbolicate_print_text(three, 3, &out), 0);
	char *whole = NULL;
	CHECK(asprintf(&whole, "f\na.c:1:0\n%s\nb.c:22:3\ng\nc.c:333:0\n\n", long_name) > 0);
	CHECK_STR(sw_buf_str(&out), whole);
	free(whole);
	sw_buf_finish(&out);
	munmap(map, 2 * (size_t)page);
}

/* An image comes whole from the cache folder only once a run wrote it there, and never without one.
 */
static void test_image_cached(const char *bin)
{
	char cache[128];
	snprintf(cache, sizeof(cache), "%s/cache", workdir);
	struct sw_image_ref ref = {.path = bin};
	uint64_t worker = nm_addr(bin, "worker");
	struct sw_symbolicator *s = NULL;
	struct sw_frame fr[SW_SYMBOLICATE_MAX_FRAMES];
	for (int run = 0; run < 3; run++) {
		CHECK_INT(sw_symbolicator_new(0, &s), 0);
		CHECK_INT(sw_symbolicator_set_cache_dir(s, run == 2 ? NULL : cache), 0);
		/* the first run reads DWARF and symbols; the second maps both */
		CHECK(sw_symbolicator_image_cached(s, &ref) == (run == 1));
		CHECK(sw_symbolicate_file_addr(s, &ref, worker + 1, fr, SW_SYMBOLICATE_MAX_FRAMES,
					       NULL) > 0);
		sw_symbolicator_free(s); /* writes what it read */
	}
	struct sw_image_ref missing = {.path = "/nonexistent/binary"};
	CHECK_INT(sw_symbolicator_new(0, &s), 0);
	CHECK(!sw_symbolicator_image_cached(s, &missing));
	sw_symbolicator_free(s);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		sw_test_skip("usage: test-symbolicate SOURCE_ROOT");
	if (sh("command -v gcc-12 llvm-symbolizer-14 llvm-nm-14 llvm-objcopy-14 >/dev/null") != 0)
		sw_test_skip("gcc-12 or llvm 14 tools missing");
	snprintf(workdir, sizeof(workdir), "/tmp/sw-test-symbolicate-XXXXXX");
	if (!mkdtemp(workdir))
		sw_test_skip("no temporary directory");
	char bin[256];
	snprintf(bin, sizeof(bin), "%s/fs", workdir);
	if (sh("gcc-12 -O2 -g -ffreestanding -nostdlib -static -fasynchronous-unwind-tables "
	       "%s/tests/data/symbolize/freestanding.c -o %s",
	       argv[1], bin) != 0)
		sw_test_skip("cannot build the fixture");
	test_slide_and_return_address(bin);
	test_symbols_only(bin);
	test_batch(bin);
	test_by_id(bin);
	test_errors();
	test_scan_line();
	test_print_lengths();
	test_print_edges();
	test_image_cached(bin);
	sh("rm -rf %s", workdir);
	return sw_test_end();
}
