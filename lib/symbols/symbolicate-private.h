/*
 * The range table (symbolicate-table.c), shared with the symbolicator
 * that builds and reads it (symbolicate.c): every answer an image's
 * symbolication can give, by address range, so that a lookup is one
 * search and one record instead of a walk of DWARF's and the symbol
 * table's structures.
 */
#ifndef SW_SYMBOLICATE_PRIVATE_H
#define SW_SYMBOLICATE_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolicate.h"

/* FNV-1a over n bytes from h: cache files' names, and the table builder's sets. */
static inline uint64_t sw_fnv64(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

#define SW_FNV64_OFFSET 0xcbf29ce484222325ULL

/* The key of a table: the binary's cache key, then its debug file's. */
#define SW_TABLE_MAX_KEY 200

/*
 * The frames of addr, as the file names them (Mach-O's underscore
 * stripped, "sub_<hex>" for a function start without a name), at most
 * SW_SYMBOLICATE_MAX_FRAMES, with inlined calls; *outer_symbol says
 * whether the outermost frame's name is the symbol table's.  The number
 * of frames or -errno, as sw_symbolicate_file_addr() returns them.
 */
typedef int (*sw_table_answer_fn)(void *ctx, uint64_t addr, struct sw_frame *frames,
				  bool *outer_symbol);

/*
 * Builds the table from the addresses at which the answer may change
 * (bounds: in any order, repeats allowed; sorted in place) by asking fn
 * once at each of them and at 0, and writes it to path (published whole,
 * util/publish.h).  -E2BIG when the addresses span 4 GiB or more.
 */
int sw_table_write(uint64_t *bounds, size_t n, sw_table_answer_fn fn, void *ctx, const uint8_t *key,
		   size_t key_len, const char *path);

/* Maps the table at path when it is whole and was written for key: 0 or -errno. */
int sw_table_open(const char *path, const uint8_t *key, size_t key_len,
		  struct sw_symbolicate_table **ret);
void sw_table_free(struct sw_symbolicate_table *t);

/*
 * The frames of addr with the names the file has: at most
 * SW_SYMBOLICATE_MAX_FRAMES, one when no_inlines (as a lookup with
 * SW_SYMBOLICATE_NO_INLINES gives it).  Returns their number, at least 1.
 */
size_t sw_table_frames(const struct sw_symbolicate_table *t, uint64_t addr, bool no_inlines,
		       struct sw_frame *frames);

/*
 * sw_table_frames() of an address in a range sw_symbolicate_table_find()
 * gave (symbolicate.h; it and sw_symbolicate_table_prefetch() are the
 * table's own, in symbolicate-table.c).
 */
size_t sw_table_frames_at(const struct sw_symbolicate_table *t, uint32_t range, uint64_t addr,
			  bool no_inlines, struct sw_frame *frames);

#endif
