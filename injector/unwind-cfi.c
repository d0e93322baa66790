/*
 * Call-frame information: the .eh_frame_hdr lookup table, CIE and FDE
 * parsing and the DW_CFA interpreter with the small DWARF expression
 * evaluator that .eh_frame needs (PLT entries, signal trampolines).
 *
 * Written from the DWARF 5 standard (section 6.4) and the Linux Standard
 * Base's description of .eh_frame and .eh_frame_hdr.  Everything is read
 * through swa_mem_read()/swa_stack_read(), which never fault, and every
 * count, length and nesting has a ceiling: the tables are the app's, and a
 * damaged one must give up the step, not crash the app.
 *
 * A cursor reads the tables a block at a time (never across a page, so a
 * readable byte is never refused for its unreadable neighbour), and the
 * row a program counter unwinds by is kept in a fixed table of recent
 * ones, emptied with the page cache when the image list changes: a stack
 * sampled again costs lookups, not CFA programs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "unwind.h"

#define MAX_STATE_STACK 8
#define MAX_INSNS       4096
#define MAX_EXPR_STACK  32
#define MAX_EXPR_OPS    256
#define BLOCK           64   /* bytes a cursor reads at once */
#define PAGE_MIN        4096 /* the smallest page: blocks never cross one */
#define RULE_SLOTS      256  /* rows kept, by program counter */

enum {
	PE_ABSPTR = 0x00,
	PE_ULEB128 = 0x01,
	PE_UDATA2 = 0x02,
	PE_UDATA4 = 0x03,
	PE_UDATA8 = 0x04,
	PE_SLEB128 = 0x09,
	PE_SDATA2 = 0x0a,
	PE_SDATA4 = 0x0b,
	PE_SDATA8 = 0x0c,
	PE_PCREL = 0x10,
	PE_DATAREL = 0x30,
	PE_INDIRECT = 0x80,
	PE_OMIT = 0xff,
};

struct cursor {
	uint64_t p, end;
	uint64_t datarel; /* base of DW_EH_PE_datarel */
	bool bad;
	uint32_t blk_n; /* blk holds [blk_lo, blk_lo + blk_n) */
	uint64_t blk_lo;
	uint8_t blk[BLOCK];
};

/* The n bytes at the cursor (n <= 8, p + n <= end checked), read a block at a time. */
static const uint8_t *cursor_bytes(struct cursor *c, unsigned n)
{
	if (c->blk_n && c->p >= c->blk_lo && c->p + n <= c->blk_lo + c->blk_n)
		return c->blk + (c->p - c->blk_lo);
	uint64_t len = BLOCK, avail = c->end - c->p, to_page = PAGE_MIN - c->p % PAGE_MIN;
	if (len > avail)
		len = avail;
	if (len > to_page)
		len = to_page;
	if (len < n)
		len = n; /* straddles a page: just these bytes */
	c->blk_n = 0;
	if (swa_mem_read(c->p, c->blk, (size_t)len) < 0)
		return NULL;
	c->blk_lo = c->p;
	c->blk_n = (uint32_t)len;
	return c->blk;
}

static uint8_t get_u8(struct cursor *c)
{
	const uint8_t *b;
	if (c->p >= c->end || !(b = cursor_bytes(c, 1))) {
		c->bad = true;
		return 0;
	}
	c->p++;
	return *b;
}

static uint64_t get_fixed(struct cursor *c, unsigned n)
{
	const uint8_t *b;
	if (c->p + n > c->end || c->p + n < c->p || !(b = cursor_bytes(c, n))) {
		c->bad = true;
		return 0;
	}
	c->p += n;
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

static uint64_t get_uleb(struct cursor *c)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 70 && !c->bad; shift += 7) {
		uint8_t b = get_u8(c);
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	c->bad = true;
	return 0;
}

static int64_t get_sleb(struct cursor *c)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;
	do {
		b = get_u8(c);
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (shift > 70) {
			c->bad = true;
			return 0;
		}
	} while ((b & 0x80) && !c->bad);
	if (shift < 64 && (b & 0x40))
		v |= ~0ull << shift;
	return (int64_t)v;
}

static uint64_t get_encoded(struct cursor *c, uint8_t enc)
{
	if (enc == PE_OMIT)
		return 0;
	uint64_t at = c->p, v;
	switch (enc & 0x0f) {
	case PE_ABSPTR:
	case PE_UDATA8:
	case PE_SDATA8:
		v = get_fixed(c, 8);
		break;
	case PE_ULEB128:
		v = get_uleb(c);
		break;
	case PE_SLEB128:
		v = (uint64_t)get_sleb(c);
		break;
	case PE_UDATA2:
		v = get_fixed(c, 2);
		break;
	case PE_SDATA2:
		v = (uint64_t)(int64_t)(int16_t)get_fixed(c, 2);
		break;
	case PE_UDATA4:
		v = get_fixed(c, 4);
		break;
	case PE_SDATA4:
		v = (uint64_t)(int64_t)(int32_t)get_fixed(c, 4);
		break;
	default:
		c->bad = true;
		return 0;
	}
	switch (enc & 0x70) {
	case 0:
		break;
	case PE_PCREL:
		v += at;
		break;
	case PE_DATAREL:
		if (!c->datarel)
			c->bad = true;
		v += c->datarel;
		break;
	default: /* textrel, funcrel, aligned: not used in .eh_frame on our targets */
		c->bad = true;
		return 0;
	}
	if (enc & PE_INDIRECT) {
		uint64_t target = 0;
		if (swa_mem_read(v, &target, 8) < 0)
			c->bad = true;
		v = target;
	}
	return v;
}

/* ---- .eh_frame_hdr ---- */

static unsigned enc_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case PE_UDATA2:
	case PE_SDATA2:
		return 2;
	case PE_UDATA4:
	case PE_SDATA4:
		return 4;
	case PE_ABSPTR:
	case PE_UDATA8:
	case PE_SDATA8:
		return 8;
	default:
		return 0;
	}
}

int swa_cfi_index(struct swa_image *im)
{
	im->eh_table = 0;
	im->fde_count = 0;
	if (!im->eh_hdr)
		return -ENOENT;
	struct cursor c = {.p = im->eh_hdr, .end = im->eh_hdr + 64, .datarel = im->eh_hdr};
	uint8_t version = get_u8(&c);
	uint8_t frame_enc = get_u8(&c);
	uint8_t count_enc = get_u8(&c);
	uint8_t table_enc = get_u8(&c);
	if (c.bad || version != 1)
		return -EINVAL;
	im->eh_frame = get_encoded(&c, frame_enc);
	uint64_t count = count_enc == PE_OMIT ? 0 : get_encoded(&c, count_enc);
	if (c.bad || table_enc == PE_OMIT || !enc_size(table_enc) || count == 0 ||
	    count > (1u << 24))
		return -EINVAL;
	im->eh_table = c.p;
	im->fde_count = (uint32_t)count;
	im->table_enc = table_enc;
	return 0;
}

static uint64_t table_entry(const struct swa_image *im, uint32_t i, int which, bool *bad)
{
	unsigned sz = enc_size(im->table_enc);
	uint64_t at = im->eh_table + (uint64_t)i * 2 * sz + (uint64_t)which * sz;
	struct cursor c = {.p = at, .end = at + sz, .datarel = im->eh_hdr};
	uint64_t v = get_encoded(&c, im->table_enc);
	if (c.bad)
		*bad = true;
	return v;
}

uint64_t swa_cfi_find_fde(const struct swa_image *im, uint64_t pc)
{
	if (!im->eh_table)
		return 0;
	uint32_t lo = 0, hi = im->fde_count;
	bool bad = false;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (table_entry(im, mid, 0, &bad) <= pc)
			lo = mid;
		else
			hi = mid;
		if (bad)
			return 0;
	}
	if (table_entry(im, lo, 0, &bad) > pc || bad)
		return 0;
	uint64_t fde = table_entry(im, lo, 1, &bad);
	return bad ? 0 : fde;
}

/* ---- CIE and FDE ---- */

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint32_t ra_reg;
	uint8_t fde_enc;
	bool has_aug_data;
	bool signal_frame;
	uint64_t insns, insns_end;
};

struct fde {
	uint64_t pc_begin, pc_end;
	uint64_t insns, insns_end;
};

/* Reads an entry's length; returns the end of the entry, 0 on error or terminator. */
static uint64_t entry_bounds(struct cursor *c)
{
	uint64_t len = get_fixed(c, 4);
	if (len == 0xffffffffu)
		len = get_fixed(c, 8);
	if (c->bad || len == 0 || len > (1u << 24))
		return 0;
	c->end = c->p + len;
	return c->end;
}

static int parse_cie(uint64_t at, struct cie *cie)
{
	struct cursor c = {.p = at, .end = at + 12};
	memset(cie, 0, sizeof(*cie));
	if (!entry_bounds(&c))
		return -EINVAL;
	if (get_fixed(&c, 4) != 0) /* CIE id in .eh_frame */
		return -EINVAL;
	uint8_t version = get_u8(&c);
	if (version != 1 && version != 3 && version != 4)
		return -EINVAL;
	char aug[8];
	size_t n = 0;
	for (;;) {
		uint8_t ch = get_u8(&c);
		if (c.bad || n == sizeof(aug))
			return -EINVAL;
		aug[n++] = (char)ch;
		if (!ch)
			break;
	}
	if (version == 4) {
		get_u8(&c); /* address size */
		get_u8(&c); /* segment selector size */
	}
	cie->code_align = get_uleb(&c);
	cie->data_align = get_sleb(&c);
	cie->ra_reg = version == 1 ? get_u8(&c) : (uint32_t)get_uleb(&c);
	cie->fde_enc = PE_ABSPTR;
	uint64_t aug_end = 0;
	for (size_t i = 0; aug[i] && !c.bad; i++) {
		switch (aug[i]) {
		case 'z':
			cie->has_aug_data = true;
			aug_end = get_uleb(&c);
			aug_end += c.p;
			break;
		case 'R':
			cie->fde_enc = get_u8(&c);
			break;
		case 'L':
			get_u8(&c);
			break;
		case 'P': {
			uint8_t enc = get_u8(&c);
			get_encoded(&c, enc & ~PE_INDIRECT);
			break;
		}
		case 'S':
			cie->signal_frame = true;
			break;
		case 'B': /* arm64 B-key for pointer authentication */
		case 'G': /* MTE-tagged frames */
			break;
		default:
			if (!aug_end)
				return -EINVAL;
			c.p = aug_end; /* skip what we do not know */
			i = sizeof(aug) - 1;
			aug[i] = 0;
			break;
		}
	}
	if (aug_end)
		c.p = aug_end;
	if (c.bad || c.p > c.end)
		return -EINVAL;
	cie->insns = c.p;
	cie->insns_end = c.end;
	return 0;
}

static int parse_fde(uint64_t at, struct cie *cie, struct fde *fde)
{
	struct cursor c = {.p = at, .end = at + 12};
	if (!entry_bounds(&c))
		return -EINVAL;
	uint64_t id_at = c.p;
	uint32_t cie_off = (uint32_t)get_fixed(&c, 4);
	if (c.bad || cie_off == 0 || cie_off > id_at)
		return -EINVAL;
	int r = parse_cie(id_at - cie_off, cie);
	if (r < 0)
		return r;
	fde->pc_begin = get_encoded(&c, cie->fde_enc);
	uint64_t range = get_encoded(&c, cie->fde_enc & 0x0f);
	fde->pc_end = fde->pc_begin + range;
	if (cie->has_aug_data) {
		uint64_t len = get_uleb(&c);
		c.p += len;
	}
	if (c.bad || c.p > c.end)
		return -EINVAL;
	fde->insns = c.p;
	fde->insns_end = c.end;
	return 0;
}

/* ---- the CFA interpreter ---- */

enum rule_kind { R_SAME, R_UNDEF, R_OFFSET, R_VAL_OFFSET, R_REGISTER, R_EXPR, R_VAL_EXPR };

struct rule {
	uint8_t kind;
	uint16_t reg;
	int64_t off;
	uint64_t expr, expr_len;
};

struct row {
	bool cfa_is_expr;
	uint16_t cfa_reg;
	int64_t cfa_off;
	uint64_t cfa_expr, cfa_expr_len;
	struct rule rules[SWA_NREGS];
};

struct cfa_state {
	struct row row;
	struct row initial;
	struct row stack[MAX_STATE_STACK];
	unsigned depth;
};

static bool reg_ok(uint64_t reg)
{
	return reg < SWA_NREGS;
}

/*
 * Runs instructions [p, end) until the location passes target.  Registers
 * outside our register file are accepted and ignored (vector registers).
 */
static int run_cfa(struct cfa_state *st, const struct cie *cie, uint64_t p, uint64_t end,
		   uint64_t loc, uint64_t target, uint8_t fde_enc)
{
	struct cursor c = {.p = p, .end = end};
	struct row *row = &st->row;
	unsigned n = 0;
	while (c.p < c.end && !c.bad) {
		if (++n > MAX_INSNS)
			return -E2BIG;
		uint8_t op = get_u8(&c);
		uint64_t reg = 0, v;
		int64_t off;
		uint64_t advance = 0;
		switch (op & 0xc0) {
		case 0x40:
			advance = (op & 0x3f) * cie->code_align;
			goto advanced;
		case 0x80:
			reg = op & 0x3f;
			off = (int64_t)get_uleb(&c) * cie->data_align;
			if (reg_ok(reg))
				row->rules[reg] = (struct rule){.kind = R_OFFSET, .off = off};
			continue;
		case 0xc0:
			reg = op & 0x3f;
			if (reg_ok(reg))
				row->rules[reg] = st->initial.rules[reg];
			continue;
		}
		switch (op) {
		case 0x00: /* nop */
			break;
		case 0x01: /* set_loc */
			v = get_encoded(&c, fde_enc);
			if (v > target)
				return 0;
			loc = v;
			break;
		case 0x02:
			advance = get_fixed(&c, 1) * cie->code_align;
			goto advanced;
		case 0x03:
			advance = get_fixed(&c, 2) * cie->code_align;
			goto advanced;
		case 0x04:
			advance = get_fixed(&c, 4) * cie->code_align;
			goto advanced;
		case 0x05: /* offset_extended */
			reg = get_uleb(&c);
			off = (int64_t)get_uleb(&c) * cie->data_align;
			if (reg_ok(reg))
				row->rules[reg] = (struct rule){.kind = R_OFFSET, .off = off};
			break;
		case 0x06: /* restore_extended */
			reg = get_uleb(&c);
			if (reg_ok(reg))
				row->rules[reg] = st->initial.rules[reg];
			break;
		case 0x07: /* undefined */
			reg = get_uleb(&c);
			if (reg_ok(reg))
				row->rules[reg] = (struct rule){.kind = R_UNDEF};
			break;
		case 0x08: /* same_value */
			reg = get_uleb(&c);
			if (reg_ok(reg))
				row->rules[reg] = (struct rule){.kind = R_SAME};
			break;
		case 0x09: /* register */
			reg = get_uleb(&c);
			v = get_uleb(&c);
			if (reg_ok(reg))
				row->rules[reg] =
				    (struct rule){.kind = R_REGISTER, .reg = (uint16_t)v};
			break;
		case 0x0a: /* remember_state */
			if (st->depth == MAX_STATE_STACK)
				return -E2BIG;
			st->stack[st->depth++] = *row;
			break;
		case 0x0b: /* restore_state */
			if (st->depth == 0)
				return -EINVAL;
			*row = st->stack[--st->depth];
			break;
		case 0x0c: /* def_cfa */
			row->cfa_reg = (uint16_t)get_uleb(&c);
			row->cfa_off = (int64_t)get_uleb(&c);
			row->cfa_is_expr = false;
			break;
		case 0x0d: /* def_cfa_register */
			row->cfa_reg = (uint16_t)get_uleb(&c);
			row->cfa_is_expr = false;
			break;
		case 0x0e: /* def_cfa_offset */
			row->cfa_off = (int64_t)get_uleb(&c);
			break;
		case 0x0f: /* def_cfa_expression */
			row->cfa_expr_len = get_uleb(&c);
			row->cfa_expr = c.p;
			row->cfa_is_expr = true;
			c.p += row->cfa_expr_len;
			break;
		case 0x10: /* expression */
		case 0x16: /* val_expression */
			reg = get_uleb(&c);
			v = get_uleb(&c);
			if (reg_ok(reg))
				row->rules[reg] =
				    (struct rule){.kind = op == 0x10 ? R_EXPR : R_VAL_EXPR,
						  .expr = c.p,
						  .expr_len = v};
			c.p += v;
			break;
		case 0x11: /* offset_extended_sf */
			reg = get_uleb(&c);
			off = get_sleb(&c) * cie->data_align;
			if (reg_ok(reg))
				row->rules[reg] = (struct rule){.kind = R_OFFSET, .off = off};
			break;
		case 0x12: /* def_cfa_sf */
			row->cfa_reg = (uint16_t)get_uleb(&c);
			row->cfa_off = get_sleb(&c) * cie->data_align;
			row->cfa_is_expr = false;
			break;
		case 0x13: /* def_cfa_offset_sf */
			row->cfa_off = get_sleb(&c) * cie->data_align;
			break;
		case 0x14: /* val_offset */
			reg = get_uleb(&c);
			off = (int64_t)get_uleb(&c) * cie->data_align;
			if (reg_ok(reg))
				row->rules[reg] = (struct rule){.kind = R_VAL_OFFSET, .off = off};
			break;
		case 0x15: /* val_offset_sf */
			reg = get_uleb(&c);
			off = get_sleb(&c) * cie->data_align;
			if (reg_ok(reg))
				row->rules[reg] = (struct rule){.kind = R_VAL_OFFSET, .off = off};
			break;
		case 0x2d: /* GNU_window_save, on aarch64 negate_ra_state: PAC is stripped anyway */
			break;
		case 0x2e: /* GNU_args_size */
			get_uleb(&c);
			break;
		case 0x2f: /* GNU_negative_offset_extended */
			reg = get_uleb(&c);
			off = -(int64_t)get_uleb(&c) * cie->data_align;
			if (reg_ok(reg))
				row->rules[reg] = (struct rule){.kind = R_OFFSET, .off = off};
			break;
		default:
			return -EINVAL;
		}
		continue;
	advanced:
		if (loc + advance > target)
			return 0;
		loc += advance;
	}
	return c.bad ? -EINVAL : 0;
}

/* ---- DWARF expressions (the subset .eh_frame uses) ---- */

static int eval_expr(struct swa_unwind_ctx *uc, const struct swa_regs *regs, uint64_t p,
		     uint64_t len, uint64_t initial, bool push_initial, uint64_t *ret)
{
	uint64_t st[MAX_EXPR_STACK];
	unsigned sp = 0;
	struct cursor c = {.p = p, .end = p + len};
	if (push_initial)
		st[sp++] = initial;
	for (unsigned n = 0; c.p < c.end && !c.bad; n++) {
		if (n > MAX_EXPR_OPS)
			return -E2BIG;
		uint8_t op = get_u8(&c);
		uint64_t a, b;
#define NEED(k)                                                                                    \
	do {                                                                                       \
		if (sp < (k))                                                                      \
			return -EINVAL;                                                            \
	} while (0)
#define PUSH(v)                                                                                    \
	do {                                                                                       \
		if (sp == MAX_EXPR_STACK)                                                          \
			return -E2BIG;                                                             \
		uint64_t v_ = (v);                                                                 \
		st[sp++] = v_;                                                                     \
	} while (0)
		if (op >= 0x30 && op <= 0x4f) { /* lit0..lit31 */
			PUSH(op - 0x30u);
			continue;
		}
		if (op >= 0x70 && op <= 0x8f) { /* breg0..breg31 */
			unsigned r = op - 0x70u;
			int64_t off = get_sleb(&c);
			if (!swa_regs_has(regs, r))
				return -ENOENT;
			PUSH(regs->r[r] + (uint64_t)off);
			continue;
		}
		switch (op) {
		case 0x08:
			PUSH(get_fixed(&c, 1));
			break;
		case 0x09:
			PUSH((uint64_t)(int64_t)(int8_t)get_fixed(&c, 1));
			break;
		case 0x0a:
			PUSH(get_fixed(&c, 2));
			break;
		case 0x0b:
			PUSH((uint64_t)(int64_t)(int16_t)get_fixed(&c, 2));
			break;
		case 0x0c:
			PUSH(get_fixed(&c, 4));
			break;
		case 0x0d:
			PUSH((uint64_t)(int64_t)(int32_t)get_fixed(&c, 4));
			break;
		case 0x0e:
		case 0x0f:
			PUSH(get_fixed(&c, 8));
			break;
		case 0x10:
			PUSH(get_uleb(&c));
			break;
		case 0x11:
			PUSH((uint64_t)get_sleb(&c));
			break;
		case 0x12:
			NEED(1);
			PUSH(st[sp - 1]);
			break; /* dup */
		case 0x13:
			NEED(1);
			sp--;
			break; /* drop */
		case 0x14:
			NEED(2);
			PUSH(st[sp - 2]);
			break; /* over */
		case 0x15:     /* pick */
			a = get_fixed(&c, 1);
			NEED(a + 1);
			PUSH(st[sp - 1 - a]);
			break;
		case 0x16:
			NEED(2);
			a = st[sp - 1];
			st[sp - 1] = st[sp - 2];
			st[sp - 2] = a;
			break;
		case 0x17: /* rot */
			NEED(3);
			a = st[sp - 1];
			st[sp - 1] = st[sp - 2];
			st[sp - 2] = st[sp - 3];
			st[sp - 3] = a;
			break;
		case 0x06: /* deref */
			NEED(1);
			if (swa_stack_read(uc, st[sp - 1], &a) < 0)
				return -EFAULT;
			st[sp - 1] = a;
			break;
		case 0x19:
			NEED(1);
			st[sp - 1] = (uint64_t)llabs((long long)st[sp - 1]);
			break;
		case 0x1f:
			NEED(1);
			st[sp - 1] = -st[sp - 1];
			break;
		case 0x20:
			NEED(1);
			st[sp - 1] = ~st[sp - 1];
			break;
		case 0x23:
			NEED(1);
			st[sp - 1] += get_uleb(&c);
			break; /* plus_uconst */
		case 0x1a:
		case 0x1c:
		case 0x1e:
		case 0x21:
		case 0x22:
		case 0x24:
		case 0x25:
		case 0x26:
		case 0x27:
		case 0x29:
		case 0x2a:
		case 0x2b:
		case 0x2c:
		case 0x2d:
		case 0x2e:
			NEED(2);
			b = st[--sp];
			a = st[sp - 1];
			switch (op) {
			case 0x1a:
				a &= b;
				break;
			case 0x1c:
				a -= b;
				break;
			case 0x1e:
				a *= b;
				break;
			case 0x21:
				a |= b;
				break;
			case 0x22:
				a += b;
				break;
			case 0x24:
				a = b < 64 ? a << b : 0;
				break;
			case 0x25:
				a = b < 64 ? a >> b : 0;
				break;
			case 0x26:
				a = (uint64_t)((int64_t)a >> (b < 63 ? b : 63));
				break;
			case 0x27:
				a ^= b;
				break;
			case 0x29:
				a = a == b;
				break;
			case 0x2a:
				a = (int64_t)a >= (int64_t)b;
				break;
			case 0x2b:
				a = (int64_t)a > (int64_t)b;
				break;
			case 0x2c:
				a = (int64_t)a <= (int64_t)b;
				break;
			case 0x2d:
				a = (int64_t)a < (int64_t)b;
				break;
			case 0x2e:
				a = a != b;
				break;
			}
			st[sp - 1] = a;
			break;
		case 0x2f: { /* skip */
			int16_t d = (int16_t)get_fixed(&c, 2);
			c.p += (uint64_t)(int64_t)d;
			break;
		}
		case 0x28: { /* bra */
			int16_t d = (int16_t)get_fixed(&c, 2);
			NEED(1);
			if (st[--sp])
				c.p += (uint64_t)(int64_t)d;
			break;
		}
		case 0x96:
			break; /* nop */
		default:
			return -ENOTSUP;
		}
#undef NEED
#undef PUSH
	}
	if (c.bad || sp == 0)
		return -EINVAL;
	*ret = st[sp - 1];
	return 0;
}

/* ---- one step ---- */

static int rule_value(struct swa_unwind_ctx *uc, const struct swa_regs *regs, const struct rule *r,
		      unsigned reg, uint64_t cfa, bool *known, uint64_t *ret)
{
	uint64_t addr;
	*known = true;
	switch (r->kind) {
	case R_SAME:
		*known = swa_regs_has(regs, reg);
		*ret = regs->r[reg];
		return 0;
	case R_UNDEF:
		*known = false;
		return 0;
	case R_OFFSET:
		return swa_stack_read(uc, cfa + (uint64_t)r->off, ret);
	case R_VAL_OFFSET:
		*ret = cfa + (uint64_t)r->off;
		return 0;
	case R_REGISTER:
		if (!swa_regs_has(regs, r->reg))
			*known = false;
		else
			*ret = regs->r[r->reg];
		return 0;
	case R_EXPR:
		if (eval_expr(uc, regs, r->expr, r->expr_len, cfa, true, &addr) < 0)
			return -EINVAL;
		return swa_stack_read(uc, addr, ret);
	case R_VAL_EXPR:
		return eval_expr(uc, regs, r->expr, r->expr_len, cfa, true, ret);
	}
	return -EINVAL;
}

/*
 * A frame-pointer-based CFA needs the frame pointer, which a thread read
 * without a signal does not give us (only sp and pc).  Finds the frame
 * record the way the frame would have laid it out: the lowest slot above sp
 * holding a higher stack address followed by a return address into code.
 */
static bool guess_frame_pointer(struct swa_unwind_ctx *uc, struct swa_regs *regs)
{
	uint64_t sp = regs->r[SWA_REG_SP];
	uint64_t hi = uc->cap->stack_hi;
	for (uint64_t a = (sp + 7) & ~7ull; a + 16 <= hi && a < sp + 8192; a += 8) {
		uint64_t next, ra;
		if (swa_stack_read(uc, a, &next) < 0 || swa_stack_read(uc, a + 8, &ra) < 0)
			return false;
		int async = 0;
		next = swa_arch_frame_pointer(next, &async);
		if (next <= a || next >= hi || (next & 7))
			continue;
		if (!swa_images_find(swa_arch_strip(ra)))
			continue;
		swa_regs_set(regs, SWA_REG_FP, a);
		return true;
	}
	return false;
}

/* ---- rows by program counter ---- */

struct rule_slot {
	uint64_t key; /* pc << 1 | pc_is_return, 0 when empty */
	const struct swa_image *im;
	uint32_t ra_reg;
	bool signal_frame;
	struct row row;
};

/* one unwinder thread, the watchdog: a fixed table, no allocation */
static struct rule_slot rule_slots[RULE_SLOTS];

void swa_cfi_invalidate(void)
{
	for (size_t i = 0; i < RULE_SLOTS; i++)
		rule_slots[i].key = 0;
}

static struct rule_slot *rule_slot(uint64_t key)
{
	return &rule_slots[(key * 0x9e3779b97f4a7c15ull) >> 56 & (RULE_SLOTS - 1)];
}

/* Runs the FDE at fde_at up to pc into slot's row; -errno when it does not cover pc. */
static int row_from_fde(uint64_t fde_at, uint64_t pc, bool pc_is_return, struct rule_slot *slot)
{
	uint64_t lookup = pc_is_return ? pc - 1 : pc;
	struct cie cie;
	struct fde fde;
	if (parse_fde(fde_at, &cie, &fde) < 0)
		return -EINVAL;
	if (cie.signal_frame)
		lookup = pc;
	if (lookup < fde.pc_begin || lookup >= fde.pc_end || !reg_ok(cie.ra_reg))
		return -ENOENT;

	static struct cfa_state st; /* one unwinder thread: the watchdog */
	memset(&st.row, 0, sizeof(st.row));
	if (run_cfa(&st, &cie, cie.insns, cie.insns_end, fde.pc_begin, UINT64_MAX, cie.fde_enc) < 0)
		return -EINVAL;
	st.initial = st.row;
	st.depth = 0;
	if (run_cfa(&st, &cie, fde.insns, fde.insns_end, fde.pc_begin, lookup, cie.fde_enc) < 0)
		return -EINVAL;
	slot->ra_reg = cie.ra_reg;
	slot->signal_frame = cie.signal_frame;
	slot->row = st.row;
	return 0;
}

/* One step by a row: the caller's registers from the current ones. */
static int apply_row(struct swa_unwind_ctx *uc, const struct rule_slot *slot, struct swa_regs *regs,
		     bool *ret_signal_frame)
{
	const struct row *row = &slot->row;
	uint64_t cfa;
	if (row->cfa_is_expr) {
		if (eval_expr(uc, regs, row->cfa_expr, row->cfa_expr_len, 0, false, &cfa) < 0)
			return -EINVAL;
	} else {
		if (!reg_ok(row->cfa_reg))
			return -EINVAL;
		if (!swa_regs_has(regs, row->cfa_reg) &&
		    !(row->cfa_reg == SWA_REG_FP && guess_frame_pointer(uc, regs)))
			return -ENOENT;
		cfa = regs->r[row->cfa_reg] + (uint64_t)row->cfa_off;
	}

	const struct rule *ra_rule = &row->rules[slot->ra_reg];
	if (ra_rule->kind == R_UNDEF)
		return 0;
	/*
	 * A register whose slot cannot be read (below the copy: CFI may name
	 * a slot an epilogue already popped) is unknown to the caller; only
	 * the return address decides whether the step holds.
	 */
	struct swa_regs next = {0};
	for (unsigned i = 0; i < SWA_NREGS; i++) {
		bool known;
		uint64_t v = 0;
		int r = rule_value(uc, regs, &row->rules[i], i, cfa, &known, &v);
		if (r < 0 && i == slot->ra_reg)
			return -EFAULT;
		if (r == 0 && known)
			swa_regs_set(&next, i, v);
	}
	if (!swa_regs_has(&next, slot->ra_reg))
		return -ENOENT;
	next.pc = swa_arch_strip(next.r[slot->ra_reg]);
	swa_regs_set(&next, SWA_REG_SP, cfa);
	*regs = next;
	*ret_signal_frame = slot->signal_frame;
	return 1;
}

int swa_cfi_step(struct swa_unwind_ctx *uc, const struct swa_image *im, struct swa_regs *regs,
		 bool pc_is_return, bool *ret_signal_frame)
{
	uint64_t key = regs->pc << 1 | pc_is_return;
	struct rule_slot *slot = rule_slot(key);
	if (slot->key != key || slot->im != im) {
		uint64_t fde_at = swa_cfi_find_fde(im, pc_is_return ? regs->pc - 1 : regs->pc);
		if (!fde_at)
			return -ENOENT;
		slot->key = 0;
		int r = row_from_fde(fde_at, regs->pc, pc_is_return, slot);
		if (r < 0)
			return r;
		slot->key = key;
		slot->im = im;
	}
	return apply_row(uc, slot, regs, ret_signal_frame);
}

int swa_cfi_step_fde(struct swa_unwind_ctx *uc, uint64_t fde_at, struct swa_regs *regs,
		     bool pc_is_return, bool *ret_signal_frame)
{
	static struct rule_slot scratch; /* FDEs found another way are not kept */
	int r = row_from_fde(fde_at, regs->pc, pc_is_return, &scratch);
	if (r < 0)
		return r;
	return apply_row(uc, &scratch, regs, ret_signal_frame);
}
