/*
 * The symbol cache: an object's symbol table as sw_object_open() leaves it
 * (sorted, one per address, PLT entries and nameless function starts
 * merged in) and its function starts, written to a file so that a later
 * run on the same binary maps it instead of reading and sorting the
 * table.  Internal to lib/objfile; object.h has the interface.
 *
 * The file is input like any other: header (magic, version, byte order,
 * record size, the caller's key, the object's size, the counts and the
 * total size) must match exactly, every name must lie in the file's
 * strings, which end with a NUL, and addresses must rise; otherwise the
 * file is ignored and the table read from the object.
 */
#ifndef SW_SYMBOL_CACHE_H
#define SW_SYMBOL_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "object.h"

/* What a read left: the symbols (names in the mapped file), owned. */
struct sw_symcache {
	void *map;
	size_t map_size;
	struct sw_symbol *symbols;
	size_t nsymbols;
	uint64_t *starts;
	size_t nstarts;
};

int sw_symcache_read(const char *path, const uint8_t *key, size_t key_len, uint64_t object_size,
		     struct sw_symcache *ret);
void sw_symcache_release(struct sw_symcache *c);
int sw_symcache_write(const char *path, const uint8_t *key, size_t key_len, uint64_t object_size,
		      const struct sw_symbol *symbols, size_t nsymbols, const uint64_t *starts,
		      size_t nstarts);

#endif
