/*
 * Symbolication: from an address inside a loaded image to its frames, the
 * innermost inlined call first and the function that contains them last,
 * each with its function name, file, line and column.  Where there is no
 * debug information the frame names the nearest preceding symbol, bounded
 * by the function starts, with the offset into it.
 *
 * Images are opened once and kept, found again by path or by id.  The
 * rules of the pipeline live here: addresses are slid back by the image's
 * load address against its text vmaddr, and return addresses (every frame
 * of a sample but the first) are looked up one instruction back (x86: -1,
 * arm64/aarch64: -4) so that the line of the call is reported.
 *
 * Ownership: the symbolicator owns the images it opened and every string a
 * frame points at; they live until sw_symbolicator_free().  Frames are
 * written into the caller's array.
 */
#ifndef SW_SYMBOLICATE_H
#define SW_SYMBOLICATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/error.h"
#include "objfile/object.h"

struct sw_symbolicator;

enum sw_symbolicate_flags {
	SW_SYMBOLICATE_NO_INLINES = 1 << 0,  /* one frame per address */
	SW_SYMBOLICATE_NO_DEMANGLE = 1 << 1, /* names as in the file (Mach-O's _ still stripped) */
	SW_SYMBOLICATE_SWIFT_SIMPLIFIED = 1 << 2,
	/*
	 * Mach-O: take only FILE.dSYM beside the binary, as llvm-symbolizer
	 * does, rather than any dSYM the symbol search finds by UUID
	 * (`stallwatch symbolicate` without --dsym).
	 */
	SW_SYMBOLICATE_DSYM_BESIDE_ONLY = 1 << 3,
	/*
	 * Also write each image's range table (below) when the symbolicator is
	 * freed or saves its indexes, where every answer can be had without
	 * parsing more DWARF.  Building one asks every address at which an
	 * answer may change (a tenth of a second for 20,000 functions), so
	 * only a command that saves in the background asks for it; every
	 * symbolicator reads the tables it finds.
	 */
	SW_SYMBOLICATE_TABLES = 1 << 4,
};

enum sw_frame_flags {
	SW_FRAME_INLINED = 1 << 0,    /* an inlined call: the next frame contains it */
	SW_FRAME_SYMBOL = 1 << 1,     /* from the symbol table: symbol_addr and offset are set */
	SW_FRAME_SYNTHETIC = 1 << 2,  /* a function start with no name: function is "sub_<hex>" */
	SW_FRAME_DEBUG_INFO = 1 << 3, /* from DWARF */
};

struct sw_frame {
	const char *function; /* NULL: unknown */
	const char *file;     /* NULL: unknown */
	uint32_t line, column;
	uint64_t symbol_addr; /* SW_FRAME_SYMBOL: the symbol's file address */
	uint64_t offset;      /* SW_FRAME_SYMBOL: the looked-up address minus symbol_addr */
	unsigned flags;
};

/* The most frames one address yields; deeper inlining loses outer frames. */
#define SW_SYMBOLICATE_MAX_FRAMES 64

/* How to find the image a sample names. */
struct sw_image_ref {
	const char *path;  /* the binary, or NULL to find it by id */
	const uint8_t *id; /* LC_UUID or GNU build-id; NULL when unknown */
	size_t id_len;
	const char *arch;       /* NULL: the only or the host's slice */
	const char *debug_path; /* a dSYM bundle or its DWARF file, or a separate ELF debug file */
	uint64_t load_addr;     /* the run-time address of the text vmaddr */
	/*
	 * The vmaddr load_addr maps, when the sample's image list states it
	 * (the wire's text_vmaddr); otherwise the object's own: __TEXT's, or
	 * the first executable PT_LOAD's.
	 */
	bool has_text_vmaddr;
	uint64_t text_vmaddr;
};

struct sw_symsearch;

/*
 * A new symbolicator keeps an index of each image's DWARF (what parsing
 * produced, no per-address answer) under $XDG_CACHE_HOME/stallwatch/dwarf
 * (or ~/.cache/stallwatch/dwarf), so that a later run skips parsing; not
 * when $STALLWATCH_NO_INDEX is set to anything but "" or "0".  Indexes
 * are written when the symbolicator is freed.
 */
int sw_symbolicator_new(unsigned flags, struct sw_symbolicator **ret);
void sw_symbolicator_free(struct sw_symbolicator *s);
/*
 * The folder of DWARF indexes (dir/dwarf) and symbol caches (dir/symbols),
 * by default stallwatch's cache folder; NULL or "" keeps none (nor writes
 * any pending).
 */
int sw_symbolicator_set_cache_dir(struct sw_symbolicator *s, const char *dir);
/* Whether an image read DWARF its index file does not hold, or symbols its cache does not. */
bool sw_symbolicator_index_pending(const struct sw_symbolicator *s);
/* Writes those files now (sw_symbolicator_free() does it otherwise). */
void sw_symbolicator_save_indexes(struct sw_symbolicator *s);
/*
 * Appends to out one line for every image with split DWARF (-gsplit-dwarf)
 * whose split units were not all found, "  PATH: N split units not found
 * (FILE: why)", and returns how many images that was.  The addresses in
 * those units were answered from the line table alone (no function, no
 * inlined calls), and no cache file was written for them.
 */
size_t sw_symbolicator_split_missing(const struct sw_symbolicator *s, struct sw_buf *out);
/*
 * Lets the symbolicator find binaries by id and debug files (dSYM bundles,
 * .build-id trees, .gnu_debuglink, debuginfod) through ss, which it borrows:
 * ss must outlive it.
 */
void sw_symbolicator_set_symsearch(struct sw_symbolicator *s, struct sw_symsearch *ss);

/*
 * Opens (or finds among those already open) the image ref names, with its
 * debug information.  *ret_obj is the binary, owned by the symbolicator.
 */
int sw_symbolicator_image(struct sw_symbolicator *s, const struct sw_image_ref *ref,
			  const struct sw_object **ret_obj, struct sw_error *err);

/*
 * Whether the image ref names (opened if need be) came whole from the cache
 * folder: its range table, or a DWARF index holding every unit (or no
 * DWARF) and a symbol table that is not written back.  Another
 * symbolicator then opens it in about a millisecond instead of parsing it.
 * A symbolicator is used by one thread at a time; two share nothing but
 * range tables one lends the other, so a caller may give each a thread.
 */
bool sw_symbolicator_image_cached(struct sw_symbolicator *s, const struct sw_image_ref *ref);

/*
 * The range table of an image: every answer its symbolication gives, by
 * address range, kept in the cache folder ($XDG_CACHE_HOME/stallwatch/ranges)
 * beside the DWARF index and written from it (SW_SYMBOLICATE_TABLES).  An
 * image that has one answers every lookup from it alone: its symbols and
 * DWARF are read only when something else asks for them.  A table is
 * mapped read-only and never changes: it may be read from any thread.
 */
struct sw_symbolicate_table;

/*
 * Opens (or finds) the image ref names as sw_symbolicator_image() does,
 * without reading its symbols or DWARF when it has a table, and returns
 * the table; NULL when it has none, or when it cannot be opened (err set).
 * The table belongs to s.
 */
const struct sw_symbolicate_table *sw_symbolicator_table(struct sw_symbolicator *s,
							 const struct sw_image_ref *ref,
							 struct sw_error *err);

/*
 * For many lookups at once, in no order: the ranges of t holding
 * file_addrs[0..n), into ret, found a group of addresses at a time so that
 * their loads from memory overlap (several times faster than one lookup
 * after another on a table out of the caches).  Then, for each address,
 * sw_symbolicate_table_frames() with its range gives the frames
 * sw_symbolicate_file_addr() gives, named and with inlined calls as s's
 * flags say (frames has room for SW_SYMBOLICATE_MAX_FRAMES; at least one
 * is returned; s's names are s's: one thread at a time), and
 * sw_symbolicate_table_prefetch() of the range some eight addresses ahead
 * fetches the names that will read.
 */
void sw_symbolicate_table_find(const struct sw_symbolicate_table *t, const uint64_t *file_addrs,
			       size_t n, uint32_t *ret);
void sw_symbolicate_table_prefetch(const struct sw_symbolicate_table *t, uint32_t range);
int sw_symbolicate_table_frames(struct sw_symbolicator *s, const struct sw_symbolicate_table *t,
				uint32_t range, uint64_t file_addr, struct sw_frame *frames);

/*
 * The frames of run-time address addr in the image ref names; return_address
 * says whether addr is a return address (every frame of a sample but the
 * first).  Fills frames[0..max) and returns their number (at least 1: an
 * unknown address gives one frame with function and file NULL), or -errno.
 */
int sw_symbolicate(struct sw_symbolicator *s, const struct sw_image_ref *ref, uint64_t addr,
		   bool return_address, struct sw_frame *frames, size_t max, struct sw_error *err);

/* The same for a file (unslid) address, taken as given. */
int sw_symbolicate_file_addr(struct sw_symbolicator *s, const struct sw_image_ref *ref,
			     uint64_t file_addr, struct sw_frame *frames, size_t max,
			     struct sw_error *err);

/* The answers for many addresses: frames of address i are frames[first[i] .. + count[i]). */
struct sw_symbolicate_batch {
	struct sw_frame *frames;
	size_t *first, *count;
	size_t frames_cap, index_cap;
	void *order; /* the library's own scratch, kept for the next call */
	size_t order_cap;
};

/*
 * Symbolicates n file addresses as sw_symbolicate_file_addr() would one by
 * one, but visits them in address order, which is much kinder to the caches
 * when there are many.  The batch's arrays are reused from call to call and
 * freed by sw_symbolicate_batch_finish().  Returns 0, or -errno with err set
 * and *ret_done the index of the first address that failed (those before it
 * are answered).
 */
int sw_symbolicate_file_addrs(struct sw_symbolicator *s, const struct sw_image_ref *ref,
			      const uint64_t *addrs, size_t n, struct sw_symbolicate_batch *batch,
			      size_t *ret_done, struct sw_error *err);
void sw_symbolicate_batch_finish(struct sw_symbolicate_batch *batch);

/* How far back a return address is looked up on arch (1 when unknown). */
unsigned sw_symbolicate_return_adjust(const char *arch);

/* --- printing, for `stallwatch symbolicate` (symbolicate-print.c) --- */

/* Parses a hexadecimal address with or without 0x; -EINVAL if it is not one. */
int sw_symbolicate_parse_addr(const char *text, uint64_t *ret);
/*
 * The usual line of input, fast: an optional 0x, 1 to 16 hexadecimal
 * digits and a newline at text (before end).  Returns its length with the
 * newline and the address in *ret, or 0 for any other line (spaces, a
 * carriage return, the last line without a newline, a mistake), which
 * sw_symbolicate_parse_addr() reads or refuses.
 */
size_t sw_symbolicate_scan_line(const char *text, const char *end, uint64_t *ret);
/* Appends frames as llvm-symbolizer prints them: name line, file:line:column line, blank line. */
int sw_symbolicate_print_text(const struct sw_frame *frames, size_t n, struct sw_buf *out);
/* Appends one NDJSON object ("schema":1, "type":"address") and a newline. */
int sw_symbolicate_print_json(uint64_t addr, const struct sw_frame *frames, size_t n,
			      struct sw_buf *out);

#endif
