/*
 * Tests of the ELF reader (elf*.c) and sw_object_*: fixtures built here
 * from tests/data/symbolize/freestanding.c by gcc and clang for x86-64,
 * i386, 32- and 64-bit PowerPC (big-endian), then compressed, stripped or
 * split by llvm-objcopy.  Expected values come from llvm-readelf, llvm-nm
 * and llvm-dwarfdump, never from the reader.  Then truncated and corrupted
 * copies must give errors or nothing, never a crash.
 *
 * usage: test-elf SOURCE_ROOT
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dwarf/dwarf.h"
#include "objfile/object.h"
#include "test.h"

static char workdir[256];

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* The first line of a command's output, or "" */
static void sh_line(char *out, size_t size, const char *cmd)
{
	out[0] = '\0';
	FILE *p = popen(cmd, "r");
	if (!p)
		return;
	if (!fgets(out, (int)size, p))
		out[0] = '\0';
	pclose(p);
	out[strcspn(out, "\n")] = '\0';
}

static uint64_t nm_addr(const char *bin, const char *sym)
{
	char cmd[2048], line[256];
	snprintf(cmd, sizeof(cmd), "llvm-nm-14 %s | awk '$3 == \"%s\" {print $1}'", bin, sym);
	sh_line(line, sizeof(line), cmd);
	return strtoull(line, NULL, 16);
}

static void hex(const uint8_t *id, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
	out[2 * n] = '\0';
}

/* The function starts are the FDEs llvm-dwarfdump lists, each once. */
static void check_starts(const struct sw_object *obj, const char *bin)
{
	char cmd[2048], line[256];
	snprintf(cmd, sizeof(cmd),
		 "llvm-dwarfdump-14 --eh-frame %s | sed -n '/^.eh_frame contents:/,$ "
		 "s/.*FDE.*pc=\\([0-9a-f]*\\)\\.\\.\\..*/\\1/p' | sort -u",
		 bin);
	FILE *p = popen(cmd, "r");
	size_t fdes = 0, found = 0;
	while (p && fgets(line, sizeof(line), p)) {
		uint64_t pc = strtoull(line, NULL, 16);
		fdes++;
		for (size_t i = 0; i < obj->nfunction_starts; i++)
			found += obj->function_starts[i] == pc;
	}
	if (p)
		pclose(p);
	CHECK(fdes > 0);
	CHECK_INT(found, fdes);
	CHECK_INT(obj->nfunction_starts, fdes);
}

static void check_object(const char *bin, const char *arch)
{
	struct sw_object *obj = NULL;
	struct sw_error err = {0};
	int r = sw_object_open(bin, NULL, &obj, &err);
	CHECK_INT(r, 0);
	if (r < 0) {
		fprintf(stderr, "%s: %s\n", bin, sw_error_str(&err));
		return;
	}
	CHECK_STR(obj->arch, arch);
	CHECK(obj->format == SW_OBJECT_ELF);

	char cmd[2048], line[256], idhex[80];
	snprintf(cmd, sizeof(cmd), "llvm-readelf-14 -n %s | awk '/Build ID/ {print $3}'", bin);
	sh_line(line, sizeof(line), cmd);
	hex(obj->id, obj->id_len, idhex);
	CHECK_STR(idhex, line);

	snprintf(cmd, sizeof(cmd),
		 "llvm-readelf-14 -l %s | awk '$1 == \"LOAD\" && / E / {print $3; exit}'", bin);
	sh_line(line, sizeof(line), cmd);
	CHECK_INT(obj->text_vmaddr, strtoull(line, NULL, 16));

	uint64_t worker = nm_addr(bin, "worker");
	CHECK(worker != 0);
	const struct sw_symbol *s = sw_object_find_symbol(obj, worker + 1);
	CHECK(s != NULL);
	if (s)
		CHECK_STR(s->name, "worker");

	check_starts(obj, bin);
	/*
	 * The same starts from the FDEs themselves when there is no
	 * .eh_frame_hdr table to read them from (gcc's static fixture has
	 * none; lld makes one).
	 */
	char nohdr[1100];
	snprintf(nohdr, sizeof(nohdr), "%s.nohdr", bin);
	CHECK_INT(sh("llvm-objcopy-14 --remove-section=.eh_frame_hdr %s %s", bin, nohdr), 0);
	struct sw_object *bare = NULL;
	CHECK_INT(sw_object_open(nohdr, NULL, &bare, NULL), 0);
	if (bare) {
		CHECK_INT(bare->nfunction_starts, obj->nfunction_starts);
		for (size_t i = 0; i < bare->nfunction_starts && i < obj->nfunction_starts; i++)
			CHECK_INT(bare->function_starts[i], obj->function_starts[i]);
		sw_object_free(bare);
	}

	/* the DWARF names worker where nm puts it */
	CHECK(obj->has_debug_info);
	struct sw_dwarf *d = NULL;
	CHECK_INT(sw_dwarf_new(&obj->dwarf, &d, &err), 0);
	struct sw_dwarf_frame fr[8];
	int n = d ? sw_dwarf_lookup(d, worker, 0, fr, 8, &err) : -1;
	CHECK(n >= 1);
	if (n >= 1)
		CHECK_STR(fr[n - 1].function, "worker");
	sw_dwarf_free(d);
	sw_object_free(obj);
}

/* A compressed copy must give the same DWARF bytes as the original. */
static void check_compressed(const char *bin, const char *how)
{
	char out[1024];
	snprintf(out, sizeof(out), "%s.%s", bin, how);
	if (sh("llvm-objcopy-14 --compress-debug-sections=%s %s %s 2>/dev/null || "
	       "objcopy --compress-debug-sections=%s %s %s",
	       how, bin, out, how, bin, out) != 0) {
		printf("cannot compress with %s\n", how);
		return;
	}
	struct sw_object *a = NULL, *b = NULL;
	CHECK_INT(sw_object_open(bin, NULL, &a, NULL), 0);
	CHECK_INT(sw_object_open(out, NULL, &b, NULL), 0);
	if (a && b) {
		const struct sw_section *sa = &a->dwarf.info, *sb = &b->dwarf.info;
		CHECK(sa->size > 0);
		CHECK_INT(sa->size, sb->size);
		CHECK(sa->size == sb->size && memcmp(sa->data, sb->data, sa->size) == 0);
		CHECK_INT(a->dwarf.line.size, b->dwarf.line.size);
		CHECK_INT(a->dwarf.abbrev.size, b->dwarf.abbrev.size);
	}
	sw_object_free(a);
	sw_object_free(b);
}

static void check_stripped(const char *bin)
{
	char out[1024], dbg[1024];
	snprintf(out, sizeof(out), "%s.stripped", bin);
	snprintf(dbg, sizeof(dbg), "%s.debug", bin);
	CHECK_INT(sh("llvm-objcopy-14 --only-keep-debug %s %s && "
		     "llvm-objcopy-14 --strip-all --add-gnu-debuglink=%s %s %s",
		     bin, dbg, dbg, bin, out),
		  0);
	struct sw_object *obj = NULL;
	CHECK_INT(sw_object_open(out, NULL, &obj, NULL), 0);
	if (!obj)
		return;
	CHECK(!obj->has_debug_info);
	CHECK(obj->debuglink && strcmp(obj->debuglink, strrchr(dbg, '/') + 1) == 0);
	uint64_t worker = nm_addr(bin, "worker");
	const struct sw_symbol *s = sw_object_find_symbol(obj, worker + 2);
	CHECK(s && s->addr == worker && (s->flags & SW_SYMBOL_SYNTHETIC));
	sw_object_free(obj);

	/* the debug file alone has the DWARF and the same build-id */
	struct sw_object *d = NULL, *orig = NULL;
	CHECK_INT(sw_object_open(dbg, NULL, &d, NULL), 0);
	CHECK_INT(sw_object_open(bin, NULL, &orig, NULL), 0);
	if (d && orig) {
		CHECK(d->has_debug_info);
		CHECK(d->id_len == orig->id_len && memcmp(d->id, orig->id, d->id_len) == 0);
	}
	sw_object_free(d);
	sw_object_free(orig);
}

static uint8_t *slurp(const char *path, size_t *ret_size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc((size_t)n);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*ret_size = (size_t)n;
	return buf;
}

/* Loads data as an ELF file and asks its DWARF about a few addresses. */
static int poke(const uint8_t *data, size_t size, uint64_t addr)
{
	struct sw_object obj = {0};
	struct sw_error err = {0};
	int r = sw_elf_load(&obj, data, size, &err);
	if (r < 0)
		CHECK(err.msg[0] != '\0');
	if (r >= 0 && obj.has_debug_info) {
		struct sw_dwarf *d = NULL;
		if (sw_dwarf_new(&obj.dwarf, &d, &err) >= 0) {
			struct sw_dwarf_frame fr[16];
			for (uint64_t a = addr; a < addr + 64; a += 7)
				sw_dwarf_lookup(d, a, 0, fr, 16, &err);
			sw_dwarf_free(d);
		}
	}
	if (obj.release)
		obj.release(&obj);
	return r;
}

static void check_hostile(const char *bin)
{
	size_t size;
	uint8_t *orig = slurp(bin, &size);
	CHECK(orig != NULL);
	if (!orig)
		return;
	uint64_t worker = nm_addr(bin, "worker");
	uint8_t *buf = malloc(size);
	/* truncations: a short header is an error, the rest must not crash */
	for (size_t n = 0; n < size; n += n < 256 ? 1 : 97) {
		memcpy(buf, orig, n);
		int r = poke(buf, n, worker);
		if (n < 52)
			CHECK(r < 0);
	}
	/* a section header table past the end is an error naming its offset */
	memcpy(buf, orig, size);
	size_t shoff_at = orig[4] == 2 ? 40 : 32;
	memset(buf + shoff_at, 0x7f, orig[4] == 2 ? 8 : 4);
	struct sw_object obj = {0};
	struct sw_error err = {0};
	CHECK(sw_elf_load(&obj, buf, size, &err) < 0);
	CHECK(strstr(err.msg, "offset") != NULL);
	if (obj.release)
		obj.release(&obj);
	/* random corruption, a few bytes at a time */
	srand(4);
	for (int i = 0; i < 3000; i++) {
		memcpy(buf, orig, size);
		int k = 1 + rand() % 8;
		for (int j = 0; j < k; j++)
			buf[(size_t)rand() % size] = (uint8_t)rand();
		poke(buf, size, worker);
	}
	free(buf);
	free(orig);
}

static bool have(const char *tool)
{
	return sh("command -v %s >/dev/null 2>&1", tool) == 0;
}

/*
 * Symbols above 2^38 (a kernel's, linked at 0xffffffff81000000) are sorted
 * by a wider key than the usual ones: the same answers as llvm-nm.
 */
static void check_high_addresses(const char *src)
{
	char bin[512];
	snprintf(bin, sizeof(bin), "%s/fs-kernel", workdir);
	if (sh("gcc-12 -O2 -g -ffreestanding -nostdlib -static -mcmodel=kernel -fno-pic -no-pie "
	       "-fasynchronous-unwind-tables -Wl,-Ttext-segment=0xffffffff81000000 %s -o %s",
	       src, bin) != 0) {
		printf("cannot build a kernel-like fixture with gcc-12\n");
		return;
	}
	struct sw_object *obj = NULL;
	CHECK_INT(sw_object_open(bin, NULL, &obj, NULL), 0);
	if (!obj)
		return;
	uint64_t worker = nm_addr(bin, "worker"), start = nm_addr(bin, "_start");
	CHECK(worker >> 38 && start >> 38);
	const struct sw_symbol *s = sw_object_find_symbol(obj, worker + 1);
	CHECK(s && s->addr == worker && strcmp(s->name, "worker") == 0);
	s = sw_object_find_symbol(obj, start + 1);
	CHECK(s && s->addr == start && strcmp(s->name, "_start") == 0);
	sw_object_free(obj);
}

/* The symbol sort: by the high bits only, ties in their order (the low bits rise). */
static void check_sort_high(void)
{
	enum { N = 5000 };
	static uint64_t v[N];
	uint64_t x = 88172645463325252ull;
	for (size_t i = 0; i < N; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		v[i] = (x % 97) << 26 | i; /* many ties */
	}
	CHECK_INT(sw_object_sort_u64_high(v, N, 26), 0);
	size_t bad = 0;
	for (size_t i = 1; i < N; i++)
		bad += (v[i] >> 26) < (v[i - 1] >> 26) ||
		       ((v[i] >> 26) == (v[i - 1] >> 26) && v[i] < v[i - 1]);
	CHECK_INT(bad, 0);
}

int main(int argc, char **argv)
{
	check_sort_high();
	if (argc < 2)
		sw_test_skip("usage: test-elf SOURCE_ROOT");
	if (!have("llvm-readelf-14") || !have("llvm-objcopy-14") || !have("llvm-dwarfdump-14"))
		sw_test_skip("llvm 14 tools missing");
	snprintf(workdir, sizeof(workdir), "/tmp/sw-test-elf-XXXXXX");
	if (!mkdtemp(workdir))
		sw_test_skip("no temporary directory");
	char src[1024];
	snprintf(src, sizeof(src), "%s/tests/data/symbolize/freestanding.c", argv[1]);
	static const struct {
		const char *cc, *target, *arch;
	} builds[] = {
	    {"gcc-12", NULL, "x86_64"},
	    {"clang-14", "x86_64-linux-gnu", "x86_64"},
	    {"clang-19", "i386-linux-gnu", "i386"},
	    {"clang-19", "powerpc-linux-gnu", "ppc"},
	    {"clang-19", "powerpc64-linux-gnu -mabi=elfv2", "ppc64"},
	    {"clang-19", "aarch64-linux-gnu", "aarch64"},
	};
	int built = 0;
	for (size_t i = 0; i < sizeof(builds) / sizeof(builds[0]); i++) {
		char bin[512];
		snprintf(bin, sizeof(bin), "%s/fs-%zu", workdir, i);
		if (!have(builds[i].cc))
			continue;
		int r =
		    builds[i].target
			? sh("%s -target %s -O2 -g -gdwarf-5 -ffreestanding -nostdlib -static "
			     "-fasynchronous-unwind-tables -fuse-ld=lld -Wl,--build-id %s -o %s",
			     builds[i].cc, builds[i].target, src, bin)
			: sh("%s -O2 -g -ffreestanding -nostdlib -static "
			     "-fasynchronous-unwind-tables "
			     "-Wl,--build-id %s -o %s",
			     builds[i].cc, src, bin);
		if (r != 0) {
			printf("cannot build with %s %s\n", builds[i].cc,
			       builds[i].target ? builds[i].target : "");
			continue;
		}
		built++;
		printf("fixture %s (%s)\n", bin, builds[i].arch);
		check_object(bin, builds[i].arch);
		check_compressed(bin, "zlib");
		check_compressed(bin, "zlib-gnu");
		check_stripped(bin);
		if (i == 0 || i == 3)
			check_hostile(bin);
	}
	if (have("gcc-12"))
		check_high_addresses(src);
	sh("rm -rf %s", workdir);
	if (!built)
		sw_test_skip("no compiler");
	return sw_test_end();
}
