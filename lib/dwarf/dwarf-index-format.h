/*
 * The layout of the DWARF reader's index file, shared by its reader
 * (dwarf-index.c) and writer (dwarf-index-write.c): a header, then eight
 * arrays each starting on an 8-byte boundary: units, the address -> unit
 * map, segments, subroutines, line rows, sequences, file paths (offsets
 * into the strings) and the strings.  Byte order and record sizes are the
 * writer's, recorded in the header: a reader that differs ignores the file.
 */
#ifndef SW_DWARF_INDEX_FORMAT_H
#define SW_DWARF_INDEX_FORMAT_H

#include "dwarf-private.h"

#define IX_MAGIC   "SWDWIDX\n"
#define IX_VERSION 2 /* 2: split units read (version 1 files of split DWARF lack them) */
#define IX_ORDER   0x01020304u
#define IX_NONE    UINT32_MAX
#define IX_MAX     ((uint64_t)1 << 34) /* bytes of an index file */

struct ix_header {
	char magic[8];
	uint32_t version, order;
	uint32_t header_size, key_len;
	uint8_t key[SW_DWARF_INDEX_MAX_KEY];
	uint32_t unit_size, seg_size, func_size, row_size, seq_size, pad;
	uint64_t info_size, line_size, abbrev_size, file_size;
	uint64_t nunits, ncu_map, nsegs, nfuncs, nrows, nseqs, nfiles, nstr;
};

struct ix_unit {
	uint64_t off; /* the unit's offset in .debug_info, checked against the reader's */
	uint32_t held, has_line, line_version, pad;
	uint64_t seg_first, seg_count, func_first, func_count;
	uint64_t row_first, row_count, seq_first, seq_count, file_first, file_count;
};

struct ix_func {
	uint32_t name; /* into the strings, IX_NONE: none */
	uint32_t parent, call_file, call_line, call_column, inlined;
};

/* An index file mapped by a reader. */
struct dw_index {
	void *map;
	size_t size;
	const struct ix_header *h;
	const struct ix_unit *units;
	const struct dw_seg *cu_map, *segs;
	const struct ix_func *funcs;
	const struct dw_line_row *rows;
	const struct dw_line_seq *seqs;
	const uint32_t *files;
	const char *str;
};

#endif
