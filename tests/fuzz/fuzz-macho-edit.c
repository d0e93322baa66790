/*
 * libFuzzer target for the Mach-O writer behind `stallwatch inject`: any
 * input is edited on a copy; when adding the dylib succeeds, removing it
 * must give back the input byte for byte, and a refused edit must leave
 * the copy untouched.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "objfile/macho-edit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	struct sw_macho_dylib_edit edit = {
	    .install_name = "@rpath/libstallwatch.dylib",
	    .rpath = "@executable_path/Frameworks",
	    .weak = size % 2,
	};
	struct sw_macho_edit_result res;
	struct sw_error err;
	if (sw_macho_add_dylib(copy, size, &edit, &res, &err) < 0) {
		if (memcmp(copy, data, size) != 0)
			__builtin_trap(); /* a refusal wrote something */
	} else if (res.changed) {
		bool every_slice = res.changed == res.slices;
		if (sw_macho_remove_dylib(copy, size, &edit, &res, &err) < 0 || !res.changed)
			__builtin_trap();
		/* a slice that loaded the dylib before loses it too: compare when none did */
		if (every_slice && memcmp(copy, data, size) != 0)
			__builtin_trap();
		struct sw_macho_edit_result again;
		if (sw_macho_add_dylib(copy, size, &edit, &again, &err) < 0 || !again.changed)
			__builtin_trap();
	}
	free(copy);
	return 0;
}
