/*
 * .debug_info: the unit headers, each unit's own DIE (base address, string
 * and address bases, line program, compilation directory), the index of a
 * unit's subprograms and inlined subroutines built the first time an
 * address in it is asked, names found through DW_AT_specification and
 * DW_AT_abstract_origin, and the address-to-unit map.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf-private.h"

#define TAG_SUBPROGRAM 0x2e
#define TAG_INLINED    0x1d
#define NONE           UINT32_MAX

struct dw_unit *dw_unit_containing(struct sw_dwarf *d, uint64_t die_off)
{
	size_t lo = 0, hi = d->nunits;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->units[mid].off <= die_off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	struct dw_unit *u = &d->units[lo - 1];
	return die_off >= u->die_off && die_off < u->end ? u : NULL;
}

static int bad_die(uint64_t off)
{
	return -EINVAL;
	(void)off;
}

/* Reads the unit's own DIE: the values every other lookup in it needs. */
int dw_unit_head(struct sw_dwarf *d, struct dw_unit *u, struct sw_error *err)
{
	if (u->head_done)
		return u->head_err;
	u->head_done = true;
	int r = dw_abbrevs_get(d, u, err);
	if (r < 0)
		return u->head_err = r;
	struct dw_cur c = dw_cur_at(&d->s.info, d->s.big_endian, u->die_off);
	c.size = (size_t)u->end;
	const struct dw_abbrev *ab = dw_abbrev_find(u->abbrevs, dw_uleb(&c));
	if (!ab || c.bad)
		return u->head_err =
			   sw_error_set(err, -EINVAL, "bad unit DIE at .debug_info 0x%llx",
					(unsigned long long)u->die_off);
	struct dw_value low = {0}, high = {0}, comp_dir = {0};
	bool has_low = false;
	for (uint32_t i = 0; i < ab->count; i++) {
		const struct dw_attr_spec *sp = &u->abbrevs->specs[ab->first + i];
		struct dw_value v;
		if (dw_read_value(d, u, &c, sp->form, sp->implicit, &v) < 0)
			return u->head_err = sw_error_set(
				   err, -EINVAL, "bad attribute form 0x%x at .debug_info 0x%zx",
				   sp->form, c.pos);
		switch (sp->at) {
		case 0x11:
			low = v;
			has_low = true;
			break;
		case 0x12:
			high = v;
			u->has_high_pc = true;
			break;
		case 0x55:
			u->ranges_v = v;
			u->has_ranges = true;
			break;
		case 0x10:
			u->stmt_list = v.u;
			u->has_stmt_list = true;
			break;
		case 0x1b:
			comp_dir = v;
			break;
		case 0x72:
			u->str_offsets_base = v.u;
			break;
		case 0x73:
		case 0x2133:
			u->addr_base = v.u;
			break;
		case 0x74:
			u->rnglists_base = v.u;
			u->has_rnglists_base = true;
			break;
		case 0x76:   /* dwo_name */
		case 0x2130: /* GNU_dwo_name */
			u->dwo_name = dw_value_str(d, u, &v);
			break;
		case 0x2131: /* GNU_dwo_id */
			u->dwo_id = v.u;
			u->has_dwo_id = true;
			break;
		case 0x2132: /* GNU_ranges_base */
			u->dwo_ranges_base = v.u;
			break;
		default:
			break;
		}
	}
	if (has_low && dw_value_addr(d, u, &low, &u->low_pc))
		u->has_low_pc = true;
	if (u->has_high_pc) {
		if (dw_form_is_const(high.form))
			u->high_pc = u->low_pc + high.u;
		else if (!dw_value_addr(d, u, &high, &u->high_pc))
			u->has_high_pc = false;
	}
	if (comp_dir.form)
		u->comp_dir = dw_value_str(d, u, &comp_dir);
	return 0;
}

/* --- the subroutine index of one unit --- */

struct tree_builder {
	struct sw_dwarf *d;
	struct dw_unit *u;
	size_t fcap, rcap;
	struct sw_error *err;
};

static int add_range(void *ctx, uint64_t lo, uint64_t hi)
{
	struct tree_builder *b = ctx;
	struct dw_unit *u = b->u;
	if (lo >= hi)
		return 0;
	if (u->nranges == b->rcap) {
		size_t cap = b->rcap ? b->rcap * 2 : 256;
		void *p =
		    cap <= DW_MAX_RANGES ? realloc(u->ranges, cap * sizeof(*u->ranges)) : NULL;
		if (!p)
			return sw_error_set(b->err, -E2BIG,
					    "too many address ranges in unit 0x%llx",
					    (unsigned long long)u->off);
		u->ranges = p;
		b->rcap = cap;
	}
	u->ranges[u->nranges++] = (struct dw_range){lo, hi};
	return 0;
}

struct die_pc {
	struct dw_value low, high, ranges;
	bool has_low, has_high, has_ranges;
};

/* The ranges of a DIE, as llvm's getAddressRanges: low/high first, then DW_AT_ranges. */
static int die_ranges(struct tree_builder *b, const struct die_pc *pc)
{
	uint64_t lo, hi;
	if (pc->has_low && pc->has_high && dw_value_addr(b->d, b->u, &pc->low, &lo)) {
		uint64_t tomb =
		    b->u->addr_size == 8 ? UINT64_MAX : ((uint64_t)1 << (b->u->addr_size * 8)) - 1;
		bool ok = true;
		if (dw_form_is_const(pc->high.form))
			hi = lo + pc->high.u;
		else
			ok = dw_value_addr(b->d, b->u, &pc->high, &hi);
		if (ok && lo != tomb)
			return add_range(b, lo, hi);
		return 0;
	}
	if (pc->has_ranges)
		return dw_ranges_walk(b->d, b->u, &pc->ranges, add_range, b, b->err);
	return 0;
}

static int new_func(struct tree_builder *b, uint64_t die, uint16_t tag, uint32_t parent,
		    uint32_t *ret)
{
	struct dw_unit *u = b->u;
	if (u->nfuncs == b->fcap) {
		size_t cap = b->fcap ? b->fcap * 2 : 64;
		void *p = cap <= DW_MAX_FUNCS ? realloc(u->funcs, cap * sizeof(*u->funcs)) : NULL;
		if (!p)
			return sw_error_set(b->err, -E2BIG, "too many subroutines in unit 0x%llx",
					    (unsigned long long)u->off);
		u->funcs = p;
		b->fcap = cap;
	}
	uint32_t i = (uint32_t)u->nfuncs++;
	u->funcs[i] = (struct dw_func){
	    .die = die,
	    .range_first = (uint32_t)u->nranges,
	    .parent = parent,
	    .inlined = tag == TAG_INLINED,
	};
	*ret = i;
	return 0;
}

/* The attributes of a subroutine that the index keeps something of. */
static bool wanted_attr(uint16_t at)
{
	switch (at) {
	case 0x11:   /* low_pc */
	case 0x12:   /* high_pc */
	case 0x55:   /* ranges */
	case 0x58:   /* call_file */
	case 0x59:   /* call_line */
	case 0x57:   /* call_column */
	case 0x31:   /* abstract_origin */
	case 0x03:   /* name */
	case 0x6e:   /* linkage_name */
	case 0x2007: /* MIPS_linkage_name */
	case 0x47:   /* specification */
		return true;
	default:
		return false;
	}
}

/* Reads one DIE's attributes; for a subroutine, records it. */
static int read_die(struct tree_builder *b, struct dw_cur *c, const struct dw_abbrev *ab,
		    uint64_t die, uint32_t enclosing, uint32_t *ret_func)
{
	struct dw_unit *u = b->u;
	bool sub = ab->tag == TAG_SUBPROGRAM || ab->tag == TAG_INLINED;
	*ret_func = NONE;
	if (!sub && ab->fixed >= 0) {
		dw_skip(c, (uint64_t)ab->fixed);
		return c->bad ? sw_error_set(b->err, -EINVAL, "truncated DIE at .debug_info 0x%llx",
					     (unsigned long long)die)
			      : 0;
	}
	/* another DIE's values are not wanted: skip them (a failure is read again, to name it) */
	size_t start = c->pos;
	if (!sub && dw_skip_attrs(b->d, u, c, ab) == 0)
		return 0;
	c->pos = start;
	c->bad = false;
	/* only now: zeroing these for every DIE skipped above was a cost of its own */
	struct die_pc pc = {0};
	uint32_t call[3] = {0, 0, 0};
	uint64_t origin = 0;
	bool named = false;
	for (uint32_t i = 0; i < ab->count; i++) {
		const struct dw_attr_spec *sp = &u->abbrevs->specs[ab->first + i];
		bool wanted = sub && wanted_attr(sp->at);
		struct dw_value v;
		if ((wanted ? dw_read_value(b->d, u, c, sp->form, sp->implicit, &v)
			    : dw_skip_attr(b->d, u, c, sp)) < 0)
			return sw_error_set(b->err, -EINVAL,
					    "bad attribute form 0x%x in DIE at .debug_info 0x%llx",
					    sp->form, (unsigned long long)die);
		if (!wanted)
			continue;
		switch (sp->at) {
		case 0x11:
			pc.low = v;
			pc.has_low = true;
			break;
		case 0x12:
			pc.high = v;
			pc.has_high = true;
			break;
		case 0x55:
			pc.ranges = v;
			pc.has_ranges = true;
			break;
		case 0x58:
			call[0] = (uint32_t)v.u;
			break;
		case 0x59:
			call[1] = (uint32_t)v.u;
			break;
		case 0x57:
			call[2] = (uint32_t)v.u;
			break;
		case 0x31:
			if (dw_form_is_ref(v.form))
				origin = v.u;
			break;
		case 0x03:
		case 0x6e:
		case 0x2007:
		case 0x47:
			named = true; /* the DIE has its own say: resolve it, not its origin */
			break;
		default:
			break;
		}
	}
	if (!sub)
		return 0;
	uint32_t f = 0;
	int r = new_func(b, die, ab->tag, ab->tag == TAG_INLINED ? enclosing : NONE, &f);
	if (r >= 0)
		r = die_ranges(b, &pc);
	if (r < 0)
		return r;
	struct dw_func *fn = &u->funcs[f];
	fn->range_count = (uint32_t)(u->nranges - fn->range_first);

	fn->origin = origin && !named ? origin : die;
	fn->call_file = call[0];
	fn->call_line = call[1];
	fn->call_column = call[2];
	*ret_func = f;
	return 0;
}

static int walk_tree(struct tree_builder *b)
{
	struct dw_unit *u = b->u;
	struct dw_cur c = dw_cur_at(&b->d->s.info, b->d->s.big_endian, u->die_off);
	c.size = (size_t)u->end;
	dw_abbrevs_size(u->abbrevs, u);
	uint32_t *stack = malloc(DW_MAX_DEPTH * sizeof(*stack));
	if (!stack)
		return sw_error_set(b->err, -ENOMEM, "out of memory");
	int r = 0;
	size_t depth = 0;
	do {
		uint64_t die = c.pos;
		uint64_t code = dw_uleb(&c);
		if (c.bad) {
			r = sw_error_set(b->err, -EINVAL, "truncated DIE at .debug_info 0x%llx",
					 (unsigned long long)die);
			break;
		}
		if (code == 0) {
			if (depth > 0)
				depth--;
			continue;
		}
		const struct dw_abbrev *ab = dw_abbrev_find(u->abbrevs, code);
		if (!ab) {
			r = sw_error_set(b->err, -EINVAL,
					 "unknown abbreviation %llu at .debug_info 0x%llx",
					 (unsigned long long)code, (unsigned long long)die);
			break;
		}
		uint32_t enclosing = depth > 0 ? stack[depth - 1] : NONE, f = NONE;
		r = read_die(b, &c, ab, die, enclosing, &f);
		if (r < 0)
			break;
		if (!ab->children) {
			if (depth == 0)
				break;
			continue;
		}
		if (depth >= DW_MAX_DEPTH) {
			r = sw_error_set(b->err, -E2BIG,
					 "DIEs nested too deep at .debug_info 0x%llx",
					 (unsigned long long)die);
			break;
		}
		stack[depth++] = f != NONE ? f : enclosing;
	} while (depth > 0 && c.pos < c.size);
	free(stack);
	return r;
}

static int cmp_seg(const void *a, const void *b)
{
	const struct dw_seg *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->func < y->func ? -1 : x->func > y->func; /* preorder: outer first */
}

struct seg_out {
	struct dw_seg *v;
	size_t n, cap;
};

static int emit(struct seg_out *o, uint64_t lo, uint64_t hi, uint32_t func)
{
	if (lo >= hi)
		return 0;
	if (o->n && o->v[o->n - 1].hi == lo && o->v[o->n - 1].func == func) {
		o->v[o->n - 1].hi = hi;
		return 0;
	}
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 64;
		void *p = realloc(o->v, cap * sizeof(*o->v));
		if (!p)
			return -ENOMEM;
		o->v = p;
		o->cap = cap;
	}
	o->v[o->n++] = (struct dw_seg){lo, hi, func};
	return 0;
}

int dw_segs_paint(struct dw_seg *in, size_t n, struct dw_seg **ret, size_t *ret_n)
{
	struct seg_out o = {0};
	struct dw_seg *stack = malloc((n ? n : 1) * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	/* stable by lo: the input is in preorder, so outer subroutines stay first */
	if (sw_object_sort_by_u64(in, n, sizeof(*in), offsetof(struct dw_seg, lo)) < 0)
		qsort(in, n, sizeof(*in), cmp_seg);
	size_t sp = 0;
	uint64_t pos = 0;
	int r = 0;
	for (size_t i = 0; i < n && r >= 0; i++) {
		while (sp && stack[sp - 1].hi <= in[i].lo && r >= 0) {
			struct dw_seg t = stack[--sp];
			if (pos < t.hi) {
				r = emit(&o, pos, t.hi, t.func);
				pos = t.hi;
			}
		}
		if (sp && pos < in[i].lo && r >= 0)
			r = emit(&o, pos, in[i].lo, stack[sp - 1].func);
		pos = in[i].lo;
		stack[sp++] = in[i];
	}
	while (sp && r >= 0) {
		struct dw_seg t = stack[--sp];
		if (pos < t.hi) {
			r = emit(&o, pos, t.hi, t.func);
			pos = t.hi;
		}
	}
	free(stack);
	if (r < 0) {
		free(o.v);
		return r;
	}
	*ret = o.v;
	*ret_n = o.n;
	return 0;
}

/*
 * Paints every subroutine's ranges into the unit's address -> subroutine
 * map, later (deeper) DIEs over earlier ones, as llvm's AddrDieMap does: a
 * lookup then lands on the innermost inlined call at once.
 */
static int build_segs(struct dw_unit *u, struct sw_error *err)
{
	size_t n = u->nranges;
	struct dw_seg *in = malloc((n ? n : 1) * sizeof(*in));
	if (!in)
		return sw_error_set(err, -ENOMEM, "out of memory");
	size_t k = 0;
	for (size_t i = 0; i < u->nfuncs; i++) {
		const struct dw_func *f = &u->funcs[i];
		for (uint32_t j = 0; j < f->range_count; j++) {
			const struct dw_range *rg = &u->ranges[f->range_first + j];
			in[k++] = (struct dw_seg){rg->lo, rg->hi, (uint32_t)i};
		}
	}
	int r = dw_segs_paint(in, k, &u->segs, &u->nsegs);
	free(in);
	if (r >= 0) {
		u->seg_index = malloc((u->nsegs / DW_LINE_STRIDE + 1) * sizeof(*u->seg_index));
		u->seg_lo = malloc((u->nsegs + 1) * sizeof(*u->seg_lo));
		if (!u->seg_index || !u->seg_lo)
			r = -ENOMEM;
		for (size_t i = 0; r >= 0 && i < u->nsegs; i++) {
			u->seg_lo[i] = u->segs[i].lo;
			if (i % DW_LINE_STRIDE == 0)
				u->seg_index[i / DW_LINE_STRIDE] = u->segs[i].lo;
		}
	}
	return r < 0 ? sw_error_set(err, r, "out of memory") : 0;
}

/* Drops what a failed read of u's tree left. */
static void tree_undo(struct dw_unit *u)
{
	free(u->funcs);
	free(u->ranges);
	free(u->segs);
	free(u->seg_index);
	free(u->seg_lo);
	u->funcs = NULL;
	u->ranges = NULL;
	u->segs = NULL;
	u->seg_index = u->seg_lo = NULL;
	u->nfuncs = u->nranges = u->nsegs = 0;
}

void dw_unit_read(const struct sw_dwarf *d, struct dw_unit *u)
{
	struct sw_error err = {0}; /* the lookup that reads again says what went wrong */
	/* the builder writes only into u; d is read (sections, never its caches) */
	struct tree_builder b = {.d = (struct sw_dwarf *)d, .u = u, .err = &err};
	/* a split unit's file is opened by dw_unit_tree(), on the caller's thread */
	if (dw_unit_is_skeleton(d, u)) {
		if (dw_line_read(d, u, &u->line, &err) == 0)
			u->line_done = true;
		return;
	}
	if (walk_tree(&b) < 0 || build_segs(u, &err) < 0) {
		tree_undo(u);
		return;
	}
	u->tree_done = true;
	if (dw_line_read(d, u, &u->line, &err) == 0)
		u->line_done = true;
}

int dw_unit_tree(struct sw_dwarf *d, struct dw_unit *u, struct sw_error *err)
{
	if (u->tree_done)
		return u->tree_err;
	if (dw_index_unit(d, u))
		return 0;
	u->tree_done = true;
	d->parsed = true;
	int r = dw_unit_head(d, u, err);
	if (r < 0)
		return u->tree_err = r;
	if (dw_unit_is_skeleton(d, u))
		return u->tree_err = dw_split_tree(d, u, err);
	struct tree_builder b = {.d = d, .u = u, .err = err};
	r = walk_tree(&b);
	if (r >= 0)
		r = build_segs(u, err);
	if (r < 0) {
		free(u->funcs);
		free(u->ranges);
		u->funcs = NULL;
		u->ranges = NULL;
		u->nfuncs = u->nranges = 0;
		return u->tree_err = r;
	}
	return 0;
}

/* --- names --- */

struct name_attrs {
	struct dw_value linkage, name, origin, spec;
	bool has_linkage, has_name, has_origin, has_spec;
};

static int read_name_attrs(struct sw_dwarf *d, uint64_t die, struct dw_unit **ret_u,
			   struct name_attrs *na)
{
	struct dw_unit *u = dw_unit_containing(d, die);
	if (!u || dw_unit_head(d, u, NULL) < 0 || dw_abbrevs_get(d, u, NULL) < 0)
		return bad_die(die);
	struct dw_cur c = dw_cur_at(&d->s.info, d->s.big_endian, die);
	c.size = (size_t)u->end;
	const struct dw_abbrev *ab = dw_abbrev_find(u->abbrevs, dw_uleb(&c));
	if (!ab || c.bad)
		return bad_die(die);
	memset(na, 0, sizeof(*na));
	for (uint32_t i = 0; i < ab->count; i++) {
		const struct dw_attr_spec *sp = &u->abbrevs->specs[ab->first + i];
		struct dw_value v;
		if (dw_read_value(d, u, &c, sp->form, sp->implicit, &v) < 0)
			return bad_die(die);
		switch (sp->at) {
		case 0x6e:
		case 0x2007:
			if (!na->has_linkage) {
				na->linkage = v;
				na->has_linkage = true;
			}
			break;
		case 0x03:
			na->name = v;
			na->has_name = true;
			break;
		case 0x31:
			na->origin = v;
			na->has_origin = dw_form_is_ref(v.form);
			break;
		case 0x47:
			na->spec = v;
			na->has_spec = dw_form_is_ref(v.form);
			break;
		default:
			break;
		}
	}
	*ret_u = u;
	return 0;
}

/*
 * Looks for the linkage name (want_linkage) or the name through the DIE and
 * the DIEs its DW_AT_abstract_origin and DW_AT_specification lead to, in
 * the order llvm's findRecursively visits them.
 */
static const char *find_name(struct sw_dwarf *d, uint64_t die, bool want_linkage)
{
	uint64_t work[DW_MAX_NAME_HOPS], seen[DW_MAX_NAME_HOPS];
	size_t nwork = 0, nseen = 0;
	work[nwork++] = die;
	seen[nseen++] = die;
	while (nwork) {
		uint64_t off = work[--nwork];
		struct dw_unit *u;
		struct name_attrs na;
		if (read_name_attrs(d, off, &u, &na) < 0)
			continue;
		if (want_linkage && na.has_linkage)
			return dw_value_str(d, u, &na.linkage);
		if (!want_linkage && na.has_name)
			return dw_value_str(d, u, &na.name);
		uint64_t next[2] = {na.origin.u, na.spec.u};
		bool has[2] = {na.has_origin, na.has_spec};
		for (int i = 0; i < 2; i++) {
			if (!has[i] || nseen == DW_MAX_NAME_HOPS || nwork == DW_MAX_NAME_HOPS)
				continue;
			bool dup = false;
			for (size_t j = 0; j < nseen; j++)
				dup |= seen[j] == next[i];
			if (dup)
				continue;
			seen[nseen++] = next[i];
			work[nwork++] = next[i];
		}
	}
	return NULL;
}

static size_t hash_off(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ULL;
	return (size_t)(x ^ x >> 29);
}

/* The name of the DIE at off, found once and kept: origins are shared. */
static const char *die_name(struct sw_dwarf *d, uint64_t off)
{
	if (d->nnames * 2 >= d->names_cap) {
		size_t cap = d->names_cap ? d->names_cap * 2 : 256;
		struct dw_name_slot *t = calloc(cap, sizeof(*t));
		if (t) {
			for (size_t i = 0; i < d->names_cap; i++) {
				if (!d->names[i].die)
					continue;
				size_t h = hash_off(d->names[i].die) & (cap - 1);
				while (t[h].die)
					h = (h + 1) & (cap - 1);
				t[h] = d->names[i];
			}
			free(d->names);
			d->names = t;
			d->names_cap = cap;
		}
	}
	const char *name = NULL;
	if (!off || d->nnames * 2 >= d->names_cap) { /* no room: no cache */
		name = find_name(d, off, true);
		return name ? name : find_name(d, off, false);
	}
	size_t h = hash_off(off) & (d->names_cap - 1);
	while (d->names[h].die && d->names[h].die != off)
		h = (h + 1) & (d->names_cap - 1);
	if (d->names[h].die)
		return d->names[h].name;
	name = find_name(d, off, true);
	if (!name)
		name = find_name(d, off, false);
	d->names[h] = (struct dw_name_slot){off, name};
	d->nnames++;
	return name;
}

const char *dw_func_name(struct sw_dwarf *d, struct dw_func *f)
{
	if (!f->name_done) {
		f->name = die_name(d, f->origin);
		f->name_done = true;
	}
	return f->name;
}

/* --- the address -> unit map --- */

struct cu_ranges {
	struct sw_dwarf *d;
	struct dw_seg *v;
	size_t n, cap;
	uint8_t *from_aranges; /* per unit */
	uint32_t unit;
};

static int push_cu_range(struct cu_ranges *cr, uint32_t unit, uint64_t lo, uint64_t hi)
{
	if (lo >= hi)
		return 0;
	if (cr->n == cr->cap) {
		size_t cap = cr->cap ? cr->cap * 2 : 64;
		void *p = cap <= DW_MAX_RANGES ? realloc(cr->v, cap * sizeof(*cr->v)) : NULL;
		if (!p)
			return -E2BIG;
		cr->v = p;
		cr->cap = cap;
	}
	cr->v[cr->n++] = (struct dw_seg){lo, hi, unit};
	return 0;
}

static int aranges_cb(void *ctx, uint64_t cu_off, uint64_t lo, uint64_t hi)
{
	struct cu_ranges *cr = ctx;
	struct dw_unit *u = dw_unit_containing(cr->d, cu_off + 1);
	if (!u || u->off != cu_off)
		return 0;
	uint32_t idx = (uint32_t)(u - cr->d->units);
	cr->from_aranges[idx] = 1;
	return push_cu_range(cr, idx, lo, hi);
}

static int unit_range_cb(void *ctx, uint64_t lo, uint64_t hi)
{
	struct cu_ranges *cr = ctx;
	return push_cu_range(cr, cr->unit, lo, hi);
}

static int cmp_event(const void *a, const void *b)
{
	const struct dw_seg *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return 0;
}

/* Overlaps go to the unit that comes first, as llvm's DWARFDebugAranges does. */
static int resolve_overlaps(struct sw_dwarf *d, struct cu_ranges *cr)
{
	size_t n = cr->n;
	struct dw_seg *ev = malloc((2 * n + 1) * sizeof(*ev)); /* lo: addr, hi: +1/-1 */
	uint32_t *count = calloc(d->nunits + 1, sizeof(*count));
	int r = 0;
	if (!ev || !count) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		ev[2 * i] = (struct dw_seg){cr->v[i].lo, 1, cr->v[i].func};
		ev[2 * i + 1] = (struct dw_seg){cr->v[i].hi, 0, cr->v[i].func};
	}
	qsort(ev, 2 * n, sizeof(*ev), cmp_event);
	struct seg_out o = {0};
	size_t active = 0;
	uint32_t lowest = NONE;
	for (size_t i = 0; i < 2 * n && r >= 0;) {
		uint64_t at = ev[i].lo;
		if (active && i > 0)
			r = emit(&o, ev[i - 1].lo, at, lowest);
		bool rescan = false;
		for (; i < 2 * n && ev[i].lo == at; i++) {
			uint32_t u = ev[i].func;
			if (ev[i].hi) {
				count[u]++;
				active++;
				if (lowest == NONE || u < lowest)
					lowest = u;
			} else if (count[u]) {
				count[u]--;
				active--;
				rescan |= u == lowest && !count[u];
			}
		}
		/* only when the lowest unit ends inside another: rare and short */
		if (!active) {
			lowest = NONE;
		} else if (rescan) {
			lowest = NONE;
			for (size_t j = 0; j < d->nunits; j++)
				if (count[j]) {
					lowest = (uint32_t)j;
					break;
				}
		}
	}
	if (r < 0) {
		free(o.v);
		goto out;
	}
	d->cu_map = o.v;
	d->ncu_map = o.n;
out:
	free(ev);
	free(count);
	return r;
}

int dw_cu_map_build(struct sw_dwarf *d, struct sw_error *err)
{
	if (d->cu_map_done)
		return 0;
	d->cu_map_done = true;
	if (dw_index_cu_map(d))
		return 0;
	struct cu_ranges cr = {.d = d};
	cr.from_aranges = calloc(d->nunits + 1, 1);
	if (!cr.from_aranges)
		return sw_error_set(err, -ENOMEM, "out of memory");
	int r = 0;
	if (d->s.aranges.size && dw_aranges_walk(d, aranges_cb, &cr) < 0) {
		/* a broken .debug_aranges: fall back on the units' own ranges */
		cr.n = 0;
		memset(cr.from_aranges, 0, d->nunits);
	}
	for (size_t i = 0; i < d->nunits && r >= 0; i++) {
		struct dw_unit *u = &d->units[i];
		if (cr.from_aranges[i] || u->unit_type == 2 || u->unit_type == 6)
			continue;
		if (dw_unit_head(d, u, NULL) < 0)
			continue; /* reported when an address inside is asked */
		cr.unit = (uint32_t)i;
		if (u->has_low_pc && u->has_high_pc) {
			r = push_cu_range(&cr, cr.unit, u->low_pc, u->high_pc);
		} else if (u->has_ranges) {
			if (dw_ranges_walk(d, u, &u->ranges_v, unit_range_cb, &cr, NULL) < 0)
				continue;
		}
	}
	if (r >= 0)
		r = resolve_overlaps(d, &cr);
	free(cr.v);
	free(cr.from_aranges);
	return r < 0 ? sw_error_set(err, r, "cannot index the compile units") : 0;
}
