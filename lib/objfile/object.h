/*
 * One object file slice, whatever its container: the neutral view that the
 * symbolicator works from.  elf.c and macho.c (with macho-fat.c) fill it;
 * dwarf-*.c reads the DWARF sections it points at; symbolicate.c combines
 * them.
 *
 * Ownership: an object owns everything it points at (the file mapping,
 * decompressed sections, symbol names); all of it lives until
 * sw_object_free().
 */
#ifndef SW_OBJECT_H
#define SW_OBJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

enum sw_object_format {
	SW_OBJECT_ELF,
	SW_OBJECT_MACHO,
};

/* A byte range of the file (or of a decompressed copy) and its address. */
struct sw_section {
	const uint8_t *data;
	size_t size;
	uint64_t addr;
};

/* The sections the DWARF reader needs; absent ones have size 0. */
struct sw_dwarf_sections {
	struct sw_section info, abbrev, line, str, line_str, str_offsets, addr, ranges, rnglists,
	    aranges;
	struct sw_section cu_index; /* a DWARF package's (.dwp) index of its split units */
	bool big_endian;
	uint8_t addr_size; /* 4 or 8 */
};

enum sw_symbol_flags {
	SW_SYMBOL_GLOBAL = 1 << 0,
	SW_SYMBOL_FUNCTION = 1 << 1,
	SW_SYMBOL_FROM_EXPORTS = 1 << 2, /* Mach-O export trie only */
	SW_SYMBOL_SYNTHETIC = 1 << 3,    /* a function start with no name */
};

struct sw_symbol {
	uint64_t addr;    /* file (unslid) address */
	uint64_t size;    /* 0 when unknown: bounded by the next symbol or start */
	const char *name; /* as in the file: Mach-O's leading underscore kept */
	unsigned flags;
};

struct sw_object {
	enum sw_object_format format;
	char arch[16];  /* "x86_64", "arm64", "arm64e", "armv7", "aarch64", ... */
	uint8_t id[32]; /* LC_UUID (16 bytes) or GNU build-id */
	size_t id_len;
	uint64_t text_vmaddr; /* __TEXT's vmaddr, or the first executable PT_LOAD's p_vaddr */
	uint64_t text_size;
	bool has_debug_info; /* dwarf.info.size > 0 */
	bool interp;         /* an ELF program the dynamic loader starts (PT_INTERP) */
	struct sw_dwarf_sections dwarf;
	struct sw_symbol *symbols; /* sorted by addr */
	size_t nsymbols;
	uint64_t *function_starts; /* sorted; LC_FUNCTION_STARTS or FDE starts */
	size_t nfunction_starts;
	const char *debuglink; /* ELF .gnu_debuglink file name, or NULL */
	const char *path;
	void *priv;                             /* the container reader's own state */
	void (*release)(struct sw_object *obj); /* frees priv; set by the reader */
	/*
	 * Set before the reader runs: leave the symbol table and function
	 * starts unread, and set load_symbols to read them later.
	 */
	bool defer_symbols;
	int (*load_symbols)(struct sw_object *obj, struct sw_error *err);
	/*
	 * Set by sw_object_open(): symbols[i * SW_OBJECT_SYMBOL_STRIDE].addr
	 * for every i, so that a lookup touches few cache lines; NULL in an
	 * object filled otherwise (a plain binary search then).
	 */
	const uint64_t *symbol_index;
};

#define SW_OBJECT_SYMBOL_STRIDE 16

/*
 * Opens the slice of PATH for ARCH (NULL: the only slice, or the host's
 * architecture in a universal file).  Fills err on failure.
 */
int sw_object_open(const char *path, const char *arch, struct sw_object **ret,
		   struct sw_error *err);
void sw_object_free(struct sw_object *obj);

/*
 * sw_object_open() without reading the symbol table and function starts
 * yet: until sw_object_load_symbols() reads them, or
 * sw_object_symbols_from_cache() takes them from a cache file, the object
 * has none (sw_object_symbols_pending()).  Its id, architecture and DWARF
 * are there at once, to name the cache file by.
 */
int sw_object_open_deferred(const char *path, const char *arch, struct sw_object **ret,
			    struct sw_error *err);
bool sw_object_symbols_pending(const struct sw_object *obj);
/* Reads the symbols an object opened deferred left unread; errors as sw_object_open()'s. */
int sw_object_load_symbols(struct sw_object *obj, struct sw_error *err);
/*
 * The symbol cache (symbol-cache.c): the symbols and function starts of
 * an object opened deferred, from the file at path when it was written for
 * key and an object of this size and checks out; -errno otherwise (the
 * object is left as it was).
 */
int sw_object_symbols_from_cache(struct sw_object *obj, const char *path, const uint8_t *key,
				 size_t key_len);
/* Writes them, once read, for a later sw_object_symbols_from_cache(). */
int sw_object_symbols_to_cache(const struct sw_object *obj, const char *path, const uint8_t *key,
			       size_t key_len);

/*
 * The container readers, called by sw_object_open() with the whole mapped
 * file (which outlives obj).  They fill obj or return -errno with err set.
 * sw_macho_load() picks the slice of a universal file by arch.
 */
int sw_elf_load(struct sw_object *obj, const uint8_t *data, size_t size, struct sw_error *err);
int sw_macho_load(struct sw_object *obj, const uint8_t *data, size_t size, const char *arch,
		  struct sw_error *err);

/*
 * For the readers: sorts n elements of size bytes by the uint64_t at
 * key_off in each, stably (equal keys keep their order), by radix over the
 * bytes in which the keys differ: several times faster than qsort on the
 * tens of thousands of symbols a large binary has.  -ENOMEM leaves base
 * unsorted.
 */
int sw_object_sort_by_u64(void *base, size_t n, size_t size, size_t key_off);
/* The same for (key, index) pairs, and for plain numbers. */
struct sw_sort_key {
	uint64_t key;
	size_t index;
};
int sw_object_sort_keys(struct sw_sort_key *v, size_t n);
int sw_object_sort_u64(uint64_t *v, size_t n);
/* Sorts by the bits above the low low_bits only, stably: what ties keeps its order. */
int sw_object_sort_u64_high(uint64_t *v, size_t n, unsigned low_bits);

/* The nearest symbol at or before addr, bounded by the next function start. */
const struct sw_symbol *sw_object_find_symbol(const struct sw_object *obj, uint64_t addr);

/* Where the last lookup of sw_object_find_symbol_near() landed. */
struct sw_symbol_hint {
	bool valid;
	uint64_t addr;
	size_t count; /* symbols at or before addr */
};

/*
 * The same answer, for lookups at rising addresses (a sorted batch): each
 * starts where the last one, which h holds, ended.  h starts zeroed and
 * belongs to this object.
 */
const struct sw_symbol *sw_object_find_symbol_near(const struct sw_object *obj, uint64_t addr,
						   struct sw_symbol_hint *h);

#endif
