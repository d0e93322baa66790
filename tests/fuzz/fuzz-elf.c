/*
 * libFuzzer target for the ELF reader and, through it, the DWARF reader:
 * the input is a whole ELF file.  Build with -Dfuzz=true and clang.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/dwarf.h"
#include "objfile/object.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* an exact-size copy, so that reading one byte too far is caught */
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	struct sw_object obj = {0};
	struct sw_error err = {0};
	if (sw_elf_load(&obj, copy, size, &err) >= 0) {
		for (size_t i = 0; i < obj.nsymbols && i < 64; i++)
			sw_object_find_symbol(&obj, obj.symbols[i].addr + 1);
		struct sw_dwarf *d = NULL;
		if (obj.has_debug_info && sw_dwarf_new(&obj.dwarf, &d, &err) >= 0) {
			struct sw_dwarf_frame fr[16];
			for (size_t i = 0; i < obj.nsymbols && i < 32; i++)
				sw_dwarf_lookup(d, obj.symbols[i].addr + 1, 0, fr, 16, &err);
			for (uint64_t a = 0; a < 256; a += 5)
				sw_dwarf_lookup(d, obj.text_vmaddr + a, 0, fr, 16, &err);
			sw_dwarf_free(d);
		}
	}
	if (obj.release)
		obj.release(&obj);
	free(copy);
	return 0;
}
