/*
 * The Mach-O reader's own interface, beyond sw_macho_load() in object.h:
 * the slices of a (possibly universal) file with their architectures and
 * UUIDs, architecture names, the export trie walk, and dSYM bundle lookup.
 * Used by macho*.c, symsearch.c and the tests.
 */
#ifndef SW_MACHO_H
#define SW_MACHO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/error.h"

#define SW_MACHO_MAX_SLICES 32

struct sw_macho_slice {
	char arch[16]; /* "arm64", "arm64e", "x86_64", "armv7", "i386", ... */
	int32_t cputype;
	int32_t cpusubtype; /* capability bits stripped */
	uint32_t filetype;  /* MH_EXECUTE, MH_DYLIB, MH_DSYM, ... (0 if unread) */
	uint64_t offset;    /* of the slice in the file (0 for a thin file) */
	uint64_t size;
	uint8_t uuid[16];
	bool has_uuid;
};

/* True when data starts like a thin or universal Mach-O file. */
bool sw_macho_is_macho(const uint8_t *data, size_t size);

/*
 * Lists the slices of a thin or universal file, at most max of them, into
 * out (*ret_n of them).  A thin file has one slice.  Fails with err set
 * when the file is not Mach-O or a header is out of bounds.
 */
int sw_macho_slices(const uint8_t *data, size_t size, struct sw_macho_slice *out, size_t max,
		    size_t *ret_n, struct sw_error *err);

/*
 * Maps the file at path just long enough to list its slices as above.
 */
int sw_macho_peek_file(const char *path, struct sw_macho_slice *out, size_t max, size_t *ret_n,
		       struct sw_error *err);

/*
 * Picks the slice for arch (NULL: the only one) among n slices; an error
 * lists the slices present when arch is absent and several exist, or when
 * no slice has arch.  Returns the slice index.  Other tools' names are
 * understood: aarch64 for arm64, amd64 for x86_64, i686 for i386.
 */
int sw_macho_pick_slice(const struct sw_macho_slice *slices, size_t n, const char *arch,
			struct sw_error *err);

/* The name of a cputype/cpusubtype pair (capability bits ignored), written to buf. */
void sw_macho_arch_name(int32_t cputype, int32_t cpusubtype, char buf[16]);

/* Formats a 16-byte UUID as Apple prints it: 8-4-4-4-12 upper-case hex. */
void sw_macho_uuid_str(const uint8_t uuid[16], char buf[37]);
/* Parses a UUID with or without dashes, either case.  0 on success. */
int sw_macho_uuid_parse(const char *s, uint8_t uuid[16]);

/* One terminal of the export trie: a name and its address offset from the image base. */
struct sw_macho_export {
	uint64_t offset;
	size_t name;   /* offset of the NUL-terminated name in the names buffer */
	unsigned kind; /* EXPORT_SYMBOL_FLAGS_KIND_* */
};

/*
 * Walks an export trie (the bytes at export_off, export_size) and appends
 * each regular or thread-local terminal, re-exports excepted, to exports
 * (an array it grows; *nexports counts it) with its name in names.  Cycles,
 * overlong names, too deep tries and out-of-bounds offsets fail with err
 * naming the offset (base_off is the trie's file offset, for messages).
 */
int sw_macho_trie_walk(const uint8_t *trie, size_t size, uint64_t base_off,
		       struct sw_macho_export **exports, size_t *nexports, struct sw_buf *names,
		       struct sw_error *err);

/*
 * Finds the DWARF file for a Mach-O image in a dSYM bundle.  path is an
 * X.dSYM bundle, a directory holding bundles (searched one level deep), or
 * the DWARF file itself.  The file matches when one of its slices has uuid
 * (NULL: any) and arch (NULL: any, the UUID decides).  On success *ret_path
 * (free() it) names the file and ret_arch (when not NULL) the slice's arch.
 * -ENOENT when nothing matches.
 */
int sw_macho_dsym_find(const char *path, const uint8_t *uuid, const char *arch, char **ret_path,
		       char ret_arch[16], struct sw_error *err);

/* ---- macho-info.c: what a linked image says about itself, for checks ---- */

#define SW_MACHO_INFO_MAX_CMDS   256
#define SW_MACHO_INFO_MAX_DYLIBS 64

/* Library ordinals below 1: the image itself, the executable, any library. */
#define SW_MACHO_ORDINAL_SELF       0
#define SW_MACHO_ORDINAL_EXECUTABLE (-1)
#define SW_MACHO_ORDINAL_FLAT       (-2)
#define SW_MACHO_ORDINAL_WEAK       (-3)

/* Where an import's binding came from. */
enum sw_macho_via {
	SW_MACHO_VIA_CHAINED = 1u << 0,
	SW_MACHO_VIA_BIND = 1u << 1,
	SW_MACHO_VIA_WEAK_BIND = 1u << 2,
	SW_MACHO_VIA_LAZY_BIND = 1u << 3,
};

struct sw_macho_range {
	uint64_t off, size; /* file offset and size (the count for the symbol table) */
	bool present;
};

/* One nlist_64 entry (stabs left out); name is an offset into names. */
struct sw_macho_sym {
	size_t name;
	uint8_t type, sect;
	uint16_t desc;
	uint64_t value;
};

/* One import as the fixups bind it: name (offset into names) from ordinal. */
struct sw_macho_bind {
	size_t name;
	int ordinal; /* 1-based index into dylibs, or SW_MACHO_ORDINAL_* */
	unsigned via;
};

struct sw_macho_info {
	int32_t cputype, cpusubtype;
	uint32_t filetype, flags;
	uint32_t cmds[SW_MACHO_INFO_MAX_CMDS]; /* every load command, in order */
	size_t ncmds;
	bool has_build_version;
	uint32_t platform, minos, sdk; /* versions as xxxx.yy.zz nibbles */
	bool has_uuid;
	uint8_t uuid[16];
	bool has_install_name;
	size_t install_name; /* LC_ID_DYLIB, offset into names */
	struct {
		uint32_t cmd; /* LC_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB, ... */
		size_t name;
	} dylibs[SW_MACHO_INFO_MAX_DYLIBS]; /* ordinal n is dylibs[n - 1] */
	size_t ndylibs;
	struct sw_macho_sym *syms;
	size_t nsyms;
	struct sw_macho_bind *bind_list;
	size_t nbinds, bind_cap;
	struct sw_macho_export *exports; /* the export trie; names in names */
	size_t nexports;
	struct sw_macho_range symtab, strtab, trie, chained, binds[3], code_signature;
	const char *names; /* every name above, owned by pool */
	struct sw_buf pool;
};

/*
 * Reads a thin 64-bit Mach-O file (linked image or object) into *ret, which
 * owns its arrays until sw_macho_info_finish().  Fails with err naming the
 * offset of what is out of bounds or malformed.
 */
int sw_macho_info_read(const uint8_t *data, size_t size, struct sw_macho_info *ret,
		       struct sw_error *err);
void sw_macho_info_finish(struct sw_macho_info *info);
/* The library ordinal of an undefined symbol (from its n_desc). */
int sw_macho_info_symbol_ordinal(const struct sw_macho_sym *s);

#endif
