/*
 * The DWARF reader's index file: what reading a unit's DIE tree and line
 * table produced (the address -> subroutine segments, the subroutines with
 * their names, inlined calls and call sites, the line rows and sequences,
 * the joined file paths) and the address -> unit map, written so that a
 * later reader of the same binary maps it and skips parsing.  It holds no
 * answer for any address.
 *
 * The file is input like any other: its header (magic, version, byte
 * order, record sizes, the caller's key, the DWARF section sizes, every
 * count, the total size) must match exactly or the file is ignored, and
 * every index a record holds is checked before it is used.  A unit the
 * index does not hold (or holds badly) is parsed from DWARF as before.
 * Writers write a temporary file in the same folder, fsync it and rename
 * it over the old one, so a reader sees a whole file or none.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "dwarf-index-format.h"
#include "util/publish.h"

void dw_index_free(struct dw_index *ix)
{
	if (!ix)
		return;
	munmap(ix->map, ix->size);
	free(ix);
}

/* Where each array starts; false when the counts do not add up to size. */
static bool ix_layout(struct dw_index *ix)
{
	const struct ix_header *h = ix->h;
	uint64_t sizes[] = {
	    h->nunits * sizeof(struct ix_unit),    h->ncu_map * sizeof(struct dw_seg),
	    h->nsegs * sizeof(struct dw_seg),      h->nfuncs * sizeof(struct ix_func),
	    h->nrows * sizeof(struct dw_line_row), h->nseqs * sizeof(struct dw_line_seq),
	    h->nfiles * sizeof(uint32_t),          h->nstr};
	const void *starts[8];
	uint64_t counts[] = {h->nunits, h->ncu_map, h->nsegs,  h->nfuncs,
			     h->nrows,  h->nseqs,   h->nfiles, h->nstr};
	for (size_t i = 0; i < 8; i++)
		if (counts[i] > IX_MAX || sizes[i] > IX_MAX)
			return false;
	if (!sw_map_parts(ix->map, ix->size, sizeof(*h), sizes, 8, starts) || h->nstr == 0)
		return false;
	ix->units = starts[0];
	ix->cu_map = starts[1];
	ix->segs = starts[2];
	ix->funcs = starts[3];
	ix->rows = starts[4];
	ix->seqs = starts[5];
	ix->files = starts[6];
	ix->str = starts[7];
	return ix->str[h->nstr - 1] == '\0';
}

static bool ix_header_ok(const struct sw_dwarf *d, const struct ix_header *h, size_t size,
			 const uint8_t *key, size_t key_len)
{
	return memcmp(h->magic, IX_MAGIC, 8) == 0 && h->version == IX_VERSION &&
	       h->order == IX_ORDER && h->header_size == sizeof(*h) &&
	       h->unit_size == sizeof(struct ix_unit) && h->seg_size == sizeof(struct dw_seg) &&
	       h->func_size == sizeof(struct ix_func) &&
	       h->row_size == sizeof(struct dw_line_row) &&
	       h->seq_size == sizeof(struct dw_line_seq) && h->key_len == key_len &&
	       memcmp(h->key, key, key_len) == 0 && h->info_size == d->s.info.size &&
	       h->line_size == d->s.line.size && h->abbrev_size == d->s.abbrev.size &&
	       h->file_size == size && h->nunits == d->nunits;
}

int sw_dwarf_index_open(struct sw_dwarf *d, const char *path, const uint8_t *key, size_t key_len)
{
	if (d->index || key_len > SW_DWARF_INDEX_MAX_KEY)
		return -EINVAL;
	void *map;
	size_t size;
	int r = sw_map_whole(path, sizeof(struct ix_header), IX_MAX, &map, &size);
	if (r < 0)
		return r;
	struct dw_index *ix = calloc(1, sizeof(*ix));
	if (!ix) {
		munmap(map, size);
		return -ENOMEM;
	}
	*ix = (struct dw_index){.map = map, .size = size, .h = map};
	if (!ix_header_ok(d, ix->h, ix->size, key, key_len) || !ix_layout(ix)) {
		dw_index_free(ix);
		return -EINVAL;
	}
	d->index = ix;
	return 0;
}

/* The unit's address map from the index: 1 when it was taken. */
int dw_index_cu_map(struct sw_dwarf *d)
{
	const struct dw_index *ix = d->index;
	if (!ix || ix->h->ncu_map == 0)
		return 0;
	/* what lookups index with; order only makes answers right or wrong */
	for (size_t i = 0; i < ix->h->ncu_map; i++) {
		if (ix->cu_map[i].func >= d->nunits)
			return 0;
	}
	d->cu_map = malloc(ix->h->ncu_map * sizeof(*d->cu_map));
	if (!d->cu_map)
		return 0;
	memcpy(d->cu_map, ix->cu_map, ix->h->ncu_map * sizeof(*d->cu_map));
	d->ncu_map = ix->h->ncu_map;
	return 1;
}

static bool in_range(uint64_t first, uint64_t count, uint64_t total)
{
	return first <= total && count <= total - first;
}

static bool unit_ok(const struct dw_index *ix, const struct ix_unit *x)
{
	const struct ix_header *h = ix->h;
	if (!in_range(x->seg_first, x->seg_count, h->nsegs) ||
	    !in_range(x->func_first, x->func_count, h->nfuncs) ||
	    !in_range(x->row_first, x->row_count, h->nrows) ||
	    !in_range(x->seq_first, x->seq_count, h->nseqs) ||
	    !in_range(x->file_first, x->file_count, h->nfiles) || x->func_count > DW_MAX_FUNCS ||
	    x->row_count > DW_MAX_ROWS || x->file_count > DW_MAX_FILES)
		return false;
	/* what lookups index with; order only makes answers right or wrong */
	for (uint64_t i = 0; i < x->seg_count; i++) {
		if (ix->segs[x->seg_first + i].func >= x->func_count)
			return false;
	}
	for (uint64_t i = 0; i < x->seq_count; i++) {
		const struct dw_line_seq *s = &ix->seqs[x->seq_first + i];
		if (s->first >= s->last || s->last >= x->row_count)
			return false;
	}
	for (uint64_t i = 0; i < x->file_count; i++) {
		uint32_t f = ix->files[x->file_first + i];
		if (f != IX_NONE && f >= h->nstr)
			return false;
	}
	return true;
}

/* Checks the unit's subroutines, which lookups then read in place. */
static int unit_funcs(const struct dw_index *ix, const struct ix_unit *x, struct dw_unit *u)
{
	const struct ix_func *fn = ix->funcs + x->func_first;
	for (uint64_t i = 0; i < x->func_count; i++) {
		if ((fn[i].name != IX_NONE && fn[i].name >= ix->h->nstr) ||
		    (fn[i].parent != IX_NONE && fn[i].parent >= x->func_count))
			return -EINVAL;
	}
	u->ix_funcs = fn;
	u->nfuncs = x->func_count;
	return 0;
}

static const char *ix_name(const struct dw_index *ix, const struct ix_func *f)
{
	return f->name == IX_NONE ? NULL : ix->str + f->name;
}

int dw_index_chain(const struct sw_dwarf *d, struct dw_unit *u, uint32_t f, unsigned flags,
		   struct sw_dwarf_frame *frames, size_t max)
{
	const struct dw_index *ix = d->index;
	const struct ix_func *fn = u->ix_funcs;
	frames[0].function = ix_name(ix, &fn[f]);
	if (flags & SW_DWARF_NO_INLINES)
		return 1;
	size_t n = 1;
	/* parents were checked to be in the unit; a loop ends at max */
	while (fn[f].inlined && fn[f].parent != IX_NONE && n < max) {
		const struct ix_func *inner = &fn[f];
		f = inner->parent;
		struct sw_dwarf_frame *fr = &frames[n++];
		fr->function = ix_name(ix, &fn[f]);
		fr->file = u->line ? dw_line_path(u->line, u, inner->call_file) : NULL;
		fr->line = inner->call_line;
		fr->column = inner->call_column;
	}
	return (int)n;
}

static int unit_segs(const struct dw_index *ix, const struct ix_unit *x, struct dw_unit *u)
{
	u->segs = (struct dw_seg *)(ix->segs + x->seg_first);
	u->nsegs = x->seg_count;
	u->seg_index = malloc((u->nsegs / DW_LINE_STRIDE + 1) * sizeof(*u->seg_index));
	u->seg_lo = malloc((u->nsegs + 1) * sizeof(*u->seg_lo));
	if (!u->seg_index || !u->seg_lo)
		return -ENOMEM;
	for (size_t i = 0; i < u->nsegs; i++) {
		u->seg_lo[i] = u->segs[i].lo;
		if (i % DW_LINE_STRIDE == 0)
			u->seg_index[i / DW_LINE_STRIDE] = u->segs[i].lo;
	}
	return 0;
}

static int unit_line(const struct dw_index *ix, const struct ix_unit *x, struct dw_unit *u)
{
	if (!x->has_line)
		return 0;
	struct dw_line_table *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->borrowed = true;
	t->version = (uint16_t)x->line_version;
	t->rows = (struct dw_line_row *)(ix->rows + x->row_first);
	t->nrows = x->row_count;
	t->seqs = (struct dw_line_seq *)(ix->seqs + x->seq_first);
	t->nseqs = x->seq_count;
	t->sample = malloc((t->nrows / DW_LINE_STRIDE + 1) * sizeof(*t->sample));
	t->files = calloc(x->file_count ? x->file_count : 1, sizeof(*t->files));
	u->line = t;
	if (!t->sample || !t->files)
		return -ENOMEM;
	for (size_t i = 0; i < t->nrows; i += DW_LINE_STRIDE)
		t->sample[i / DW_LINE_STRIDE] = t->rows[i].addr;
	for (size_t i = 0; i < x->file_count; i++) {
		uint32_t f = ix->files[x->file_first + i];
		t->files[i].name = t->files[i].path = f == IX_NONE ? NULL : ix->str + f;
	}
	t->nfiles = x->file_count;
	return 0;
}

bool sw_dwarf_index_whole(const struct sw_dwarf *d)
{
	const struct dw_index *ix = d->index;
	if (!ix)
		return false;
	for (uint64_t i = 0; i < ix->h->ncu_map; i++) {
		uint64_t unit = ix->cu_map[i].func;
		if (unit >= ix->h->nunits || !ix->units[unit].held)
			return false;
	}
	return true;
}

/* Drops what a failed unit_* left so that the unit is parsed from DWARF. */
static void unit_undo(struct dw_unit *u)
{
	u->ix_funcs = NULL;
	free(u->seg_index);
	free(u->seg_lo);
	dw_line_free(u->line);
	u->segs = NULL;
	u->seg_index = u->seg_lo = NULL;
	u->line = NULL;
	u->nfuncs = u->nsegs = 0;
}

int dw_index_unit(struct sw_dwarf *d, struct dw_unit *u)
{
	const struct dw_index *ix = d->index;
	if (!ix || u->tree_done || u->line_done)
		return 0;
	size_t i = (size_t)(u - d->units);
	const struct ix_unit *x = &ix->units[i];
	if (!x->held || x->off != u->off || !unit_ok(ix, x))
		return 0;
	if (unit_funcs(ix, x, u) < 0)
		return 0;
	u->from_index = true;
	if (unit_segs(ix, x, u) < 0 || unit_line(ix, x, u) < 0) {
		unit_undo(u);
		u->from_index = false;
		return 0;
	}
	u->tree_done = u->line_done = true;
	return 1;
}
