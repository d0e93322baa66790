/*
 * libFuzzer target for the Mach-O reader: loads the input as a thin or
 * universal file for each architecture name, checks what the reader hands
 * out (sections inside the input, symbols and starts sorted), and also
 * walks the input as a bare export trie and reads it as the checks do
 * (macho-info.c).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "objfile/macho.h"
#include "objfile/object.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_section(const struct sw_section *s, const uint8_t *data, size_t size)
{
	if (s->size && (s->data < data || s->data + s->size > data + size))
		__builtin_trap();
}

static void check(const struct sw_object *obj, const uint8_t *data, size_t size)
{
	const struct sw_dwarf_sections *d = &obj->dwarf;
	const struct sw_section *all[] = {&d->info,     &d->abbrev,      &d->line, &d->str,
					  &d->line_str, &d->str_offsets, &d->addr, &d->ranges,
					  &d->rnglists, &d->aranges};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		check_section(all[i], data, size);
	for (size_t i = 0; i < obj->nsymbols; i++) {
		if (!obj->symbols[i].name ||
		    (i && obj->symbols[i - 1].addr >= obj->symbols[i].addr))
			__builtin_trap();
		(void)strlen(obj->symbols[i].name);
	}
	for (size_t i = 1; i < obj->nfunction_starts; i++)
		if (obj->function_starts[i - 1] >= obj->function_starts[i])
			__builtin_trap();
}

/* The checks' reader (macho-info.c): every name it hands out lies in its pool. */
static void check_info(const uint8_t *data, size_t size)
{
	struct sw_macho_info mi;

	if (sw_macho_info_read(data, size, &mi, NULL) < 0)
		return;
	for (size_t i = 0; i < mi.nsyms; i++)
		if (mi.syms[i].name >= mi.pool.len)
			__builtin_trap();
	for (size_t i = 0; i < mi.nbinds; i++)
		if (mi.bind_list[i].name >= mi.pool.len)
			__builtin_trap();
	for (size_t i = 0; i < mi.nexports; i++)
		if (mi.exports[i].name >= mi.pool.len)
			__builtin_trap();
	for (size_t i = 0; i < mi.ndylibs; i++)
		(void)strlen(mi.names + mi.dylibs[i].name);
	sw_macho_info_finish(&mi);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const archs[] = {NULL, "arm64", "x86_64", "armv7", "arm64e", "i386"};
	struct sw_macho_export *ex = NULL;
	struct sw_buf names;
	size_t n = 0;

	for (size_t i = 0; i < sizeof(archs) / sizeof(archs[0]); i++) {
		struct sw_object obj;
		struct sw_error err;

		memset(&obj, 0, sizeof(obj));
		if (sw_macho_load(&obj, data, size, archs[i], &err) < 0)
			continue;
		check(&obj, data, size);
		obj.release(&obj);
	}
	sw_buf_init(&names, 1 << 24);
	sw_macho_trie_walk(data, size, 0, &ex, &n, &names, NULL);
	for (size_t i = 0; i < n; i++)
		if (ex[i].name >= names.len)
			__builtin_trap();
	free(ex);
	sw_buf_finish(&names);
	check_info(data, size);
	return 0;
}
