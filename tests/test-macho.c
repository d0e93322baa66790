/*
 * Tests for the Mach-O reader (macho*.c) against fixtures that
 * make-macho-fixtures.sh builds with clang, ld64.lld, llvm-lipo, llvm-strip
 * and dsymutil, checked against what llvm-nm, llvm-objdump and
 * llvm-dwarfdump say about the same files and against the fixture sources.
 * The armv7 image and the hostile inputs are written here byte by byte from
 * the documented header layouts, since no toolchain here makes them.
 *
 * usage: test-macho FIXTURE-DIR
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "objfile/macho.h"
#include "objfile/object.h"
#include "test.h"

static const char *dir;

struct map {
	uint8_t *data;
	size_t size;
};

static char *path_of(const char *name)
{
	static char buf[4096];

	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	return buf;
}

static struct map map_file(const char *name)
{
	struct map m = {0};
	struct stat st;
	int fd = open(path_of(name), O_RDONLY);

	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "cannot open %s\n", path_of(name));
		exit(1);
	}
	m.size = (size_t)st.st_size;
	m.data = malloc(m.size ? m.size : 1);
	if (read(fd, m.data, m.size) != (ssize_t)m.size)
		exit(1);
	close(fd);
	return m;
}

static char *slurp(const char *name)
{
	struct map m = map_file(name);
	char *s = realloc(m.data, m.size + 1);

	s[m.size] = 0;
	return s;
}

static int load(const char *name, const char *arch, struct sw_object *obj, struct map *m,
		struct sw_error *err)
{
	*m = map_file(name);
	memset(obj, 0, sizeof(*obj));
	sw_error_clear(err);
	return sw_macho_load(obj, m->data, m->size, arch, err);
}

static void unload(struct sw_object *obj, struct map *m)
{
	if (obj->release)
		obj->release(obj);
	free(m->data);
}

/* The value after "key " following the first line that contains anchor. */
static uint64_t header_value(const char *text, const char *anchor, const char *key)
{
	const char *p = strstr(text, anchor);
	char pat[64];

	if (!p)
		return UINT64_MAX;
	snprintf(pat, sizeof(pat), " %s ", key);
	p = strstr(p, pat);
	return p ? strtoull(p + strlen(pat), NULL, 0) : UINT64_MAX;
}

static void uuid_from_headers(const char *text, char out[37])
{
	const char *p = strstr(text, " uuid ");

	out[0] = 0;
	if (p)
		snprintf(out, 37, "%.36s", p + 6);
}

static const struct sw_symbol *symbol_at(const struct sw_object *obj, uint64_t addr)
{
	for (size_t i = 0; i < obj->nsymbols; i++)
		if (obj->symbols[i].addr == addr)
			return &obj->symbols[i];
	return NULL;
}

static bool has_start(const struct sw_object *obj, uint64_t addr)
{
	for (size_t i = 0; i < obj->nfunction_starts; i++)
		if (obj->function_starts[i] == addr)
			return true;
	return false;
}

/* Every text symbol llvm-nm lists (but __mh_execute_header) must be ours, and no others. */
static size_t check_nm(const struct sw_object *obj, const char *nmfile, bool stripped_ok)
{
	char *text = slurp(nmfile), *line, *save = NULL;
	size_t n = 0;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char type, name[512];
		unsigned long long addr;
		const struct sw_symbol *s;

		if (sscanf(line, "%llx %c %511s", &addr, &type, name) != 3 ||
		    (type != 'T' && type != 't') || strcmp(name, "__mh_execute_header") == 0)
			continue;
		n++;
		s = symbol_at(obj, addr);
		CHECK(s != NULL);
		if (!s)
			continue;
		CHECK_STR(s->name, name);
		CHECK_INT(!!(s->flags & SW_SYMBOL_GLOBAL), type == 'T');
		CHECK(!(s->flags & SW_SYMBOL_FROM_EXPORTS) || stripped_ok);
	}
	free(text);
	return n;
}

static void check_sorted(const struct sw_object *obj)
{
	for (size_t i = 1; i < obj->nsymbols; i++)
		CHECK(obj->symbols[i - 1].addr < obj->symbols[i].addr);
	for (size_t i = 1; i < obj->nfunction_starts; i++)
		CHECK(obj->function_starts[i - 1] < obj->function_starts[i]);
}

/* Thin arm64/x86_64 executables: header facts, symbols and starts. */
static void test_thin(const char *name, const char *arch, bool with_starts, size_t min)
{
	char hname[256], nmname[256], uuid[37], ours[37];
	struct sw_object obj;
	struct sw_error err;
	struct map m;
	char *headers;
	size_t n;

	snprintf(hname, sizeof(hname), "%s.headers", name);
	snprintf(nmname, sizeof(nmname), "%s.nm", name);
	headers = slurp(hname);
	CHECK_INT(load(name, NULL, &obj, &m, &err), 0);
	CHECK_STR(obj.arch, arch);
	CHECK_INT(obj.format, SW_OBJECT_MACHO);
	CHECK_INT(obj.id_len, 16);
	uuid_from_headers(headers, uuid);
	sw_macho_uuid_str(obj.id, ours);
	CHECK_STR(ours, uuid);
	CHECK_INT(obj.text_vmaddr, header_value(headers, "segname __TEXT", "vmaddr"));
	CHECK_INT(obj.text_size, header_value(headers, "segname __TEXT", "vmsize"));
	CHECK(!obj.has_debug_info);
	CHECK_INT(obj.dwarf.addr_size, 8);
	n = check_nm(&obj, nmname, false);
	CHECK(n >= min);
	CHECK_INT(obj.nsymbols, n);
	check_sorted(&obj);
	if (with_starts) {
		CHECK(obj.nfunction_starts >= n);
		for (size_t i = 0; i < obj.nsymbols; i++)
			CHECK(has_start(&obj, obj.symbols[i].addr));
	} else {
		CHECK_INT(obj.nfunction_starts, 0);
	}
	unload(&obj, &m);
	free(headers);
}

/* The function starts equal llvm-objdump --function-starts. */
static void test_function_starts(const char *name, const char *startsfile)
{
	char *text = slurp(startsfile), *line, *save = NULL;
	struct sw_object obj;
	struct sw_error err;
	struct map m;
	size_t n = 0;

	CHECK_INT(load(name, NULL, &obj, &m, &err), 0);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long a;
		char tail;

		if (sscanf(line, "%llx%c", &a, &tail) < 1 || strchr(line, ':'))
			continue;
		CHECK(n < obj.nfunction_starts && obj.function_starts[n] == a);
		n++;
	}
	CHECK_INT(obj.nfunction_starts, n);
	CHECK(n >= 9);
	unload(&obj, &m);
	free(text);
}

/*
 * On a stripped image the exported names come back from the trie at the
 * addresses the unstripped build lists, and every function (static ones
 * included) still has its exact start.
 */
static void test_stripped(const char *stripped, const char *truth_nm)
{
	char *text = slurp(truth_nm), *line, *save = NULL;
	struct sw_object obj;
	struct sw_error err;
	struct map m;
	int globals = 0, statics = 0;

	CHECK_INT(load(stripped, NULL, &obj, &m, &err), 0);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char type, name[512];
		unsigned long long addr;
		const struct sw_symbol *s;

		if (sscanf(line, "%llx %c %511s", &addr, &type, name) != 3 ||
		    strcmp(name, "__mh_execute_header") == 0)
			continue;
		CHECK(has_start(&obj, addr));
		s = symbol_at(&obj, addr);
		if (type == 'T') {
			globals++;
			CHECK(s && strcmp(s->name, name) == 0);
			CHECK(s && (s->flags & SW_SYMBOL_FROM_EXPORTS));
			CHECK(s && s->size == 0); /* the trie gives none */
		} else if (type == 't') {
			/* Statics and hidden functions have no name left anywhere. */
			statics++;
			CHECK(s == NULL);
		}
	}
	CHECK(globals >= 2);
	unload(&obj, &m);
	free(text);
	printf("%s: %d exported names from the trie, %d unnamed starts\n", stripped, globals,
	       statics);
}

static void uuid_of_arch(const char *uuidfile, const char *arch, uint8_t out[16])
{
	char *text = slurp(uuidfile), *line, *save = NULL, want[32];

	memset(out, 0, 16);
	snprintf(want, sizeof(want), "(%s)", arch);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (strncmp(line, "UUID: ", 6) == 0 && strstr(line, want))
			CHECK_INT(sw_macho_uuid_parse(strndupa(line + 6, 36), out), 0);
	free(text);
}

static void test_universal(const char *name)
{
	struct sw_object obj;
	struct sw_error err;
	struct map m;
	uint8_t uuid[16];

	CHECK_INT(load(name, NULL, &obj, &m, &err), -EINVAL);
	CHECK(strstr(err.msg, "arm64, x86_64") || strstr(err.msg, "x86_64, arm64"));
	unload(&obj, &m);
	CHECK_INT(load(name, "armv7", &obj, &m, &err), -ENOENT);
	CHECK(strstr(err.msg, "'armv7'") &&
	      (strstr(err.msg, "arm64, x86_64") || strstr(err.msg, "x86_64, arm64")));
	unload(&obj, &m);
	for (int i = 0; i < 2; i++) {
		const char *arch = i ? "x86_64" : "arm64";

		uuid_of_arch("app-universal.uuid", arch, uuid);
		CHECK_INT(load(name, i ? "amd64" : "aarch64", &obj, &m, &err), 0);
		CHECK_STR(obj.arch, arch);
		unload(&obj, &m);
		CHECK_INT(load(name, arch, &obj, &m, &err), 0);
		CHECK_STR(obj.arch, arch);
		CHECK(memcmp(obj.id, uuid, 16) == 0);
		CHECK(symbol_at(&obj, obj.symbols[0].addr) != NULL);
		CHECK(obj.nsymbols >= 9);
		unload(&obj, &m);
	}
}

static void test_arm64e(void)
{
	struct sw_object obj;
	struct sw_error err;
	struct map m;
	uint8_t uuid[16];

	CHECK_INT(load("app-arm64e", NULL, &obj, &m, &err), 0);
	CHECK_STR(obj.arch, "arm64e");
	unload(&obj, &m);
	for (int i = 0; i < 2; i++) {
		const char *arch = i ? "arm64e" : "arm64";

		uuid_of_arch("app-arm64-arm64e.uuid", arch, uuid);
		CHECK_INT(load("app-arm64-arm64e", arch, &obj, &m, &err), 0);
		CHECK_STR(obj.arch, arch);
		CHECK(memcmp(obj.id, uuid, 16) == 0);
		unload(&obj, &m);
	}
}

static void test_dsym(const char *bundle, const char *binary, const char *arch, int version)
{
	char hname[256], *path = NULL, found_arch[16];
	struct sw_object bin, obj;
	struct sw_error err;
	struct map mb, m;
	struct stat st;

	snprintf(hname, sizeof(hname), "%s", binary);
	CHECK_INT(load(hname, arch, &bin, &mb, &err), 0);
	CHECK_INT(sw_macho_dsym_find(path_of(bundle), bin.id, arch, &path, found_arch, &err), 0);
	if (!path) {
		unload(&bin, &mb);
		return;
	}
	CHECK_STR(found_arch, bin.arch);
	/* Also found from the directory holding the bundle, and from the file itself. */
	{
		char *p2 = NULL;

		CHECK_INT(sw_macho_dsym_find(dir, bin.id, NULL, &p2, NULL, &err), 0);
		free(p2);
		CHECK_INT(sw_macho_dsym_find(path, bin.id, arch, &p2, NULL, &err), 0);
		free(p2);
	}
	CHECK(stat(path, &st) == 0);
	m = (struct map){0};
	{
		int fd = open(path, O_RDONLY);

		m.size = (size_t)st.st_size;
		m.data = malloc(m.size);
		CHECK(read(fd, m.data, m.size) == (ssize_t)m.size);
		close(fd);
	}
	memset(&obj, 0, sizeof(obj));
	CHECK_INT(sw_macho_load(&obj, m.data, m.size, found_arch, &err), 0);
	CHECK(memcmp(obj.id, bin.id, 16) == 0);
	CHECK(obj.has_debug_info);
	CHECK(obj.dwarf.info.size > 0 && obj.dwarf.abbrev.size > 0 && obj.dwarf.line.size > 0 &&
	      obj.dwarf.str.size > 0);
	/* The unit header's version field (after the 4-byte length). */
	CHECK_INT(obj.dwarf.info.data[4] | obj.dwarf.info.data[5] << 8, version);
	if (version == 5)
		CHECK(obj.dwarf.str_offsets.size > 0 && obj.dwarf.addr.size > 0);
	CHECK_INT(obj.text_vmaddr, bin.text_vmaddr);
	/* dSYMs keep the symbol table: the same functions as the binary. */
	CHECK_INT(obj.nsymbols, bin.nsymbols);
	CHECK_INT(obj.dwarf.addr_size, 8);
	unload(&obj, &m);
	unload(&bin, &mb);
	free(path);
}

/* The section sizes in the dSYM equal llvm-objdump's. */
static void test_dsym_sections(void)
{
	char *headers = slurp("app-arm64.dSYM.headers");
	struct sw_object obj;
	struct sw_error err;
	struct map m;

	CHECK_INT(load("app-arm64.dSYM/Contents/Resources/DWARF/app-arm64", NULL, &obj, &m, &err),
		  0);
	CHECK_INT(obj.dwarf.info.size, header_value(headers, "sectname __debug_info\n", "size"));
	CHECK_INT(obj.dwarf.abbrev.size,
		  header_value(headers, "sectname __debug_abbrev\n", "size"));
	CHECK_INT(obj.dwarf.line.size, header_value(headers, "sectname __debug_line\n", "size"));
	CHECK_INT(obj.dwarf.str.size, header_value(headers, "sectname __debug_str\n", "size"));
	CHECK_INT(obj.dwarf.str_offsets.size,
		  header_value(headers, "sectname __debug_str_offs\n", "size"));
	CHECK_INT(obj.dwarf.line_str.size,
		  header_value(headers, "sectname __debug_line_str\n", "size"));
	CHECK_INT(obj.dwarf.aranges.size,
		  header_value(headers, "sectname __debug_aranges\n", "size"));
	CHECK_INT(obj.dwarf.info.addr, header_value(headers, "sectname __debug_info\n", "addr"));
	CHECK_INT(obj.dwarf.info.data - m.data,
		  header_value(headers, "sectname __debug_info\n", "offset"));
	unload(&obj, &m);
	free(headers);
}

static void test_universal_dsym(void)
{
	uint8_t uuid[16];
	char *path = NULL, arch[16];
	struct sw_error err;

	uuid_of_arch("app-universal.dSYM.uuid", "x86_64", uuid);
	CHECK_INT(sw_macho_dsym_find(path_of("app-universal.dSYM"), uuid, NULL, &path, arch, &err),
		  0);
	CHECK_STR(arch, "x86_64");
	free(path);
	path = NULL;
	uuid[0] ^= 1;
	CHECK_INT(sw_macho_dsym_find(path_of("app-universal.dSYM"), uuid, NULL, &path, arch, &err),
		  -ENOENT);
	CHECK(strstr(err.msg, "no dSYM matching UUID") != NULL);
	CHECK(path == NULL);
}

/* Little-endian writers for the hand-made images. */
static void w16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void w32(uint8_t *p, uint32_t v)
{
	w16(p, v);
	w16(p + 2, v >> 16);
}

static void w32be(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/*
 * A 32-bit armv7 executable: mach_header (28), LC_SEGMENT __TEXT with one
 * __text section (56 + 68), LC_UUID (24), LC_SYMTAB (24),
 * LC_FUNCTION_STARTS (16); then code, the start deltas, two nlists and the
 * strings.  Thumb functions: the starts carry bit 0, the symbols
 * N_ARM_THUMB_DEF.
 */
static size_t make_armv7(uint8_t *b)
{
	const uint32_t text_addr = 0x4000 + 0x200, base = 0x4000;
	const size_t cmds = 56 + 68 + 24 + 24 + 16;
	uint8_t *p;

	memset(b, 0, 0x400);
	w32(b, 0xfeedface);
	w32(b + 4, 12); /* CPU_TYPE_ARM */
	w32(b + 8, 9);  /* CPU_SUBTYPE_ARM_V7 */
	w32(b + 12, 2); /* MH_EXECUTE */
	w32(b + 16, 4); /* ncmds */
	w32(b + 20, (uint32_t)cmds);
	p = b + 28;
	w32(p, 0x1); /* LC_SEGMENT */
	w32(p + 4, 56 + 68);
	memcpy(p + 8, "__TEXT", 6);
	w32(p + 24, base);   /* vmaddr */
	w32(p + 28, 0x1000); /* vmsize */
	w32(p + 32, 0);      /* fileoff */
	w32(p + 36, 0x400);  /* filesize */
	w32(p + 48, 1);      /* nsects */
	p += 56;
	memcpy(p, "__text", 6);
	memcpy(p + 16, "__TEXT", 6);
	w32(p + 32, text_addr);
	w32(p + 36, 0x40);
	w32(p + 40, 0x200);      /* offset */
	w32(p + 56, 0x80000400); /* pure and some instructions */
	p += 68;
	w32(p, 0x1b); /* LC_UUID */
	w32(p + 4, 24);
	for (int i = 0; i < 16; i++)
		p[8 + i] = (uint8_t)(0xa0 + i);
	p += 24;
	w32(p, 0x2); /* LC_SYMTAB */
	w32(p + 4, 24);
	w32(p + 8, 0x300); /* symoff */
	w32(p + 12, 2);
	w32(p + 16, 0x380); /* stroff */
	w32(p + 20, 0x20);
	p += 24;
	w32(p, 0x26); /* LC_FUNCTION_STARTS */
	w32(p + 4, 16);
	w32(p + 8, 0x280);
	w32(p + 12, 8);
	/* Starts: base + 0x201 (Thumb), then + 0x20. */
	b[0x280] = 0x81;
	b[0x281] = 0x04;
	b[0x282] = 0x20;
	/* nlist: strx, type, sect, desc, value */
	w32(b + 0x300, 1);
	b[0x304] = 0x0f; /* N_SECT | N_EXT */
	b[0x305] = 1;
	w16(b + 0x306, 0x8); /* N_ARM_THUMB_DEF */
	w32(b + 0x308, text_addr);
	w32(b + 0x30c, 10);
	b[0x310] = 0x0e; /* N_SECT, local */
	b[0x311] = 1;
	w16(b + 0x312, 0x8);
	w32(b + 0x314, text_addr + 0x20);
	memcpy(b + 0x381, "_thumb_a\0_thumb_b", 18);
	return 0x400;
}

static void test_armv7(void)
{
	uint8_t thin[0x400], fat[0x2000];
	struct sw_object obj;
	struct sw_error err;
	size_t n = make_armv7(thin);
	struct map m = {0};

	/* Inside a universal file, after an arm64 slice header pointing at a copy too. */
	memset(fat, 0, sizeof(fat));
	w32be(fat, 0xcafebabe);
	w32be(fat + 4, 2);
	w32be(fat + 8, 12); /* armv7 */
	w32be(fat + 12, 9);
	w32be(fat + 16, 0x1000); /* offset */
	w32be(fat + 20, (uint32_t)n);
	w32be(fat + 24, 14); /* align 2^14 */
	w32be(fat + 28, 7);  /* i386: the same image would disagree, so use a copy */
	w32be(fat + 32, 3);
	w32be(fat + 36, 0x1800);
	w32be(fat + 40, (uint32_t)n);
	w32be(fat + 44, 12);
	memcpy(fat + 0x1000, thin, n);
	memcpy(fat + 0x1800, thin, n);
	w32(fat + 0x1800 + 4, 7); /* CPU_TYPE_X86 */
	w32(fat + 0x1800 + 8, 3);
	for (int i = 0; i < 3; i++) {
		const uint8_t *d = i == 0 ? thin : fat;
		size_t size = i == 0 ? n : sizeof(fat);
		const char *arch = i == 2 ? "i386" : i == 1 ? "armv7" : NULL;

		memset(&obj, 0, sizeof(obj));
		CHECK_INT(sw_macho_load(&obj, d, size, arch, &err), 0);
		CHECK_STR(obj.arch, i == 2 ? "i386" : "armv7");
		CHECK_INT(obj.dwarf.addr_size, 4);
		CHECK_INT(obj.id_len, 16);
		CHECK_INT(obj.id[0], 0xa0);
		CHECK_INT(obj.text_vmaddr, 0x4000);
		CHECK_INT(obj.text_size, 0x1000);
		CHECK_INT(obj.nfunction_starts, 2);
		CHECK_INT(obj.function_starts[0], 0x4200);
		CHECK_INT(obj.function_starts[1], 0x4220);
		CHECK_INT(obj.nsymbols, 2);
		CHECK_STR(obj.symbols[0].name, "_thumb_a");
		CHECK_INT(obj.symbols[0].flags & SW_SYMBOL_GLOBAL, SW_SYMBOL_GLOBAL);
		CHECK_STR(obj.symbols[1].name, "_thumb_b");
		CHECK_INT(obj.symbols[1].addr, 0x4220);
		obj.release(&obj);
	}
	memset(&obj, 0, sizeof(obj));
	CHECK_INT(sw_macho_load(&obj, fat, sizeof(fat), NULL, &err), -EINVAL);
	CHECK(strstr(err.msg, "armv7, i386") != NULL);
	(void)m;
}

static void test_exports_dylib(void)
{
	char *text = slurp("libfix.dylib.nm"), *line, *save = NULL;
	struct sw_object obj;
	struct sw_error err;
	struct map m;
	int found = 0;

	CHECK_INT(load("libfix-stripped.dylib", NULL, &obj, &m, &err), 0);
	CHECK_INT(obj.text_vmaddr, 0);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char type, name[256];
		unsigned long long addr;
		const struct sw_symbol *s;

		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 || type != 'T')
			continue;
		s = symbol_at(&obj, addr);
		CHECK(s && strcmp(s->name, name) == 0 && (s->flags & SW_SYMBOL_FROM_EXPORTS));
		CHECK(s && s->size == 0);
		found++;
	}
	CHECK_INT(found, 2); /* lib_twice and lib_thrice in lib.c */
	CHECK_INT(obj.nsymbols, 2);
	unload(&obj, &m);
	free(text);
}

/* A trie whose child points back at the root must fail, naming the offset. */
static void test_trie_hostile(void)
{
	/* root: no terminal, 1 child "_a" -> node 0 (itself) */
	static const uint8_t cyc[] = {0x00, 0x01, '_', 'a', 0x00, 0x00};
	/* root: 1 child "_f" -> 6; node 6: terminal size 2 (flags 0, offset 0x10), 0 children */
	static const uint8_t ok[] = {0x00, 0x01, '_', 'f', 0x00, 0x06, 0x02, 0x00, 0x10, 0x00};
	static const uint8_t trunc[] = {0x00, 0x01, '_', 'f', 0x00, 0x06, 0x05, 0x00};
	struct sw_macho_export *ex = NULL;
	struct sw_buf names;
	struct sw_error err;
	size_t n = 0;

	sw_buf_init(&names, 1 << 20);
	CHECK_INT(sw_macho_trie_walk(cyc, sizeof(cyc), 0x100, &ex, &n, &names, &err), -EINVAL);
	CHECK(strstr(err.msg, "entered twice at offset 0x100") != NULL);
	n = 0;
	sw_buf_reset(&names);
	CHECK_INT(sw_macho_trie_walk(ok, sizeof(ok), 0, &ex, &n, &names, &err), 0);
	CHECK_INT(n, 1);
	if (n == 1) {
		CHECK_STR((const char *)names.data + ex[0].name, "_f");
		CHECK_INT(ex[0].offset, 0x10);
	}
	n = 0;
	CHECK_INT(sw_macho_trie_walk(trunc, sizeof(trunc), 0x40, &ex, &n, &names, &err), -EINVAL);
	CHECK(strstr(err.msg, "at offset 0x46") != NULL);
	free(ex);
	sw_buf_finish(&names);
}

/* Every truncation and many single-byte corruptions of a real image: no crash, errors name offsets.
 */
static void test_hostile(const char *name)
{
	struct map m = map_file(name);
	struct sw_object obj;
	struct sw_error err;
	unsigned seed = 12345;
	int fails = 0;

	for (size_t len = 0; len < m.size; len += len < 4096 ? 1 : 97) {
		uint8_t *copy = malloc(len ? len : 1);

		memcpy(copy, m.data, len);
		memset(&obj, 0, sizeof(obj));
		if (sw_macho_load(&obj, copy, len, NULL, &err) < 0) {
			fails++;
			CHECK(strstr(err.msg, "offset 0x") || strstr(err.msg, "too short"));
		} else {
			obj.release(&obj);
		}
		free(copy);
	}
	for (int i = 0; i < 20000; i++) {
		uint8_t *copy = malloc(m.size);
		size_t at;

		memcpy(copy, m.data, m.size);
		seed = seed * 1103515245 + 12345;
		at = (seed >> 8) % (i % 2 ? m.size : 4096 < m.size ? 4096 : m.size);
		copy[at] ^= (uint8_t)(1 + (seed >> 24) % 255);
		memset(&obj, 0, sizeof(obj));
		if (sw_macho_load(&obj, copy, m.size, "arm64", &err) == 0)
			obj.release(&obj);
		free(copy);
	}
	CHECK(fails > 0);
	free(m.data);
}

int main(int argc, char **argv)
{
	char skip[4096];

	if (argc != 2) {
		fprintf(stderr, "usage: test-macho FIXTURE-DIR\n");
		return 2;
	}
	dir = argv[1];
	snprintf(skip, sizeof(skip), "%s/SKIP", dir);
	if (access(skip, F_OK) == 0)
		sw_test_skip("fixture tools missing (see the SKIP file)");
	test_thin("app-arm64", "arm64", true, 9);
	test_thin("app-arm64-nochain", "arm64", true, 9);
	test_thin("app-arm64-lld14", "arm64", true, 9);
	test_thin("app-arm64-x", "arm64", true, 6);
	test_thin("app-arm64-nofs", "arm64", false, 9);
	test_thin("app-x86_64", "x86_64", true, 9);
	test_thin("libfix.dylib", "arm64", true, 3);
	test_function_starts("app-arm64", "app-arm64.starts");
	test_stripped("app-arm64-stripped", "app-arm64.nm");
	test_stripped("app-arm64-lld14-stripped", "app-arm64-lld14.nm");
	test_exports_dylib();
	test_universal("app-universal");
	test_universal("app-universal64");
	test_arm64e();
	test_armv7();
	test_dsym("app-arm64.dSYM", "app-arm64", "arm64", 5);
	test_dsym("app-arm64-d4.dSYM", "app-arm64-d4", "arm64", 4);
	test_dsym("app-x86_64.dSYM", "app-x86_64", "x86_64", 5);
	test_dsym("app-universal.dSYM", "app-universal", "x86_64", 5);
	test_dsym_sections();
	test_universal_dsym();
	test_trie_hostile();
	test_hostile("app-arm64");
	test_hostile("app-arm64-arm64e");
	return sw_test_end();
}
