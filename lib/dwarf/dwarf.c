/*
 * The DWARF reader's front: the unit headers read when the reader is made,
 * and the lookup of an address, which finds its unit, reads that unit's
 * subroutines and line table the first time, and walks from the subprogram
 * that owns the address down through the inlined calls inside it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf-private.h"
#include "util/search.h"

#define NONE UINT32_MAX

static int read_unit_header(struct sw_dwarf *d, uint64_t off, struct dw_unit *u,
			    struct sw_error *err)
{
	struct dw_cur c = dw_cur_at(&d->s.info, d->s.big_endian, off);
	uint8_t osize;
	uint64_t len = dw_initial_length(&c, &osize);
	if (c.bad || len > c.size - c.pos || len < 2)
		return sw_error_set(err, -EINVAL, "bad unit length at .debug_info 0x%llx",
				    (unsigned long long)off);
	*u = (struct dw_unit){.off = off, .end = c.pos + len, .offset_size = osize};
	c.size = (size_t)u->end;
	u->version = (uint16_t)dw_u(&c, 2);
	if (u->version < 2 || u->version > 5)
		return sw_error_set(err, -ENOTSUP,
				    "unsupported DWARF version %u at .debug_info 0x%llx",
				    u->version, (unsigned long long)off);
	if (u->version >= 5) {
		u->unit_type = (uint8_t)dw_u(&c, 1);
		u->addr_size = (uint8_t)dw_u(&c, 1);
		u->abbrev_off = dw_u(&c, osize);
		if (u->unit_type == 4 || u->unit_type == 5) { /* skeleton, split_compile */
			u->dwo_id = dw_u(&c, 8);
			u->has_dwo_id = true;
		} else if (u->unit_type == 2 || u->unit_type == 6) /* type units */
			dw_skip(&c, 8 + (uint64_t)osize);
	} else {
		u->unit_type = 1;
		u->abbrev_off = dw_u(&c, osize);
		u->addr_size = (uint8_t)dw_u(&c, 1);
	}
	if (c.bad || (u->addr_size != 2 && u->addr_size != 4 && u->addr_size != 8))
		return sw_error_set(err, -EINVAL, "bad unit header at .debug_info 0x%llx",
				    (unsigned long long)off);
	u->die_off = c.pos;
	/* defaults for DWARF 5 bases a unit does not state */
	u->str_offsets_base = osize == 8 ? 16 : 8;
	u->addr_base = 8;
	return 0;
}

int sw_dwarf_new(const struct sw_dwarf_sections *sections, struct sw_dwarf **ret,
		 struct sw_error *err)
{
	struct sw_dwarf *d = calloc(1, sizeof(*d));
	if (!d)
		return sw_error_set(err, -ENOMEM, "out of memory");
	d->s = *sections;
	size_t cap = 0;
	uint64_t off = 0;
	int r = 0;
	while (off + 11 <= d->s.info.size) {
		struct dw_unit u;
		r = read_unit_header(d, off, &u, err);
		if (r < 0)
			break;
		if (d->nunits == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			void *p = ncap <= DW_MAX_UNITS ? realloc(d->units, ncap * sizeof(*d->units))
						       : NULL;
			if (!p) {
				r = sw_error_set(err, -E2BIG, "too many units in .debug_info");
				break;
			}
			d->units = p;
			cap = ncap;
		}
		d->units[d->nunits++] = u;
		off = u.end;
	}
	/* a bad unit only hides the units after it, unless it is the first */
	if (r < 0 && d->nunits == 0) {
		sw_dwarf_free(d);
		return r;
	}
	sw_error_clear(err);
	*ret = d;
	return 0;
}

void sw_dwarf_free(struct sw_dwarf *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nunits; i++) {
		struct dw_unit *u = &d->units[i];
		free(u->funcs);
		free(u->ranges);
		if (!u->from_index)
			free(u->segs);
		free(u->seg_index);
		free(u->seg_lo);
		dw_line_free(u->line);
	}
	for (size_t i = 0; i < d->nabbrevs; i++) {
		free(d->abbrevs[i]->list);
		free(d->abbrevs[i]->specs);
		free(d->abbrevs[i]);
	}
	free(d->abbrevs);
	free(d->units);
	free(d->cu_map);
	free(d->names);
	dw_index_free(d->index);
	dw_splits_free(d->splits);
	free(d);
}

/*
 * How many of segs start at or before addr.  index (every stride's first
 * lo) and los (every lo) may be NULL; they only make it faster.
 */
static size_t count_segs(const struct dw_seg *segs, size_t n, const uint64_t *index,
			 const uint64_t *los, uint64_t addr)
{
	size_t lo = 0, hi = n;
	if (index && n) {
		size_t a = 0, z = (n - 1) / DW_LINE_STRIDE + 1;
		while (a < z) {
			size_t mid = a + (z - a) / 2;
			if (index[mid] <= addr)
				a = mid + 1;
			else
				z = mid;
		}
		if (a == 0)
			return 0;
		lo = (a - 1) * DW_LINE_STRIDE;
		if (a * DW_LINE_STRIDE < hi)
			hi = a * DW_LINE_STRIDE;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if ((los ? los[mid] : segs[mid].lo) <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The segment containing addr, of the count of segments starting at or before it; or NULL. */
static const struct dw_seg *seg_at(const struct dw_seg *segs, size_t count, uint64_t addr)
{
	return count == 0 || addr >= segs[count - 1].hi ? NULL : &segs[count - 1];
}

size_t dw_unit_at(const struct sw_dwarf *d, uint64_t addr)
{
	const struct dw_seg *cs =
	    seg_at(d->cu_map, count_segs(d->cu_map, d->ncu_map, NULL, NULL, addr), addr);
	return cs ? cs->func : SIZE_MAX;
}

static void line_frame(struct dw_unit *u, uint64_t addr, bool forward, struct dw_line_hint *h,
		       struct sw_dwarf_frame *fr)
{
	if (!u->line)
		return;
	long row = dw_line_find(u->line, addr, forward, h);
	if (row < 0)
		return;
	const struct dw_line_row *rw = &u->line->rows[row];
	fr->file = dw_line_path(u->line, u, rw->file);
	if (fr->file) {
		fr->line = rw->line;
		fr->column = rw->column;
	}
}

int sw_dwarf_lookup(struct sw_dwarf *d, uint64_t addr, unsigned flags,
		    struct sw_dwarf_frame *frames, size_t max, struct sw_error *err)
{
	if (max == 0)
		return 0;
	int r = dw_cu_map_build(d, err);
	if (r < 0)
		return r;
	/* a lookup above the last one starts where it ended */
	struct dw_hint *h = &d->hint;
	bool forward = h->valid && addr >= h->addr;
	size_t cu = sw_upper_bound_from(d->cu_map, sizeof(*d->cu_map), offsetof(struct dw_seg, lo),
					d->ncu_map, forward ? h->cu : 0, addr);
	const struct dw_seg *cs = seg_at(d->cu_map, cu, addr);
	size_t unit = cs ? cs->func : SIZE_MAX;
	forward = forward && unit == h->unit;
	*h = (struct dw_hint){
	    .valid = true, .addr = addr, .cu = cu, .unit = unit, .seg = h->seg, .line = h->line};
	if (!cs)
		return 0;
	struct dw_unit *u = &d->units[unit];
	r = dw_unit_tree(d, u, err);
	if (r >= 0)
		r = dw_line_load(d, u, err);
	if (r < 0) {
		h->unit = SIZE_MAX;
		return r;
	}
	memset(frames, 0, sizeof(*frames));
	if (!forward)
		h->seg = count_segs(u->segs, u->nsegs, u->seg_index, u->seg_lo, addr);
	else if (u->seg_lo)
		h->seg =
		    sw_upper_bound_from(u->seg_lo, sizeof(*u->seg_lo), 0, u->nsegs, h->seg, addr);
	else
		h->seg = sw_upper_bound_from(u->segs, sizeof(*u->segs), offsetof(struct dw_seg, lo),
					     u->nsegs, h->seg, addr);
	const struct dw_seg *fs = seg_at(u->segs, h->seg, addr);
	line_frame(u, addr, forward, &h->line, &frames[0]);
	if (!fs)
		return 1;
	uint32_t f = fs->func;
	if (u->ix_funcs)
		return dw_index_chain(d, u, f, flags, frames, max);
	frames[0].function = dw_func_name(d, &u->funcs[f]);
	if (flags & SW_DWARF_NO_INLINES)
		return 1;
	size_t n = 1;
	while (u->funcs[f].inlined && u->funcs[f].parent != NONE && n < max) {
		const struct dw_func *inner = &u->funcs[f];
		f = inner->parent;
		struct sw_dwarf_frame *fr = &frames[n++];
		fr->function = dw_func_name(d, &u->funcs[f]);
		fr->file = u->line ? dw_line_path(u->line, u, inner->call_file) : NULL;
		fr->line = inner->call_line;
		fr->column = inner->call_column;
	}
	return (int)n;
}

/* The unit map's units, each once: into list, returning how many. */
static size_t mapped_units(const struct sw_dwarf *d, size_t *list, bool *seen)
{
	size_t n = 0;
	for (size_t i = 0; i < d->ncu_map; i++) {
		size_t u = d->cu_map[i].func;
		if (u < d->nunits && !seen[u]) {
			seen[u] = true;
			list[n++] = u;
		}
	}
	return n;
}

bool sw_dwarf_complete(struct sw_dwarf *d)
{
	if (dw_cu_map_build(d, NULL) < 0)
		return false;
	if (sw_dwarf_index_whole(d))
		return true;
	for (size_t i = 0; i < d->ncu_map; i++) {
		const struct dw_unit *u = &d->units[d->cu_map[i].func];
		if (!u->tree_done || !u->line_done)
			return false;
	}
	return true;
}

int sw_dwarf_boundaries(struct sw_dwarf *d, int (*fn)(void *ctx, uint64_t addr), void *ctx,
			struct sw_error *err)
{
	int r = dw_cu_map_build(d, err);
	if (r < 0)
		return r;
	size_t *list = malloc((d->nunits + 1) * sizeof(*list));
	bool *seen = calloc(d->nunits + 1, 1);
	if (!list || !seen) {
		free(list);
		free(seen);
		return sw_error_set(err, -ENOMEM, "out of memory");
	}
	size_t n = mapped_units(d, list, seen);
	for (size_t i = 0; i < d->ncu_map && r >= 0; i++)
		if ((r = fn(ctx, d->cu_map[i].lo)) >= 0)
			r = fn(ctx, d->cu_map[i].hi);
	for (size_t k = 0; k < n && r >= 0; k++) {
		struct dw_unit *u = &d->units[list[k]];
		r = dw_unit_tree(d, u, err);
		if (r >= 0)
			r = dw_line_load(d, u, err);
		for (size_t i = 0; i < u->nsegs && r >= 0; i++)
			if ((r = fn(ctx, u->segs[i].lo)) >= 0)
				r = fn(ctx, u->segs[i].hi);
		const struct dw_line_table *t = u->line;
		for (size_t i = 0; t && i < t->nseqs && r >= 0; i++)
			if ((r = fn(ctx, t->seqs[i].lo)) >= 0)
				r = fn(ctx, t->seqs[i].hi);
		for (size_t i = 0; t && i < t->nrows && r >= 0; i++)
			r = fn(ctx, t->rows[i].addr);
	}
	free(list);
	free(seen);
	return r;
}
