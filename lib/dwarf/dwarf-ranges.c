/*
 * Address ranges: DW_AT_ranges lists in .debug_ranges (DWARF 2-4) and
 * .debug_rnglists (DWARF 5, by offset or by DW_FORM_rnglistx index), and
 * the address-to-unit table of .debug_aranges.
 */
#include <errno.h>
#include <stdlib.h>

#include "dwarf-private.h"

static int walk_v4(const struct sw_dwarf *d, const struct dw_unit *u, uint64_t off, dw_range_fn fn,
		   void *ctx, struct sw_error *err)
{
	struct dw_cur c = dw_cur_at(&d->s.ranges, d->s.big_endian, off);
	uint64_t base = u->low_pc;
	uint64_t all = u->addr_size == 8 ? UINT64_MAX : ((uint64_t)1 << (u->addr_size * 8)) - 1;
	for (unsigned n = 0; n < DW_MAX_RANGE_LIST; n++) {
		uint64_t lo = dw_u(&c, u->addr_size), hi = dw_u(&c, u->addr_size);
		if (c.bad)
			return sw_error_set(err, -EINVAL,
					    "truncated range list at .debug_ranges 0x%llx",
					    (unsigned long long)off);
		if (lo == 0 && hi == 0)
			return 0;
		if (lo == all) {
			base = hi;
			continue;
		}
		int r = fn(ctx, lo + base, hi + base);
		if (r < 0)
			return r;
	}
	return sw_error_set(err, -E2BIG, "range list at .debug_ranges 0x%llx is too long",
			    (unsigned long long)off);
}

static bool addrx(const struct sw_dwarf *d, const struct dw_unit *u, uint64_t idx, uint64_t *ret)
{
	struct dw_value v = {.form = 0x1b, .u = idx};
	return dw_value_addr(d, u, &v, ret);
}

static int walk_v5(const struct sw_dwarf *d, const struct dw_unit *u, uint64_t off, dw_range_fn fn,
		   void *ctx, struct sw_error *err)
{
	struct dw_cur c = dw_cur_at(&d->s.rnglists, d->s.big_endian, off);
	uint64_t base = u->low_pc;
	for (unsigned n = 0; n < DW_MAX_RANGE_LIST; n++) {
		uint8_t kind = (uint8_t)dw_u(&c, 1);
		uint64_t lo = 0, hi = 0, a, b;
		bool emit = true, ok = true;
		switch (kind) {
		case 0: /* end_of_list */
			return c.bad
				   ? sw_error_set(err, -EINVAL,
						  "truncated range list at .debug_rnglists 0x%llx",
						  (unsigned long long)off)
				   : 0;
		case 1: /* base_addressx */
			ok = addrx(d, u, dw_uleb(&c), &base);
			emit = false;
			break;
		case 2: /* startx_endx */
			a = dw_uleb(&c);
			b = dw_uleb(&c);
			ok = addrx(d, u, a, &lo) && addrx(d, u, b, &hi);
			break;
		case 3: /* startx_length */
			a = dw_uleb(&c);
			ok = addrx(d, u, a, &lo);
			hi = lo + dw_uleb(&c);
			break;
		case 4: /* offset_pair */
			lo = base + dw_uleb(&c);
			hi = base + dw_uleb(&c);
			break;
		case 5: /* base_address */
			base = dw_u(&c, u->addr_size);
			emit = false;
			break;
		case 6: /* start_end */
			lo = dw_u(&c, u->addr_size);
			hi = dw_u(&c, u->addr_size);
			break;
		case 7: /* start_length */
			lo = dw_u(&c, u->addr_size);
			hi = lo + dw_uleb(&c);
			break;
		default:
			c.bad = true;
		}
		if (c.bad || !ok)
			return sw_error_set(err, -EINVAL,
					    "bad range list entry at .debug_rnglists 0x%zx", c.pos);
		if (emit) {
			int r = fn(ctx, lo, hi);
			if (r < 0)
				return r;
		}
	}
	return sw_error_set(err, -E2BIG, "range list at .debug_rnglists 0x%llx is too long",
			    (unsigned long long)off);
}

int dw_ranges_walk(const struct sw_dwarf *d, const struct dw_unit *u, const struct dw_value *v,
		   dw_range_fn fn, void *ctx, struct sw_error *err)
{
	uint64_t off = v->u;
	if (v->form == 0x23) { /* rnglistx: an entry of the offsets table after the base */
		uint64_t base =
		    u->has_rnglists_base ? u->rnglists_base : (u->offset_size == 8 ? 20 : 12);
		struct dw_cur c = dw_cur_at(&d->s.rnglists, d->s.big_endian, base);
		if (off > d->s.rnglists.size / u->offset_size)
			c.bad = true;
		dw_skip(&c, off * u->offset_size);
		uint64_t rel = dw_u(&c, u->offset_size);
		if (c.bad)
			return sw_error_set(err, -EINVAL, "bad range list index %llu",
					    (unsigned long long)off);
		off = base + rel;
	} else if (v->form != 0x17 && !dw_form_is_const(v->form)) {
		return sw_error_set(err, -EINVAL, "bad form 0x%x for DW_AT_ranges", v->form);
	} else {
		off += u->ranges_base; /* a split unit's, in its skeleton's .debug_ranges */
	}
	if (u->version >= 5)
		return walk_v5(d, u, off, fn, ctx, err);
	return walk_v4(d, u, off, fn, ctx, err);
}

int dw_aranges_walk(const struct sw_dwarf *d,
		    int (*fn)(void *ctx, uint64_t cu_off, uint64_t lo, uint64_t hi), void *ctx)
{
	const struct sw_section *s = &d->s.aranges;
	uint64_t off = 0;
	while (off < s->size) {
		struct dw_cur c = dw_cur_at(s, d->s.big_endian, off);
		uint8_t osize;
		uint64_t len = dw_initial_length(&c, &osize);
		uint64_t body = c.pos;
		if (c.bad || len > s->size - body)
			return -EINVAL;
		struct dw_cur h = c;
		h.size = (size_t)(body + len);
		dw_u(&h, 2); /* version */
		uint64_t cu = dw_u(&h, osize);
		uint8_t asize = (uint8_t)dw_u(&h, 1);
		uint8_t ssize = (uint8_t)dw_u(&h, 1);
		if (h.bad || (asize != 4 && asize != 8 && asize != 2) || ssize)
			return -EINVAL;
		/* tuples start at a multiple of twice the address size */
		size_t tuple = 2u * asize;
		size_t pos = h.pos - (size_t)off;
		dw_skip(&h, (tuple - pos % tuple) % tuple);
		while (!h.bad && h.pos + tuple <= h.size) {
			uint64_t lo = dw_u(&h, asize), n = dw_u(&h, asize);
			if (lo == 0 && n == 0)
				break;
			if (n) {
				int r = fn(ctx, cu, lo, lo + n);
				if (r < 0)
					return r;
			}
		}
		off = body + len;
	}
	return 0;
}
