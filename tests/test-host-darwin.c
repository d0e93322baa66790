/*
 * Tests lib/host/host-darwin.c on any host (it is plain POSIX): a fake
 * $HOME with Xcode's DerivedData and "iOS DeviceSupport/<version>/Symbols"
 * folders, holding Mach-O fixtures, and the symbol search finding an image
 * through each.  Linked before the library, this file's
 * sw_host_symbol_dirs() is the one the search calls.
 *
 * usage: test-host-darwin MACHO-FIXTURE-DIR SCRATCH-DIR
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "host/host.h"
#include "objfile/macho.h"
#include "symbols/symsearch.h"
#include "test.h"

#define XCODE "Library/Developer/Xcode"

static void sh(const char *cmd)
{
	if (system(cmd) != 0) {
		fprintf(stderr, "failed: %s\n", cmd);
		exit(1);
	}
}

static void uuid_of(const char *dir, const char *file, const char *arch, uint8_t out[16])
{
	char path[4096], line[512], want[32];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	snprintf(want, sizeof(want), "(%s)", arch);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "UUID: ", 6) == 0 && strstr(line, want)) {
			line[42] = 0;
			CHECK_INT(sw_macho_uuid_parse(line + 6, out), 0);
		}
	if (f)
		fclose(f);
}

int main(int argc, char **argv)
{
	const char *fx, *home;
	struct sw_host_dir *dirs = NULL;
	struct sw_symsearch *s;
	struct sw_symsearch_result r;
	struct sw_error err;
	char path[4096], want[4096], cmd[16384];
	uint8_t uuid[16];
	size_t n = 0;

	if (argc != 3)
		return 2;
	fx = argv[1];
	home = argv[2];
	snprintf(path, sizeof(path), "%s/SKIP", fx);
	if (access(path, F_OK) == 0)
		sw_test_skip("Mach-O fixtures not built");
	snprintf(cmd, sizeof(cmd),
		 "rm -rf '%s' && mkdir -p '%s/%s/DerivedData/App-abc/Build/Products' "
		 "'%s/%s/iOS DeviceSupport/17.0 (21A329)/Symbols/usr/lib'",
		 home, home, XCODE, home, XCODE);
	sh(cmd);
	snprintf(cmd, sizeof(cmd),
		 "cp -R '%s/app-arm64.dSYM' '%s/%s/DerivedData/App-abc/Build/Products/'", fx, home,
		 XCODE);
	sh(cmd);
	snprintf(cmd, sizeof(cmd),
		 "cp '%s/libfix.dylib' '%s/%s/iOS DeviceSupport/17.0 (21A329)/Symbols/usr/lib/'",
		 fx, home, XCODE);
	sh(cmd);
	setenv("HOME", home, 1);

	CHECK_INT(sw_host_symbol_dirs(&dirs, &n), 2);
	CHECK_INT(n, 2);
	for (size_t i = 0; i < n; i++) {
		CHECK(strncmp(dirs[i].path, home, strlen(home)) == 0);
		CHECK_INT(dirs[i].kind, strstr(dirs[i].path, "DeviceSupport") ? SW_HOST_DIR_PREFIX
									      : SW_HOST_DIR_INDEX);
		free(dirs[i].path);
	}
	free(dirs);

	CHECK_INT(sw_symsearch_new(&s), 0);
	CHECK_INT(sw_symsearch_set_cache_dir(s, NULL), 0);
	CHECK_INT(sw_symsearch_add_host(s), 2);
	/* A device library by its path on the device. */
	{
		struct sw_macho_slice sl[SW_MACHO_MAX_SLICES];
		size_t ns;
		struct sw_symsearch_query q = {
		    .id_len = 16, .macho = true, .path = "/usr/lib/libfix.dylib"};

		snprintf(path, sizeof(path), "%s/libfix.dylib", fx);
		CHECK_INT(sw_macho_peek_file(path, sl, SW_MACHO_MAX_SLICES, &ns, &err), 0);
		q.id = sl[0].uuid;
		CHECK_INT(sw_symsearch_find(s, &q, &r, &err), 0);
		snprintf(want, sizeof(want),
			 "%s/Library/Developer/Xcode/iOS DeviceSupport/17.0 (21A329)/Symbols"
			 "/usr/lib/libfix.dylib",
			 home);
		CHECK_STR(r.binary, want);
		CHECK_STR(r.arch, "arm64");
		sw_symsearch_result_finish(&r);
	}
	/* An app's dSYM from DerivedData, by UUID. */
	{
		struct sw_symsearch_query q = {.id = uuid, .id_len = 16, .macho = true};

		uuid_of(fx, "app-arm64.dSYM.uuid", "arm64", uuid);
		CHECK_INT(sw_symsearch_find(s, &q, &r, &err), 0);
		snprintf(want, sizeof(want),
			 "%s/Library/Developer/Xcode/DerivedData/App-abc/Build/Products/"
			 "app-arm64.dSYM/Contents/Resources/DWARF/app-arm64",
			 home);
		CHECK_STR(r.debug, want);
		sw_symsearch_result_finish(&r);
	}
	sw_symsearch_free(s);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", home);
	sh(cmd);
	return sw_test_end();
}
