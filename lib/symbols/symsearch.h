/*
 * Symbol search: finds the files that symbolicate an image, given its id
 * (a Mach-O LC_UUID or a GNU build-id) and the path the process loaded it
 * from.  Looks, in this order, at the path itself, dSYM bundles beside it,
 * the ELF conventions (/usr/lib/debug/.build-id/xx/rest.debug and
 * .gnu_debuglink next to the binary, in .debug/ and under /usr/lib/debug),
 * the search paths (-S/--symbols, STALLWATCH_SYMBOLS, the host's own
 * places such as Xcode's), indexed recursively by id, and last debuginfod.
 * What could not be found is remembered for a report.
 *
 * Ownership: struct sw_symsearch owns its index and its list of misses;
 * a result's strings belong to the caller (sw_symsearch_result_finish()).
 */
#ifndef SW_SYMSEARCH_H
#define SW_SYMSEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

struct sw_symsearch;

enum sw_symfile_kind {
	SW_SYMFILE_BINARY = 1 << 0, /* code and symbols: the image itself */
	SW_SYMFILE_DEBUG = 1 << 1,  /* DWARF: a dSYM's file, a .debug file, or an unstripped ELF */
};

struct sw_symsearch_query {
	const uint8_t *id; /* 16-byte UUID (Mach-O) or GNU build-id (ELF) */
	size_t id_len;
	const char *path;      /* where the process loaded the image from, or NULL */
	const char *arch;      /* the Mach-O slice, or NULL */
	const char *debuglink; /* ELF .gnu_debuglink file name when already known, or NULL */
	bool macho;            /* the id is an LC_UUID (else a build-id) */
};

struct sw_symsearch_result {
	char *binary;  /* a file holding the image's code and symbols, or NULL */
	char *debug;   /* a file holding its DWARF (may equal binary), or NULL */
	char arch[16]; /* the Mach-O slice that matched, "" for ELF */
};

struct sw_symsearch_miss {
	char id[65]; /* the id as printed: UUID with dashes, build-id as hex */
	char *path;  /* the image's path, or NULL */
	char arch[16];
	unsigned missing; /* SW_SYMFILE_* not found */
};

int sw_symsearch_new(struct sw_symsearch **ret);
void sw_symsearch_free(struct sw_symsearch *s);

/* Adds a file or directory to search (indexed recursively on first use). */
int sw_symsearch_add_path(struct sw_symsearch *s, const char *path);
/* Adds the colon-separated paths of $STALLWATCH_SYMBOLS.  Returns how many. */
int sw_symsearch_add_env(struct sw_symsearch *s);
/*
 * Adds a copy of a device's or system's file tree (a sysroot, Xcode's
 * "iOS DeviceSupport/<version>/Symbols"): an image loaded from /usr/lib/x
 * is looked for at DIR/usr/lib/x.
 */
int sw_symsearch_add_prefix(struct sw_symsearch *s, const char *dir);
/* Adds the host's own places (lib/host/): Xcode's folders on macOS. */
int sw_symsearch_add_host(struct sw_symsearch *s);

/* The root of the ELF debug tree, /usr/lib/debug by default ("" turns it off). */
int sw_symsearch_set_debug_root(struct sw_symsearch *s, const char *root);
/* Whether debuginfod may be asked (default: when DEBUGINFOD_URLS is set). */
void sw_symsearch_set_debuginfod(struct sw_symsearch *s, bool enabled);

/*
 * Where the index's disk cache lives: $XDG_CACHE_HOME/stallwatch (or
 * ~/.cache/stallwatch) by default; NULL or "" keeps the index in memory only.
 */
int sw_symsearch_set_cache_dir(struct sw_symsearch *s, const char *dir);
/* How many indexed files were known from the disk cache without being read. */
size_t sw_symsearch_cache_hits(const struct sw_symsearch *s);

/*
 * Looks for the image's files.  Returns 0 with ret filled (either file may
 * be NULL: what is missing is also recorded as a miss), -ENOENT when
 * nothing was found, or -errno on failure.
 */
int sw_symsearch_find(struct sw_symsearch *s, const struct sw_symsearch_query *q,
		      struct sw_symsearch_result *ret, struct sw_error *err);
void sw_symsearch_result_finish(struct sw_symsearch_result *r);

/* Images with something missing so far, one entry per id, in query order. */
size_t sw_symsearch_misses(const struct sw_symsearch *s, const struct sw_symsearch_miss **ret);

/* How many files the index holds (after the first find), for reports and tests. */
size_t sw_symsearch_indexed(struct sw_symsearch *s);

/* Formats an id: 16 bytes of a Mach-O as a UUID, anything else as hex. */
void sw_symsearch_id_str(const uint8_t *id, size_t len, bool macho, char out[65]);

#endif
