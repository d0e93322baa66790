/*
 * The bottom of the DWARF reader: a bounds-checked cursor, abbreviation
 * tables (read once per offset and shared by the units that use them) and
 * the decoding of attribute values in every form of DWARF 2 to 5 plus the
 * GNU extensions compilers still emit.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf-private.h"

uint64_t dw_u_any(struct dw_cur *c, size_t n)
{
	if (c->bad || n > c->size - c->pos) {
		c->bad = true;
		return 0;
	}
	const uint8_t *p = c->data + c->pos;
	uint64_t v = 0;
	c->pos += n;
	if (c->be)
		for (size_t i = 0; i < n; i++)
			v = v << 8 | p[i];
	else
		for (size_t i = n; i-- > 0;)
			v = v << 8 | p[i];
	return v;
}

/*
 * The bits of one LEB128 number (the low 64) and how many it had, shift;
 * false with c->bad set when it runs off the data or pads beyond reason.
 */
static bool leb(struct dw_cur *c, uint64_t *ret_v, unsigned *ret_shift, uint8_t *ret_last)
{
	uint64_t v = 0;
	unsigned shift = 0;
	while (!c->bad) {
		if (c->pos >= c->size) {
			c->bad = true;
			break;
		}
		uint8_t b = c->data[c->pos++];
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			*ret_v = v;
			*ret_shift = shift;
			*ret_last = b;
			return true;
		}
		if (shift > 640) { /* padding beyond reason */
			c->bad = true;
			break;
		}
	}
	return false;
}

uint64_t dw_uleb_any(struct dw_cur *c)
{
	uint64_t v;
	unsigned shift;
	uint8_t last;
	return leb(c, &v, &shift, &last) ? v : 0;
}

int64_t dw_sleb(struct dw_cur *c)
{
	uint64_t v;
	unsigned shift;
	uint8_t last;
	if (!leb(c, &v, &shift, &last))
		return 0;
	if (shift < 64 && (last & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

void dw_skip(struct dw_cur *c, uint64_t n)
{
	if (c->bad || n > c->size - c->pos)
		c->bad = true;
	else
		c->pos += (size_t)n;
}

const char *dw_cstr(struct dw_cur *c)
{
	if (c->bad || c->pos >= c->size) {
		c->bad = true;
		return NULL;
	}
	const char *s = (const char *)c->data + c->pos;
	const char *nul = memchr(s, '\0', c->size - c->pos);
	if (!nul) {
		c->bad = true;
		return NULL;
	}
	c->pos += (size_t)(nul - s) + 1;
	return s;
}

uint64_t dw_initial_length(struct dw_cur *c, uint8_t *offset_size)
{
	uint64_t len = dw_u(c, 4);
	*offset_size = 4;
	if (len == 0xffffffff) {
		len = dw_u(c, 8);
		*offset_size = 8;
	} else if (len >= 0xfffffff0) {
		c->bad = true; /* reserved */
	}
	return len;
}

const char *dw_str_at(const struct sw_section *s, uint64_t off)
{
	if (off >= s->size)
		return NULL;
	const char *p = (const char *)s->data + off;
	return memchr(p, '\0', s->size - off) ? p : NULL;
}

/* --- abbreviation tables --- */

static int parse_abbrevs(const struct sw_dwarf *d, uint64_t off, struct dw_abbrevs *a,
			 struct sw_error *err)
{
	struct dw_cur c = dw_cur_at(&d->s.abbrev, false, off);
	size_t cap = 0, scap = 0;
	a->offset = off;
	a->dense = true;
	for (;;) {
		uint64_t code = dw_uleb(&c);
		if (c.bad)
			goto bad;
		if (code == 0)
			break;
		if (a->n == cap) {
			cap = cap ? cap * 2 : 64;
			void *p =
			    cap <= DW_MAX_ABBREVS ? realloc(a->list, cap * sizeof(*a->list)) : NULL;
			if (!p)
				return sw_error_set(err, -E2BIG, "too many abbreviations at 0x%llx",
						    (unsigned long long)off);
			a->list = p;
		}
		struct dw_abbrev *ab = &a->list[a->n];
		ab->code = code;
		ab->tag = (uint16_t)dw_uleb(&c);
		ab->children = dw_u(&c, 1) != 0;
		ab->first = (uint32_t)a->nspecs;
		ab->count = 0;
		if (code != a->n + 1)
			a->dense = false;
		for (;;) {
			uint64_t at = dw_uleb(&c), form = dw_uleb(&c);
			int64_t implicit = 0;
			if (form == 0x21)
				implicit = dw_sleb(&c);
			if (c.bad)
				goto bad;
			if (at == 0 && form == 0)
				break;
			if (ab->count >= DW_MAX_ATTRS || at > 0xffff || form > 0xffff)
				goto bad;
			if (a->nspecs == scap) {
				scap = scap ? scap * 2 : 256;
				void *p = realloc(a->specs, scap * sizeof(*a->specs));
				if (!p)
					return sw_error_set(err, -ENOMEM, "out of memory");
				a->specs = p;
			}
			a->specs[a->nspecs++] = (struct dw_attr_spec){
			    .at = (uint16_t)at, .form = (uint16_t)form, .implicit = implicit};
			ab->count++;
		}
		a->n++;
	}
	return 0;
bad:
	return sw_error_set(err, -EINVAL, "bad abbreviation near .debug_abbrev offset 0x%zx",
			    c.pos);
}

static int cmp_abbrev_code(const void *key, const void *elem)
{
	uint64_t k = *(const uint64_t *)key, e = ((const struct dw_abbrev *)elem)->code;
	return k < e ? -1 : k > e;
}

static int cmp_abbrev_sort(const void *a, const void *b)
{
	uint64_t x = ((const struct dw_abbrev *)a)->code, y = ((const struct dw_abbrev *)b)->code;
	return x < y ? -1 : x > y;
}

const struct dw_abbrev *dw_abbrev_find(const struct dw_abbrevs *a, uint64_t code)
{
	if (a->dense)
		return code >= 1 && code <= a->n ? &a->list[code - 1] : NULL;
	return bsearch(&code, a->list, a->n, sizeof(*a->list), cmp_abbrev_code);
}

int dw_abbrevs_get(struct sw_dwarf *d, struct dw_unit *u, struct sw_error *err)
{
	if (u->abbrevs)
		return 0;
	size_t lo = 0, hi = d->nabbrevs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->abbrevs[mid]->offset < u->abbrev_off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < d->nabbrevs && d->abbrevs[lo]->offset == u->abbrev_off) {
		u->abbrevs = d->abbrevs[lo];
		return 0;
	}
	struct dw_abbrevs *a = calloc(1, sizeof(*a));
	void *grown = realloc(d->abbrevs, (d->nabbrevs + 1) * sizeof(*d->abbrevs));
	if (!a || !grown) {
		free(a);
		if (grown)
			d->abbrevs = grown;
		return sw_error_set(err, -ENOMEM, "out of memory");
	}
	d->abbrevs = grown;
	int r = parse_abbrevs(d, u->abbrev_off, a, err);
	if (r < 0) {
		free(a->list);
		free(a->specs);
		free(a);
		return r;
	}
	if (!a->dense)
		qsort(a->list, a->n, sizeof(*a->list), cmp_abbrev_sort);
	memmove(&d->abbrevs[lo + 1], &d->abbrevs[lo], (d->nabbrevs - lo) * sizeof(*d->abbrevs));
	d->abbrevs[lo] = a;
	d->nabbrevs++;
	u->abbrevs = a;
	return 0;
}

/* The size of a value of form in u, or -1 when it varies. */
static int form_size(uint16_t form, const struct dw_unit *u)
{
	switch (form) {
	case 0x01:
		return u->addr_size;
	case 0x0b:
	case 0x0c:
	case 0x11:
	case 0x25:
	case 0x29:
		return 1;
	case 0x05:
	case 0x12:
	case 0x26:
	case 0x2a:
		return 2;
	case 0x27:
	case 0x2b:
		return 3;
	case 0x06:
	case 0x13:
	case 0x1c:
	case 0x28:
	case 0x2c:
		return 4;
	case 0x07:
	case 0x14:
	case 0x20:
	case 0x24:
		return 8;
	case 0x1e:
		return 16;
	case 0x0e:
	case 0x17:
	case 0x1d:
	case 0x1f:
	case 0x1f20:
	case 0x1f21:
		return u->offset_size;
	case 0x10:
		return u->version <= 2 ? u->addr_size : u->offset_size;
	case 0x19:
	case 0x21:
		return 0;
	default:
		return -1;
	}
}

uint32_t dw_abbrevs_key(const struct dw_unit *u)
{
	return 1u << 31 | (uint32_t)u->addr_size << 16 | (uint32_t)u->offset_size << 8 |
	       (u->version <= 2);
}

void dw_abbrevs_size(struct dw_abbrevs *a, const struct dw_unit *u)
{
	uint32_t key = dw_abbrevs_key(u);
	if (a->sized_for == key)
		return;
	for (size_t i = 0; i < a->n; i++) {
		struct dw_abbrev *ab = &a->list[i];
		int32_t total = 0;
		for (uint32_t j = 0; j < ab->count; j++) {
			struct dw_attr_spec *sp = &a->specs[ab->first + j];
			int n = form_size(sp->form, u);
			sp->size = (int8_t)n;
			total = n < 0 || total < 0 ? -1 : total + n;
		}
		ab->fixed = total;
	}
	a->sized_for = key;
}

/* Skips one attribute of a form with no fixed size in the unit, as dw_read_value() would read it.
 */
static int skip_varying(const struct sw_dwarf *d, const struct dw_unit *u, struct dw_cur *c,
			const struct dw_attr_spec *sp)
{
	switch (sp->form) {
	case 0x0d:          /* sdata */
	case 0x0f:          /* udata */
	case 0x15:          /* ref_udata */
	case 0x1a:          /* strx */
	case 0x1b:          /* addrx */
	case 0x22:          /* loclistx */
	case 0x23:          /* rnglistx */
	case 0x1f01:        /* GNU_addr_index */
	case 0x1f02:        /* GNU_str_index */
		dw_uleb(c); /* an sleb's bytes end alike */
		break;
	case 0x09: /* block */
	case 0x18: /* exprloc */
		dw_skip(c, dw_uleb(c));
		break;
	case 0x0a: /* block1 */
		dw_skip(c, dw_u(c, 1));
		break;
	case 0x08: /* string */
		dw_cstr(c);
		break;
	default: {
		struct dw_value v;
		return dw_read_value(d, u, c, sp->form, sp->implicit, &v);
	}
	}
	return c->bad ? -EINVAL : 0;
}

int dw_skip_attr(const struct sw_dwarf *d, const struct dw_unit *u, struct dw_cur *c,
		 const struct dw_attr_spec *sp)
{
	if (sp->size < 0)
		return skip_varying(d, u, c, sp);
	dw_skip(c, (uint64_t)sp->size);
	return c->bad ? -EINVAL : 0;
}

int dw_skip_attrs(const struct sw_dwarf *d, const struct dw_unit *u, struct dw_cur *c,
		  const struct dw_abbrev *ab)
{
	const struct dw_attr_spec *sp = &u->abbrevs->specs[ab->first];
	uint64_t fixed = 0; /* bytes of fixed-size attributes not yet skipped */
	for (uint32_t i = 0; i < ab->count; i++) {
		if (sp[i].size >= 0) {
			fixed += (uint64_t)sp[i].size;
			continue;
		}
		dw_skip(c, fixed);
		fixed = 0;
		if (skip_varying(d, u, c, &sp[i]) < 0)
			return -EINVAL;
	}
	dw_skip(c, fixed);
	return c->bad ? -EINVAL : 0;
}

/* --- attribute values --- */

bool dw_form_is_const(uint16_t form)
{
	switch (form) {
	case 0x05: /* data2 */
	case 0x06: /* data4 */
	case 0x07: /* data8 */
	case 0x0b: /* data1 */
	case 0x0d: /* sdata */
	case 0x0f: /* udata */
	case 0x21: /* implicit_const */
		return true;
	default:
		return false;
	}
}

bool dw_form_is_ref(uint16_t form)
{
	return (form >= 0x11 && form <= 0x15) || form == 0x10;
}

/*
 * Reads one value of form at the cursor.  References come out as absolute
 * .debug_info offsets.  Returns -EINVAL on an unknown form (the rest of the
 * DIE cannot be found then) or when the cursor ran out.
 */
int dw_read_value(const struct sw_dwarf *d, const struct dw_unit *u, struct dw_cur *c,
		  uint16_t form, int64_t implicit, struct dw_value *v)
{
	v->form = form;
	v->data = NULL;
	v->len = 0;
	for (int hops = 0;; hops++) {
		switch (form) {
		case 0x01: /* addr */
			v->u = dw_u(c, u->addr_size);
			break;
		case 0x03: /* block2 */
		case 0x04: /* block4 */
		case 0x09: /* block */
		case 0x0a: /* block1 */
		case 0x18: /* exprloc */
			v->len = form == 0x03   ? dw_u(c, 2)
				 : form == 0x04 ? dw_u(c, 4)
				 : form == 0x0a ? dw_u(c, 1)
						: dw_uleb(c);
			v->data = c->bad ? NULL : c->data + c->pos;
			dw_skip(c, v->len);
			break;
		case 0x05:
			v->u = dw_u(c, 2);
			break;
		case 0x06:
			v->u = dw_u(c, 4);
			break;
		case 0x07:
			v->u = dw_u(c, 8);
			break;
		case 0x08: /* string */
			v->data = (const uint8_t *)dw_cstr(c);
			break;
		case 0x0b:
		case 0x0c: /* flag */
		case 0x11: /* ref1 */
		case 0x25: /* strx1 */
		case 0x29: /* addrx1 */
			v->u = dw_u(c, 1);
			break;
		case 0x0d:
			v->u = (uint64_t)dw_sleb(c);
			break;
		case 0x0e:   /* strp */
		case 0x17:   /* sec_offset */
		case 0x1d:   /* strp_sup */
		case 0x1f:   /* line_strp */
		case 0x1f21: /* GNU_strp_alt */
		case 0x1f20: /* GNU_ref_alt */
			v->u = dw_u(c, u->offset_size);
			break;
		case 0x0f:
		case 0x15:   /* ref_udata */
		case 0x1a:   /* strx */
		case 0x1b:   /* addrx */
		case 0x22:   /* loclistx */
		case 0x23:   /* rnglistx */
		case 0x1f01: /* GNU_addr_index */
		case 0x1f02: /* GNU_str_index */
			v->u = dw_uleb(c);
			break;
		case 0x10: /* ref_addr: address-sized in DWARF 2 */
			v->u = dw_u(c, u->version <= 2 ? u->addr_size : u->offset_size);
			break;
		case 0x12:
		case 0x26: /* strx2 */
		case 0x2a: /* addrx2 */
			v->u = dw_u(c, 2);
			break;
		case 0x13:
		case 0x1c: /* ref_sup4 */
		case 0x28: /* strx4 */
		case 0x2c: /* addrx4 */
			v->u = dw_u(c, 4);
			break;
		case 0x14:
		case 0x20: /* ref_sig8 */
		case 0x24: /* ref_sup8 */
			v->u = dw_u(c, 8);
			break;
		case 0x27: /* strx3 */
		case 0x2b: /* addrx3 */
			v->u = dw_u(c, 3);
			break;
		case 0x19: /* flag_present */
			v->u = 1;
			break;
		case 0x1e: /* data16 */
			v->data = c->bad ? NULL : c->data + c->pos;
			v->len = 16;
			dw_skip(c, 16);
			break;
		case 0x21:
			v->u = (uint64_t)implicit;
			break;
		case 0x16: /* indirect */
			form = (uint16_t)dw_uleb(c);
			v->form = form;
			if (hops < 4 && form != 0x16 && form != 0x21 && !c->bad)
				continue;
			return -EINVAL;
		default:
			return -EINVAL;
		}
		break;
	}
	if (c->bad)
		return -EINVAL;
	if (form >= 0x11 && form <= 0x15)
		v->u += u->off; /* unit-relative reference */
	return 0;
}

/* The entry idx of a unit's contribution to .debug_str_offsets or .debug_addr. */
static bool indexed(const struct sw_section *s, bool be, uint64_t base, uint64_t idx, unsigned size,
		    uint64_t *ret)
{
	if (idx > s->size / size || base > s->size)
		return false;
	struct dw_cur c = dw_cur_at(s, be, base + idx * size);
	uint64_t v = dw_u(&c, size);
	if (c.bad)
		return false;
	*ret = v;
	return true;
}

const char *dw_value_str(const struct sw_dwarf *d, const struct dw_unit *u,
			 const struct dw_value *v)
{
	uint64_t off;
	switch (v->form) {
	case 0x08:
		return (const char *)v->data;
	case 0x0e:
		return dw_str_at(&d->s.str, v->u);
	case 0x1f:
		return dw_str_at(&d->s.line_str, v->u);
	case 0x1a:
	case 0x25:
	case 0x26:
	case 0x27:
	case 0x28:
	case 0x1f02:
		if (!indexed(&d->s.str_offsets, d->s.big_endian, u->str_offsets_base, v->u,
			     u->offset_size, &off))
			return NULL;
		return dw_str_at(&d->s.str, off);
	default:
		return NULL;
	}
}

bool dw_value_addr(const struct sw_dwarf *d, const struct dw_unit *u, const struct dw_value *v,
		   uint64_t *ret)
{
	switch (v->form) {
	case 0x01:
		*ret = v->u;
		return true;
	case 0x1b:
	case 0x29:
	case 0x2a:
	case 0x2b:
	case 0x2c:
	case 0x1f01:
		return indexed(&d->s.addr, d->s.big_endian, u->addr_base, v->u, u->addr_size, ret);
	default:
		return false;
	}
}
