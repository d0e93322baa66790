/*
 * What the DWARF reader's files share: a bounds-checked cursor, units,
 * abbreviation tables, attribute values, the per-unit index of subroutines
 * and the line tables.
 */
#ifndef SW_DWARF_PRIVATE_H
#define SW_DWARF_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dwarf.h"

/* Ceilings on what input can grow. */
#define DW_MAX_UNITS      (1u << 22)
#define DW_MAX_DEPTH      512
#define DW_MAX_FUNCS      (1u << 24) /* per unit */
#define DW_MAX_RANGES     (1u << 24) /* per unit */
#define DW_MAX_ROWS       (1u << 26) /* per line table */
#define DW_MAX_FILES      (1u << 20)
#define DW_MAX_ABBREVS    (1u << 20)
#define DW_MAX_ATTRS      256 /* per abbreviation */
#define DW_MAX_NAME_HOPS  16  /* DW_AT_specification / abstract_origin chain */
#define DW_MAX_RANGE_LIST (1u << 20)
#define DW_MAX_PATH       4096

/* A cursor over one section; reading past the end sets bad and yields 0. */
struct dw_cur {
	const uint8_t *data;
	size_t size;
	size_t pos;
	bool be;
	bool bad;
};

static inline struct dw_cur dw_cur_at(const struct sw_section *s, bool be, uint64_t pos)
{
	struct dw_cur c = {.data = s->data, .size = s->size, .pos = 0, .be = be};
	if (pos > s->size)
		c.bad = true;
	else
		c.pos = (size_t)pos;
	return c;
}

uint64_t dw_u_any(struct dw_cur *c, size_t n);
uint64_t dw_uleb_any(struct dw_cur *c);

/* 1, 2, 3, 4 or 8 bytes; inline for what most reads are: whole, and in the host's order. */
static inline uint64_t dw_u(struct dw_cur *c, size_t n)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (!c->be && !c->bad && n <= c->size - c->pos) {
		const uint8_t *p = c->data + c->pos;
		uint16_t v2;
		uint32_t v4;
		uint64_t v8;
		switch (n) {
		case 1:
			c->pos += 1;
			return p[0];
		case 2:
			memcpy(&v2, p, 2);
			c->pos += 2;
			return v2;
		case 4:
			memcpy(&v4, p, 4);
			c->pos += 4;
			return v4;
		case 8:
			memcpy(&v8, p, 8);
			c->pos += 8;
			return v8;
		default:
			break;
		}
	}
#endif
	return dw_u_any(c, n);
}

/* An unsigned LEB128 number; inline for one byte, as most are. */
static inline uint64_t dw_uleb(struct dw_cur *c)
{
	if (!c->bad && c->pos < c->size && !(c->data[c->pos] & 0x80))
		return c->data[c->pos++];
	return dw_uleb_any(c);
}
int64_t dw_sleb(struct dw_cur *c);
void dw_skip(struct dw_cur *c, uint64_t n);
/* A NUL-terminated string at the cursor, or NULL (bad set). */
const char *dw_cstr(struct dw_cur *c);
/* The initial length: sets *offset_size to 4 or 8. */
uint64_t dw_initial_length(struct dw_cur *c, uint8_t *offset_size);
/* A NUL-terminated string at off in s, or NULL. */
const char *dw_str_at(const struct sw_section *s, uint64_t off);

struct dw_attr_spec {
	uint16_t at, form;
	int8_t size;      /* set by dw_abbrevs_size(): the form's size in the unit, -1: it varies */
	int64_t implicit; /* DW_FORM_implicit_const */
};

struct dw_abbrev {
	uint64_t code;
	uint16_t tag;
	bool children;
	uint32_t first, count; /* into dw_abbrevs.specs */
	int32_t fixed; /* bytes of all the attributes when their forms have fixed sizes, else -1 */
};

struct dw_abbrevs {
	uint64_t offset; /* in .debug_abbrev */
	struct dw_abbrev *list;
	size_t n;
	bool dense; /* list[i].code == i + 1 */
	struct dw_attr_spec *specs;
	size_t nspecs;
	uint32_t sized_for; /* the unit sizes dw_abbrev.fixed was computed for, 0: none */
};

struct dw_value {
	uint16_t form;
	uint64_t u;          /* constant, address, offset, index or absolute DIE offset */
	const uint8_t *data; /* blocks; direct strings */
	size_t len;
};

struct dw_range {
	uint64_t lo, hi;
};

/* A subprogram or inlined subroutine of a unit. */
struct dw_func {
	uint64_t die;         /* offset in .debug_info */
	uint64_t origin;      /* where the name is: an abstract origin's DIE, or die itself */
	uint32_t range_first; /* into dw_unit.ranges */
	uint32_t range_count;
	uint32_t parent; /* the enclosing subroutine, UINT32_MAX: none */
	uint32_t call_file, call_line, call_column;
	bool inlined;
	bool name_done;
	const char *name;
};

/* A stretch of addresses and the innermost subroutine that owns it. */
struct dw_seg {
	uint64_t lo, hi;
	uint32_t func;
};

/* 16 bytes: llvm too keeps the file and the column in 16 bits. */
struct dw_line_row {
	uint64_t addr;
	uint32_t line;
	uint16_t file, column;
};

/* Every DW_LINE_STRIDE-th row's address, so a search touches few cache lines. */
#define DW_LINE_STRIDE 16

struct dw_line_seq {
	uint64_t lo, hi;
	uint32_t first, last; /* rows [first, last], last is the end_sequence row */
};

/* The line table's part of struct dw_hint. */
struct dw_line_hint {
	size_t seq; /* sequences ending at or below the last address */
	size_t row; /* the row found there, SIZE_MAX: none */
};

struct dw_line_file {
	const char *name;
	uint64_t dir;
	const char *path; /* joined on first use */
};

struct dw_line_table {
	uint16_t version;
	struct dw_line_row *rows;
	size_t nrows;
	uint64_t *sample; /* rows[i * DW_LINE_STRIDE].addr */
	struct dw_line_seq *seqs;
	size_t nseqs;
	const char **dirs;
	size_t ndirs;
	struct dw_line_file *files;
	size_t nfiles;
	char **owned; /* joined paths */
	size_t nowned;
	bool borrowed; /* rows and seqs point into the index file */
};

struct dw_name_slot {
	uint64_t die; /* 0: empty (no DIE lives at offset 0) */
	const char *name;
};

struct dw_unit {
	uint64_t off, end, die_off; /* header, one past the unit, first DIE */
	uint64_t abbrev_off;
	uint16_t version;
	uint8_t unit_type, addr_size, offset_size;
	struct dw_abbrevs *abbrevs;

	bool head_done; /* the unit DIE's attributes below were read */
	int head_err;
	bool has_low_pc;
	uint64_t low_pc; /* the base address */
	uint64_t str_offsets_base, addr_base, rnglists_base;
	bool has_rnglists_base;
	bool has_stmt_list;
	uint64_t stmt_list;
	const char *comp_dir;
	/*
	 * A skeleton unit's split unit (DWARF 5, or the GNU extension to 4):
	 * the file it is in, its id, and where the split unit's DWARF 4 range
	 * lists start in the skeleton's .debug_ranges (DW_AT_GNU_ranges_base),
	 * which a split unit adds to their offsets as its ranges_base.
	 */
	const char *dwo_name;
	uint64_t dwo_id, dwo_ranges_base, ranges_base;
	bool has_dwo_id;
	bool has_high_pc, has_ranges;
	uint64_t high_pc;
	struct dw_value ranges_v;

	bool tree_done;
	int tree_err;
	struct dw_func *funcs;
	size_t nfuncs;
	struct dw_range *ranges;
	size_t nranges;
	struct dw_seg *segs;
	size_t nsegs;
	uint64_t *seg_index; /* segs[i * DW_LINE_STRIDE].lo */
	uint64_t *seg_lo;    /* segs[i].lo: a stride of them fits in two cache lines */

	bool line_done;
	int line_err;
	struct dw_line_table *line;
	bool from_index;                /* segs point into the index file (dwarf-index.c) */
	const struct ix_func *ix_funcs; /* from_index: the subroutines, in place of funcs */
};

/*
 * Where the last lookup landed, so that the next one, at a higher address
 * (a sorted batch), starts from there: counts of entries at or below the
 * last address, as the searches return them.
 */
struct dw_hint {
	bool valid;
	uint64_t addr;
	size_t cu;   /* of the unit map */
	size_t unit; /* the unit it found, SIZE_MAX: none (the rest is unset) */
	size_t seg;  /* of the unit's segments */
	struct dw_line_hint line;
};

struct sw_dwarf {
	struct sw_dwarf_sections s;
	struct dw_unit *units;
	size_t nunits;
	struct dw_abbrevs **abbrevs; /* cache by offset, sorted */
	size_t nabbrevs;
	struct dw_seg *cu_map; /* address -> unit index (func field) */
	size_t ncu_map;
	bool cu_map_done;
	struct dw_name_slot *names; /* DIE offset -> name, for origins many calls share */
	size_t nnames, names_cap;
	struct dw_index *index; /* an index file read back (dwarf-index.c), or NULL */
	bool parsed;            /* a unit was read from DWARF: the index is worth writing */
	bool mapped_read;       /* every unit the address map names is read (dwarf-parallel.c) */
	bool written;           /* an index file holds everything read so far */
	struct dw_hint hint;
	struct dw_splits *splits; /* the split units' files (dwarf-split.c), or NULL */
	bool split;               /* a split unit's reader: none of its units is a skeleton */
};

/* dwarf-form.c */
int dw_abbrevs_get(struct sw_dwarf *d, struct dw_unit *u, struct sw_error *err);
const struct dw_abbrev *dw_abbrev_find(const struct dw_abbrevs *a, uint64_t code);
/* Computes dw_abbrev.fixed for u's address and offset sizes. */
void dw_abbrevs_size(struct dw_abbrevs *a, const struct dw_unit *u);
/* What dw_abbrevs_size() sized the table for (struct dw_abbrevs.sized_for) when it was u. */
uint32_t dw_abbrevs_key(const struct dw_unit *u);
int dw_read_value(const struct sw_dwarf *d, const struct dw_unit *u, struct dw_cur *c,
		  uint16_t form, int64_t implicit, struct dw_value *v);
/*
 * Moves the cursor past a DIE's attributes without reading their values,
 * as dw_read_value() on each would (after dw_abbrevs_size() for u).
 * -EINVAL where that would fail.
 */
int dw_skip_attrs(const struct sw_dwarf *d, const struct dw_unit *u, struct dw_cur *c,
		  const struct dw_abbrev *ab);
/* The same for one attribute. */
int dw_skip_attr(const struct sw_dwarf *d, const struct dw_unit *u, struct dw_cur *c,
		 const struct dw_attr_spec *sp);
const char *dw_value_str(const struct sw_dwarf *d, const struct dw_unit *u,
			 const struct dw_value *v);
bool dw_value_addr(const struct sw_dwarf *d, const struct dw_unit *u, const struct dw_value *v,
		   uint64_t *ret);
bool dw_form_is_const(uint16_t form);
bool dw_form_is_ref(uint16_t form);

/* dwarf-ranges.c */
typedef int (*dw_range_fn)(void *ctx, uint64_t lo, uint64_t hi);
int dw_ranges_walk(const struct sw_dwarf *d, const struct dw_unit *u, const struct dw_value *v,
		   dw_range_fn fn, void *ctx, struct sw_error *err);
int dw_aranges_walk(const struct sw_dwarf *d,
		    int (*fn)(void *ctx, uint64_t cu_off, uint64_t lo, uint64_t hi), void *ctx);

/* dwarf-info.c */
struct dw_unit *dw_unit_containing(struct sw_dwarf *d, uint64_t die_off);
int dw_unit_head(struct sw_dwarf *d, struct dw_unit *u, struct sw_error *err);
int dw_unit_tree(struct sw_dwarf *d, struct dw_unit *u, struct sw_error *err);
/*
 * Reads the DIE tree and the line table of u, whose head was read, on any
 * thread: writes only into u, and leaves what it cannot read unread (for
 * dw_unit_tree() and dw_line_load() to read again and report).
 */
void dw_unit_read(const struct sw_dwarf *d, struct dw_unit *u);
const char *dw_func_name(struct sw_dwarf *d, struct dw_func *f);
int dw_cu_map_build(struct sw_dwarf *d, struct sw_error *err);

/* dwarf-line.c */
int dw_line_load(struct sw_dwarf *d, struct dw_unit *u, struct sw_error *err);
/* The line table of u, read into *ret (NULL when it has none); touches nothing else. */
int dw_line_read(const struct sw_dwarf *d, const struct dw_unit *u, struct dw_line_table **ret,
		 struct sw_error *err);
/* The unit of the unit map holding addr (after dw_cu_map_build()), or SIZE_MAX. */
size_t dw_unit_at(const struct sw_dwarf *d, uint64_t addr);
/*
 * The row index for addr, or -1.  forward: h holds the lookup of an
 * address at most addr in this table, and the search starts there; h is
 * set for the next lookup either way.
 */
long dw_line_find(const struct dw_line_table *t, uint64_t addr, bool forward,
		  struct dw_line_hint *h);
/* The joined path of file index i, or NULL when there is no such file. */
const char *dw_line_path(struct dw_line_table *t, const struct dw_unit *u, uint64_t i);
void dw_line_free(struct dw_line_table *t);

/* dwarf-split.c */
/*
 * Whether u of d, its head read, is a skeleton: its subroutines are in a
 * split unit.  (A split unit may repeat its file's name, as clang's do.)
 */
static inline bool dw_unit_is_skeleton(const struct sw_dwarf *d, const struct dw_unit *u)
{
	return !d->split && (u->unit_type == 4 || (u->unit_type == 1 && u->dwo_name));
}
/*
 * Reads the subroutines of skeleton u from its split unit into u, as
 * dw_unit_tree() reads a unit's own; leaves u without any, and notes the
 * file as missing, when the split unit is not found.
 */
int dw_split_tree(struct sw_dwarf *d, struct dw_unit *u, struct sw_error *err);
/*
 * The sections of a package (.dwp, whose cu_index is read) as unit id sees
 * them: each cut to the unit's contribution.  1; 0 when the index has no
 * such unit; -EINVAL when it is malformed.
 */
int dw_package_unit(const struct sw_dwarf_sections *pkg, uint64_t id,
		    struct sw_dwarf_sections *ret);
void dw_splits_free(struct dw_splits *sp);

/* dwarf-index.c: a unit's subroutines and line table from the index, if it holds them. */
struct ix_func;
/*
 * Fills frames[0].function and the inlined chain above subroutine f of a
 * unit read from the index, as sw_dwarf_lookup() does from funcs.
 */
int dw_index_chain(const struct sw_dwarf *d, struct dw_unit *u, uint32_t f, unsigned flags,
		   struct sw_dwarf_frame *frames, size_t max);
int dw_index_unit(struct sw_dwarf *d, struct dw_unit *u);
/* The address -> unit map from the index: 1 when it was taken. */
int dw_index_cu_map(struct sw_dwarf *d);
void dw_index_free(struct dw_index *ix);

/*
 * Painting of nested ranges into disjoint segments, inner ones winning; in
 * is in preorder (func ascending), which a stable sort by lo keeps for ties.
 */
int dw_segs_paint(struct dw_seg *in, size_t n, struct dw_seg **ret, size_t *ret_n);

#endif
