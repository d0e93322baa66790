/*
 * Holds a built Darwin agent to its contract, with the project's own Mach-O
 * reader (lib/objfile/macho-info.c):
 *
 *   check-dylib --arch A --platform P --min-os V --api HEADER --allow LIST DYLIB
 *     a thin 64-bit MH_DYLIB of the right CPU, install name
 *     @rpath/libstallwatch.dylib, LC_BUILD_VERSION as asked, an LC_UUID,
 *     loading exactly the libraries LIST names, exporting exactly HEADER's
 *     stallwatch_* functions (symbol table and export trie agreeing), every
 *     import on LIST and bound to the library LIST gives it, none forbidden,
 *     and a valid ad-hoc signature when the linker signs (ld64.lld does for
 *     arm64 on macOS and the simulators) and none otherwise;
 *   check-dylib --object --arch A --allow LIST OBJECT
 *     an object file (the capture TU) whose undefined symbols are all on
 *     LIST (names only) and none forbidden.
 *
 *   check-dylib --dump FILE
 *     prints what the reader found (install name, build version, UUID,
 *     dylibs, imports with their libraries and where the binding came
 *     from, exports), for comparison with llvm-objdump's view.
 *
 * LIST holds "lib INSTALL-NAME" lines, each followed by the symbols that
 * library may provide, one a line; '#' starts a comment.  Every violation
 * is printed, naming the symbol, library or command; the exit status is 1
 * when there was one, 2 on misuse or an unreadable input.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "objfile/macho.h"
#include "sha256.h"

#define INSTALL_NAME "@rpath/libstallwatch.dylib"
#define MAX_LIBS     8
#define MAX_NAMES    1024

#define MH_OBJECT         0x1
#define MH_DYLIB          0x6
#define N_EXT             0x01
#define N_TYPE            0x0e
#define N_UNDF            0x0
#define N_SECT            0xe
#define N_PEXT            0x10
#define LC_LOAD_DYLIB     0xc
#define LC_CODE_SIGNATURE 0x1d
#define CS_ADHOC          0x2

struct allow {
	char *libs[MAX_LIBS];
	size_t nlibs;
	char *names[MAX_NAMES];
	int lib_of[MAX_NAMES]; /* index into libs, -1 for an object's list */
	size_t nnames;
};

static int failures;

static void violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void violation(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("check-dylib: ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	failures++;
}

static char *slurp(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return NULL;
	do {
		if (len + 4096 + 1 > cap) {
			cap = (cap + 4096) * 2;
			char *g = realloc(buf, cap);
			if (!g) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = g;
		}
		n = fread(buf + len, 1, 4096, f);
		len += n;
	} while (n > 0);
	fclose(f);
	buf[len] = 0;
	*ret_len = len;
	return buf;
}

static int read_allow(const char *path, struct allow *al)
{
	size_t len;
	char *text = slurp(path, &len), *line, *save = NULL;
	int lib = -1;

	if (!text)
		return -errno;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *hash = strchr(line, '#'), word[512], arg[512];
		int n;

		if (hash)
			*hash = 0;
		n = sscanf(line, "%511s %511s", word, arg);
		if (n <= 0)
			continue;
		if (strcmp(word, "lib") == 0 && n == 2 && al->nlibs < MAX_LIBS) {
			lib = (int)al->nlibs;
			al->libs[al->nlibs++] = strdup(arg);
		} else if (n == 1 && al->nnames < MAX_NAMES) {
			al->lib_of[al->nnames] = lib;
			al->names[al->nnames++] = strdup(word);
		} else {
			free(text);
			return -EINVAL;
		}
	}
	free(text);
	return 0;
}

static void allow_free(struct allow *al)
{
	for (size_t i = 0; i < al->nlibs; i++)
		free(al->libs[i]);
	for (size_t i = 0; i < al->nnames; i++)
		free(al->names[i]);
}

static int allowed_lib(const struct allow *al, const char *name)
{
	for (size_t i = 0; i < al->nnames; i++)
		if (strcmp(al->names[i], name) == 0)
			return al->lib_of[i];
	return -2;
}

/* The calls that can take a lock or enter a runtime, at any number of '_'. */
static bool forbidden(const char *name)
{
	static const char *const prefixes[] = {"objc_", "swift_", "os_log", "NSLog", "$s", "$S"};
	static const char *const exact[] = {"dladdr", "dlsym", "pthread_from_mach_thread_np"};

	while (*name == '_')
		name++;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (strcmp(name, exact[i]) == 0)
			return true;
	return false;
}

/* Checks one import (symbol-table or fixup) against the lists. */
static void check_import(const struct sw_macho_info *mi, const struct allow *al, const char *name,
			 int ordinal, const char *where, bool object)
{
	int lib;

	if (forbidden(name)) {
		violation("forbidden import '%s' (%s)", name, where);
		return;
	}
	lib = allowed_lib(al, name);
	if (lib == -2) {
		violation("import '%s' is not on the allowed list (%s)", name, where);
		return;
	}
	if (object)
		return;
	if (ordinal < 1 || (size_t)ordinal > mi->ndylibs) {
		violation("import '%s' is not bound to a library (ordinal %d, %s)", name, ordinal,
			  where);
		return;
	}
	if (lib < 0 || strcmp(mi->names + mi->dylibs[ordinal - 1].name, al->libs[lib]) != 0)
		violation("import '%s' is bound to '%s', allowed only from '%s' (%s)", name,
			  mi->names + mi->dylibs[ordinal - 1].name, lib < 0 ? "?" : al->libs[lib],
			  where);
}

static void check_imports(const struct sw_macho_info *mi, const struct allow *al, bool object)
{
	for (size_t i = 0; i < mi->nsyms; i++) {
		const struct sw_macho_sym *s = &mi->syms[i];

		if ((s->type & N_TYPE) != N_UNDF || !(s->type & N_EXT))
			continue;
		check_import(mi, al, mi->names + s->name, sw_macho_info_symbol_ordinal(s),
			     "symbol table", object);
	}
	for (size_t i = 0; i < mi->nbinds; i++) {
		const struct sw_macho_bind *b = &mi->bind_list[i];
		const char *name = mi->names + b->name;
		bool in_symtab = false;

		if (b->via == SW_MACHO_VIA_WEAK_BIND) {
			violation("weak binding of '%s'", name);
			continue;
		}
		check_import(mi, al, name, b->ordinal, "fixups", false);
		for (size_t j = 0; j < mi->nsyms && !in_symtab; j++)
			in_symtab = (mi->syms[j].type & N_TYPE) == N_UNDF &&
				    strcmp(mi->names + mi->syms[j].name, name) == 0 &&
				    sw_macho_info_symbol_ordinal(&mi->syms[j]) == b->ordinal;
		if (!in_symtab)
			violation("fixup import '%s' has no matching undefined symbol", name);
	}
}

/* The stallwatch_* functions HEADER declares, comments skipped. */
static size_t read_api(const char *path, char **names, size_t max)
{
	size_t len, n = 0;
	char *t = slurp(path, &len);

	if (!t)
		return 0;
	for (char *p = t; *p; p++) {
		if (p[0] == '/' && p[1] == '*') {
			char *end = strstr(p + 2, "*/");
			if (!end)
				break;
			memset(p, ' ', (size_t)(end + 2 - p));
		} else if (p[0] == '/' && p[1] == '/') {
			while (*p && *p != '\n')
				*p++ = ' ';
		}
	}
	for (char *p = strstr(t, "stallwatch_"); p && n < max; p = strstr(p + 1, "stallwatch_")) {
		char *q = p;

		if (p > t && (p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') ||
			      (p[-1] >= 'A' && p[-1] <= 'Z') || (p[-1] >= '0' && p[-1] <= '9')))
			continue;
		while (*q == '_' || (*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9'))
			q++;
		char *r = q;
		while (*r == ' ' || *r == '\t')
			r++;
		if (*r != '(')
			continue;
		if (asprintf(&names[n], "_%.*s", (int)(q - p), p) < 0)
			break;
		n++;
	}
	free(t);
	return n;
}

static bool in_list(char **names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return true;
	return false;
}

static void check_exports(const struct sw_macho_info *mi, const char *api_path)
{
	char *api[64], *syms[MAX_NAMES], *trie[MAX_NAMES];
	size_t napi = read_api(api_path, api, 64), nsyms = 0, ntrie = 0;

	if (napi == 0)
		violation("no stallwatch_* function declared in '%s'", api_path);
	for (size_t i = 0; i < mi->nsyms && nsyms < MAX_NAMES; i++) {
		const struct sw_macho_sym *s = &mi->syms[i];
		if ((s->type & N_TYPE) == N_SECT && (s->type & N_EXT) && !(s->type & N_PEXT))
			syms[nsyms++] = (char *)mi->names + s->name;
	}
	for (size_t i = 0; i < mi->nexports && ntrie < MAX_NAMES; i++)
		trie[ntrie++] = (char *)mi->names + mi->exports[i].name;
	for (size_t i = 0; i < nsyms; i++) {
		if (!in_list(api, napi, syms[i]))
			violation("exported symbol '%s' is not in the public api", syms[i]);
		if (!in_list(trie, ntrie, syms[i]))
			violation("exported symbol '%s' is missing from the export trie", syms[i]);
	}
	for (size_t i = 0; i < ntrie; i++) {
		if (!in_list(api, napi, trie[i]))
			violation("export trie holds '%s', not in the public api", trie[i]);
		if (!in_list(syms, nsyms, trie[i]))
			violation("export trie holds '%s', not an external symbol", trie[i]);
	}
	for (size_t i = 0; i < napi; i++) {
		if (!in_list(trie, ntrie, api[i]))
			violation("public function '%s' is not exported", api[i]);
		free(api[i]);
	}
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* An ad-hoc code directory whose page hashes match the file. */
static void check_signature(const uint8_t *d, const struct sw_macho_info *mi)
{
	const uint8_t *sb = d + mi->code_signature.off, *cd = NULL;
	uint64_t size = mi->code_signature.size;
	uint32_t count;

	if (size < 12 || be32(sb) != 0xfade0cc0u || be32(sb + 4) > size) {
		violation("code signature: no embedded-signature superblob");
		return;
	}
	count = be32(sb + 8);
	for (uint32_t i = 0; i < count && 12 + 8 * (uint64_t)i + 8 <= size; i++) {
		uint32_t type = be32(sb + 12 + 8 * i), off = be32(sb + 16 + 8 * i);
		if (type == 0 && off + 44 <= size && be32(sb + off) == 0xfade0c02u)
			cd = sb + off;
	}
	if (!cd) {
		violation("code signature: no code directory");
		return;
	}
	uint32_t cd_len = be32(cd + 4), flags = be32(cd + 12), hash_off = be32(cd + 16);
	uint32_t ncode = be32(cd + 28), limit = be32(cd + 32);
	uint8_t hash_size = cd[36], hash_type = cd[37], page_log = cd[39];
	uint64_t page = (uint64_t)1 << page_log;

	if (!(flags & CS_ADHOC))
		violation("code signature: not ad-hoc (flags 0x%x)", flags);
	if (hash_type != 2 || hash_size != 32 || page_log < 12 || page_log > 16) {
		violation("code signature: unexpected hash %u/%u or page size 2^%u", hash_type,
			  hash_size, page_log);
		return;
	}
	if (limit != mi->code_signature.off || ncode != (limit + page - 1) / page ||
	    (uint64_t)hash_off + (uint64_t)ncode * 32 > cd_len ||
	    (const uint8_t *)cd + cd_len > sb + size) {
		violation("code signature: code limit 0x%x or %u slots do not cover the file",
			  limit, ncode);
		return;
	}
	for (uint32_t i = 0; i < ncode; i++) {
		uint64_t lo = i * page, n = limit - lo < page ? limit - lo : page;
		uint8_t digest[32];

		sw_test_sha256(d + lo, (size_t)n, digest);
		if (memcmp(digest, cd + hash_off + 32 * (size_t)i, 32) != 0) {
			violation("code signature: page %u (offset 0x%llx) does not match its hash",
				  i, (unsigned long long)lo);
			return;
		}
	}
}

struct want {
	const char *arch, *platform, *min_os, *api, *allow_path, *path;
	bool object, dump;
};

static const char *lib_of(const struct sw_macho_info *mi, int ordinal)
{
	if (ordinal >= 1 && (size_t)ordinal <= mi->ndylibs)
		return mi->names + mi->dylibs[ordinal - 1].name;
	return ordinal == SW_MACHO_ORDINAL_SELF ? "(self)" : "(special)";
}

static void dump(const struct sw_macho_info *mi)
{
	static const char *const via[] = {"", "chained", "bind", "",         "weak-bind",
					  "", "",        "",     "lazy-bind"};
	printf("filetype %u cpu 0x%x 0x%x\n", mi->filetype, (unsigned)mi->cputype,
	       (unsigned)mi->cpusubtype);
	if (mi->has_install_name)
		printf("install-name %s\n", mi->names + mi->install_name);
	if (mi->has_build_version)
		printf("build-version %u %u.%u\n", mi->platform, mi->minos >> 16,
		       (mi->minos >> 8) & 0xff);
	if (mi->has_uuid) {
		char uuid[37];
		sw_macho_uuid_str(mi->uuid, uuid);
		printf("uuid %s\n", uuid);
	}
	for (size_t i = 0; i < mi->ndylibs; i++)
		printf("dylib %s\n", mi->names + mi->dylibs[i].name);
	for (size_t i = 0; i < mi->nsyms; i++)
		if ((mi->syms[i].type & N_TYPE) == N_UNDF && (mi->syms[i].type & N_EXT))
			printf("undefined %s %s\n", mi->names + mi->syms[i].name,
			       lib_of(mi, sw_macho_info_symbol_ordinal(&mi->syms[i])));
	for (size_t i = 0; i < mi->nbinds; i++)
		printf("%s %s %s\n", via[mi->bind_list[i].via & 15],
		       mi->names + mi->bind_list[i].name, lib_of(mi, mi->bind_list[i].ordinal));
	for (size_t i = 0; i < mi->nexports; i++)
		printf("export %s 0x%llx\n", mi->names + mi->exports[i].name,
		       (unsigned long long)mi->exports[i].offset);
	if (mi->code_signature.present)
		printf("code-signature %llu\n", (unsigned long long)mi->code_signature.size);
}

static int platform_number(const char *name)
{
	static const char *const names[] = {"",        "macos",    "ios",         "tvos",
					    "watchos", "bridgeos", "maccatalyst", "ios-simulator"};
	for (int i = 1; i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (strcmp(name, names[i]) == 0)
			return i;
	return -1;
}

static uint32_t version_number(const char *s)
{
	unsigned x = 0, y = 0, z = 0;
	sscanf(s, "%u.%u.%u", &x, &y, &z);
	return x << 16 | (y & 0xff) << 8 | (z & 0xff);
}

static void check_header(const struct sw_macho_info *mi, const struct want *w)
{
	int32_t cpu = strcmp(w->arch, "arm64") == 0 ? 0x0100000c : 0x01000007;
	int32_t sub = strcmp(w->arch, "arm64") == 0 ? 0 : 3;

	if (mi->filetype != (w->object ? MH_OBJECT : MH_DYLIB))
		violation("file type %u, not %s", mi->filetype,
			  w->object ? "MH_OBJECT" : "MH_DYLIB");
	if (mi->cputype != cpu || (mi->cpusubtype & 0x00ffffff) != sub)
		violation("cpu type 0x%x/0x%x, not %s", (unsigned)mi->cputype,
			  (unsigned)mi->cpusubtype, w->arch);
}

static void check_commands(const uint8_t *d, const struct sw_macho_info *mi, const struct want *w,
			   const struct allow *al)
{
	int plat = platform_number(w->platform);
	bool want_sig = strcmp(w->arch, "arm64") == 0 && (plat == 1 || plat == 7);

	if (!mi->has_install_name || strcmp(mi->names + mi->install_name, INSTALL_NAME) != 0)
		violation("install name '%s', not '%s'",
			  mi->has_install_name ? mi->names + mi->install_name : "(none)",
			  INSTALL_NAME);
	if (!mi->has_build_version)
		violation("no LC_BUILD_VERSION");
	else if ((int)mi->platform != plat || mi->minos != version_number(w->min_os))
		violation("LC_BUILD_VERSION platform %u minos %u.%u, not %s %s", mi->platform,
			  mi->minos >> 16, (mi->minos >> 8) & 0xff, w->platform, w->min_os);
	if (!mi->has_uuid || !memcmp(mi->uuid, (uint8_t[16]){0}, 16))
		violation("no LC_UUID");
	for (size_t i = 0; i < mi->ndylibs; i++) {
		const char *name = mi->names + mi->dylibs[i].name;
		bool ok = mi->dylibs[i].cmd == LC_LOAD_DYLIB;
		for (size_t j = 0; j < i; j++)
			ok = ok && strcmp(name, mi->names + mi->dylibs[j].name) != 0;
		if (!ok || !in_list((char **)al->libs, al->nlibs, name))
			violation("loads '%s' (command 0x%x), not on the allowed list", name,
				  mi->dylibs[i].cmd);
	}
	for (size_t i = 0; i < al->nlibs; i++) {
		bool found = false;
		for (size_t j = 0; j < mi->ndylibs; j++)
			found = found || strcmp(al->libs[i], mi->names + mi->dylibs[j].name) == 0;
		if (!found)
			violation("does not load '%s'", al->libs[i]);
	}
	if (mi->code_signature.present != want_sig)
		violation("%s code signature, while ld64.lld %s for %s on %s",
			  mi->code_signature.present ? "a" : "no",
			  want_sig ? "signs" : "does not sign", w->arch, w->platform);
	if (mi->code_signature.present)
		check_signature(d, mi);
}

static int check_file(const struct want *w, const struct allow *al)
{
	struct sw_macho_info mi;
	struct sw_error err = {0};
	struct stat st;
	int fd = open(w->path, O_RDONLY | O_CLOEXEC);
	void *map;

	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size == 0) {
		fprintf(stderr, "check-dylib: cannot read '%s'\n", w->path);
		return 2;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return 2;
	if (sw_macho_info_read(map, (size_t)st.st_size, &mi, &err) < 0) {
		violation("'%s': %s", w->path, sw_error_str(&err));
		munmap(map, (size_t)st.st_size);
		return 1;
	}
	if (w->dump) {
		dump(&mi);
		sw_macho_info_finish(&mi);
		munmap(map, (size_t)st.st_size);
		return 0;
	}
	check_header(&mi, w);
	if (!w->object) {
		check_commands(map, &mi, w, al);
		check_exports(&mi, w->api);
	}
	check_imports(&mi, al, w->object);
	sw_macho_info_finish(&mi);
	munmap(map, (size_t)st.st_size);
	return failures ? 1 : 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: check-dylib --arch arm64|x86_64 --platform P --min-os V --api "
			"HEADER --allow LIST DYLIB\n"
			"       check-dylib --object --arch arm64|x86_64 --allow LIST OBJECT\n"
			"       check-dylib --dump FILE\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct want w = {0};
	struct allow al = {0};
	int r;

	for (int i = 1; i < argc; i++) {
		const char **slot = NULL;
		if (strcmp(argv[i], "--object") == 0)
			w.object = true;
		else if (strcmp(argv[i], "--dump") == 0)
			w.dump = true;
		else if (strcmp(argv[i], "--arch") == 0)
			slot = &w.arch;
		else if (strcmp(argv[i], "--platform") == 0)
			slot = &w.platform;
		else if (strcmp(argv[i], "--min-os") == 0)
			slot = &w.min_os;
		else if (strcmp(argv[i], "--api") == 0)
			slot = &w.api;
		else if (strcmp(argv[i], "--allow") == 0)
			slot = &w.allow_path;
		else if (argv[i][0] != '-' && !w.path)
			w.path = argv[i];
		else
			return usage();
		if (slot) {
			if (++i == argc)
				return usage();
			*slot = argv[i];
		}
	}
	if (w.dump && w.path)
		return check_file(&w, &al);
	if (!w.path || !w.arch || !w.allow_path ||
	    (strcmp(w.arch, "arm64") != 0 && strcmp(w.arch, "x86_64") != 0) ||
	    (!w.object && (!w.platform || !w.min_os || !w.api || platform_number(w.platform) < 0)))
		return usage();
	r = read_allow(w.allow_path, &al);
	if (r < 0) {
		fprintf(stderr, "check-dylib: cannot read '%s': %s\n", w.allow_path, strerror(-r));
		allow_free(&al);
		return 2;
	}
	r = check_file(&w, &al);
	allow_free(&al);
	if (r == 0)
		printf("check-dylib: '%s' ok\n", w.path);
	return r;
}
