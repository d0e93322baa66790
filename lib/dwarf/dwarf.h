/*
 * The DWARF reader: from the sections of one object (ELF or Mach-O/dSYM,
 * struct sw_dwarf_sections) to the function, file, line and column of an
 * address, with the chain of inlined calls.  DWARF 2 to 5, 32- and 64-bit.
 *
 * Nothing is read when the reader is made but the unit headers; a unit's
 * DIE tree and line table are read the first time an address inside it is
 * asked and kept, so memory grows with what is asked.  Answers follow
 * llvm-symbolizer's rules (which DIE owns an address, which line row, how
 * paths are joined) so that the two can be compared.
 *
 * Ownership: the reader borrows the sections (they must outlive it); every
 * string it returns belongs to it and lives until sw_dwarf_free().
 */
#ifndef SW_DWARF_H
#define SW_DWARF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"
#include "objfile/object.h"

struct sw_dwarf;

struct sw_dwarf_frame {
	const char *function; /* linkage name when there is one, else the name; NULL: unknown */
	const char *file;     /* the path, joined with the directories; NULL: unknown */
	uint32_t line;        /* 0: unknown */
	uint32_t column;      /* 0: unknown */
};

enum sw_dwarf_flags {
	SW_DWARF_NO_INLINES = 1 << 0, /* one frame: the line row and the innermost function */
};

int sw_dwarf_new(const struct sw_dwarf_sections *sections, struct sw_dwarf **ret,
		 struct sw_error *err);
void sw_dwarf_free(struct sw_dwarf *d);

/*
 * Fills frames[0..] with the frames of addr, innermost inlined call first,
 * the function that contains them last, and returns their number: 0 when no
 * unit covers addr, at most max (deeper chains lose their outer frames).
 * Returns -errno with err set when the DWARF of that unit is malformed.
 */
int sw_dwarf_lookup(struct sw_dwarf *d, uint64_t addr, unsigned flags,
		    struct sw_dwarf_frame *frames, size_t max, struct sw_error *err);

/*
 * Split DWARF: path is the binary's (or its debug file's), whose folder
 * and whose PATH.dwp package are looked in for the split units of
 * skeleton units, after each unit's compilation folder.  -ENOMEM only.
 */
int sw_dwarf_set_origin(struct sw_dwarf *d, const char *path);
/*
 * How many skeleton units read so far had no split unit to be found;
 * *first names the first one's file and why.  Their addresses get the
 * line table's answer only (no function, no inlined calls), so what was
 * read must not be kept in an index or a range table.
 */
size_t sw_dwarf_split_missing(const struct sw_dwarf *d, const char **first);

/*
 * Whether every unit the address map names can be looked up without
 * parsing DWARF: read already, or held by the index file.
 */
bool sw_dwarf_complete(struct sw_dwarf *d);

/*
 * Calls fn with every address at which the answer of sw_dwarf_lookup()
 * may change: the starts and ends of the address map's segments and of
 * each unit's, of its line sequences, and each line row's address (in no
 * order, with repeats).  Between two of them every lookup answers alike.
 * Reads the units it needs; returns 0, fn's negative value, or -errno with
 * err set when a unit is malformed.
 */
int sw_dwarf_boundaries(struct sw_dwarf *d, int (*fn)(void *ctx, uint64_t addr), void *ctx,
			struct sw_error *err);

/*
 * Reads, on up to `threads` threads, the units that lookups of addrs will
 * need and that are neither read yet nor held by the index, so that a
 * large batch does not read them one by one (dwarf-parallel.c).  Lookups
 * answer alike with or without it.  Returns the number of threads that
 * read, 0 when there was nothing to share out.
 */
int sw_dwarf_read_units(struct sw_dwarf *d, const uint64_t *addrs, size_t n, unsigned threads);

/*
 * The index file (dwarf-index*.c): what reading units produced, written so
 * that a later reader of the same DWARF skips parsing.  key names the
 * DWARF (the caller's choice: an id, an architecture); a file whose header
 * does not match key and these sections exactly is ignored.
 */
#define SW_DWARF_INDEX_MAX_KEY 96

/* Attaches the index file at path: 0, or -errno when it is missing or does not match. */
int sw_dwarf_index_open(struct sw_dwarf *d, const char *path, const uint8_t *key, size_t key_len);
/* Whether units were read from DWARF that the index file does not hold yet. */
bool sw_dwarf_index_stale(const struct sw_dwarf *d);
/*
 * Whether an index file is attached and holds every unit its address map
 * names: no lookup will parse DWARF.
 */
bool sw_dwarf_index_whole(const struct sw_dwarf *d);
/*
 * Writes every unit read so far to path: a temporary file in the same
 * folder, synced, then renamed over path.
 */
int sw_dwarf_index_write(struct sw_dwarf *d, const char *path, const uint8_t *key, size_t key_len,
			 struct sw_error *err);

#endif
