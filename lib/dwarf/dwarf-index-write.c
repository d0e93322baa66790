/*
 * Writing the DWARF reader's index file (dwarf-index.c reads it): every
 * unit whose DIE tree and line table were read without error, the names
 * and joined paths they point at gathered into one string table (shared by
 * pointer), and the address -> unit map, published whole (util/publish.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf-index-format.h"
#include "util/publish.h"

struct strtab {
	const char **keys; /* open addressing by pointer */
	uint32_t *offs;
	size_t cap, n;
	char *data;
	size_t len, data_cap;
};

static size_t hash_ptr(const void *p)
{
	uint64_t x = (uint64_t)(uintptr_t)p;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x;
}

static int strtab_grow(struct strtab *t)
{
	size_t cap = t->cap ? t->cap * 2 : 4096;
	const char **keys = calloc(cap, sizeof(*keys));
	uint32_t *offs = malloc(cap * sizeof(*offs));
	if (!keys || !offs) {
		free(keys);
		free(offs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->keys[i])
			continue;
		size_t h = hash_ptr(t->keys[i]) & (cap - 1);
		while (keys[h])
			h = (h + 1) & (cap - 1);
		keys[h] = t->keys[i];
		offs[h] = t->offs[i];
	}
	free(t->keys);
	free(t->offs);
	t->keys = keys;
	t->offs = offs;
	t->cap = cap;
	return 0;
}

/* The offset of s in the table (added once per pointer), or IX_NONE. */
static int strtab_add(struct strtab *t, const char *s, uint32_t *ret)
{
	*ret = IX_NONE;
	if (!s)
		return 0;
	if (t->n * 2 >= t->cap && strtab_grow(t) < 0)
		return -ENOMEM;
	size_t h = hash_ptr(s) & (t->cap - 1);
	while (t->keys[h] && t->keys[h] != s)
		h = (h + 1) & (t->cap - 1);
	if (t->keys[h]) {
		*ret = t->offs[h];
		return 0;
	}
	size_t len = strlen(s) + 1;
	if (t->len + len >= IX_NONE)
		return -E2BIG;
	if (t->len + len > t->data_cap) {
		size_t cap = t->data_cap ? t->data_cap * 2 : 65536;
		while (cap < t->len + len)
			cap *= 2;
		char *p = realloc(t->data, cap);
		if (!p)
			return -ENOMEM;
		t->data = p;
		t->data_cap = cap;
	}
	memcpy(t->data + t->len, s, len);
	t->keys[h] = s;
	t->offs[h] = (uint32_t)t->len;
	t->n++;
	*ret = (uint32_t)t->len;
	t->len += len;
	return 0;
}

/* Growable arrays of the index's records. */
struct ix_out {
	struct ix_unit *units;
	struct dw_seg *segs;
	struct ix_func *funcs;
	struct dw_line_row *rows;
	struct dw_line_seq *seqs;
	uint32_t *files;
	size_t nsegs, nfuncs, nrows, nseqs, nfiles;
	struct strtab str;
};

static int reserve(void **p, size_t want, size_t size)
{
	void *q = realloc(*p, (want ? want : 1) * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	return 0;
}

static bool held(const struct dw_unit *u)
{
	return u->tree_done && !u->tree_err && u->line_done && !u->line_err;
}

static int out_funcs(struct sw_dwarf *d, struct dw_unit *u, struct ix_out *o)
{
	if (reserve((void **)&o->funcs, o->nfuncs + u->nfuncs, sizeof(*o->funcs)) < 0)
		return -ENOMEM;
	for (size_t i = 0; u->ix_funcs && i < u->nfuncs; i++) {
		/* a unit read from the old index: its names move to the new table */
		const struct ix_func *f = &u->ix_funcs[i];
		struct ix_func *x = &o->funcs[o->nfuncs + i];
		*x = *f;
		if (strtab_add(&o->str, f->name == IX_NONE ? NULL : d->index->str + f->name,
			       &x->name) < 0)
			return -ENOMEM;
	}
	for (size_t i = 0; !u->ix_funcs && i < u->nfuncs; i++) {
		struct dw_func *f = &u->funcs[i];
		struct ix_func *x = &o->funcs[o->nfuncs + i];
		*x = (struct ix_func){.parent = f->parent,
				      .call_file = f->call_file,
				      .call_line = f->call_line,
				      .call_column = f->call_column,
				      .inlined = f->inlined};
		if (strtab_add(&o->str, dw_func_name(d, f), &x->name) < 0)
			return -ENOMEM;
	}
	o->nfuncs += u->nfuncs;
	return 0;
}

static int out_segs(const struct dw_unit *u, struct ix_out *o)
{
	if (reserve((void **)&o->segs, o->nsegs + u->nsegs, sizeof(*o->segs)) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < u->nsegs; i++) {
		struct dw_seg *s = &o->segs[o->nsegs + i];
		memset(s, 0, sizeof(*s)); /* no stray padding bytes in the file */
		s->lo = u->segs[i].lo;
		s->hi = u->segs[i].hi;
		s->func = u->segs[i].func;
	}
	o->nsegs += u->nsegs;
	return 0;
}

static int out_line(struct dw_unit *u, struct ix_out *o, struct ix_unit *x)
{
	struct dw_line_table *t = u->line;
	if (!t)
		return 0;
	x->has_line = 1;
	x->line_version = t->version;
	if (reserve((void **)&o->rows, o->nrows + t->nrows, sizeof(*o->rows)) < 0 ||
	    reserve((void **)&o->seqs, o->nseqs + t->nseqs, sizeof(*o->seqs)) < 0 ||
	    reserve((void **)&o->files, o->nfiles + t->nfiles, sizeof(*o->files)) < 0)
		return -ENOMEM;
	memcpy(o->rows + o->nrows, t->rows, t->nrows * sizeof(*t->rows));
	memcpy(o->seqs + o->nseqs, t->seqs, t->nseqs * sizeof(*t->seqs));
	x->row_count = t->nrows;
	x->seq_count = t->nseqs;
	x->file_count = t->nfiles;
	o->nrows += t->nrows;
	o->nseqs += t->nseqs;
	/* file i of the table, as dw_line_path() numbers them by version */
	for (size_t i = 0; i < t->nfiles; i++) {
		const char *p = dw_line_path(t, u, t->version >= 5 ? i : i + 1);
		if (strtab_add(&o->str, p, &o->files[o->nfiles + i]) < 0)
			return -ENOMEM;
	}
	o->nfiles += t->nfiles;
	return 0;
}

static int out_units(struct sw_dwarf *d, struct ix_out *o)
{
	o->units = calloc(d->nunits ? d->nunits : 1, sizeof(*o->units));
	if (!o->units)
		return -ENOMEM;
	for (size_t i = 0; i < d->nunits; i++) {
		struct dw_unit *u = &d->units[i];
		struct ix_unit *x = &o->units[i];
		x->off = u->off;
		if (!held(u))
			continue;
		x->held = 1;
		x->seg_first = o->nsegs;
		x->seg_count = u->nsegs;
		x->func_first = o->nfuncs;
		x->func_count = u->nfuncs;
		x->row_first = o->nrows;
		x->seq_first = o->nseqs;
		x->file_first = o->nfiles;
		if (out_funcs(d, u, o) < 0 || out_segs(u, o) < 0 || out_line(u, o, x) < 0)
			return -ENOMEM;
	}
	return 0;
}

static void out_finish(struct ix_out *o)
{
	free(o->units);
	free(o->segs);
	free(o->funcs);
	free(o->rows);
	free(o->seqs);
	free(o->files);
	free(o->str.keys);
	free(o->str.offs);
	free(o->str.data);
}

static size_t padded(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

static void fill_header(struct ix_header *h, const struct sw_dwarf *d, const struct ix_out *o,
			const uint8_t *key, size_t key_len)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, IX_MAGIC, 8);
	h->version = IX_VERSION;
	h->order = IX_ORDER;
	h->header_size = sizeof(*h);
	h->key_len = (uint32_t)key_len;
	memcpy(h->key, key, key_len);
	h->unit_size = sizeof(struct ix_unit);
	h->seg_size = sizeof(struct dw_seg);
	h->func_size = sizeof(struct ix_func);
	h->row_size = sizeof(struct dw_line_row);
	h->seq_size = sizeof(struct dw_line_seq);
	h->info_size = d->s.info.size;
	h->line_size = d->s.line.size;
	h->abbrev_size = d->s.abbrev.size;
	h->nunits = d->nunits;
	h->ncu_map = d->cu_map_done ? d->ncu_map : 0;
	h->nsegs = o->nsegs;
	h->nfuncs = o->nfuncs;
	h->nrows = o->nrows;
	h->nseqs = o->nseqs;
	h->nfiles = o->nfiles;
	h->nstr = o->str.len;
	h->file_size = padded(sizeof(*h)) + padded(h->nunits * sizeof(struct ix_unit)) +
		       padded(h->ncu_map * sizeof(struct dw_seg)) +
		       padded(h->nsegs * sizeof(struct dw_seg)) +
		       padded(h->nfuncs * sizeof(struct ix_func)) +
		       padded(h->nrows * sizeof(struct dw_line_row)) +
		       padded(h->nseqs * sizeof(struct dw_line_seq)) +
		       padded(h->nfiles * sizeof(uint32_t)) + padded(h->nstr);
}

/* Writes the file beside path and renames it over path. */
static int publish(const char *path, const struct ix_header *h, const struct sw_dwarf *d,
		   const struct ix_out *o)
{
	const struct sw_part parts[] = {
	    {h, sizeof(*h)},
	    {o->units, d->nunits * sizeof(*o->units)},
	    {d->cu_map, h->ncu_map * sizeof(*d->cu_map)},
	    {o->segs, o->nsegs * sizeof(*o->segs)},
	    {o->funcs, o->nfuncs * sizeof(*o->funcs)},
	    {o->rows, o->nrows * sizeof(*o->rows)},
	    {o->seqs, o->nseqs * sizeof(*o->seqs)},
	    {o->files, o->nfiles * sizeof(*o->files)},
	    {o->str.data, o->str.len},
	};
	return sw_publish(path, parts, sizeof(parts) / sizeof(parts[0]), 1);
}

int sw_dwarf_index_write(struct sw_dwarf *d, const char *path, const uint8_t *key, size_t key_len,
			 struct sw_error *err)
{
	if (key_len > SW_DWARF_INDEX_MAX_KEY)
		return sw_error_set(err, -EINVAL, "index key too long");
	struct ix_out o = {0};
	uint32_t first;
	/* offset 0 is a name no record uses, so the table is never empty */
	int r = strtab_add(&o.str, "", &first);
	if (r >= 0)
		r = out_units(d, &o);
	if (r < 0) {
		out_finish(&o);
		return sw_error_set(err, r, "out of memory");
	}
	struct ix_header h;
	fill_header(&h, d, &o, key, key_len);
	r = publish(path, &h, d, &o);
	out_finish(&o);
	if (r < 0)
		return sw_error_set(err, r, "cannot write '%s': %s", path, strerror(-r));
	d->parsed = false;
	d->written = true;
	return 0;
}

bool sw_dwarf_index_stale(const struct sw_dwarf *d)
{
	return d->parsed || (!d->index && !d->written && d->cu_map_done);
}
