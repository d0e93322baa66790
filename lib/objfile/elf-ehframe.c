/*
 * Function starts from .eh_frame: the initial location of every FDE, read
 * through its CIE's pointer encoding, or from the sorted table of them in
 * .eh_frame_hdr when the linker made one.  Stripped executables keep their
 * unwind tables, so this is how an address in one is bounded by the
 * function that contains it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "elf-private.h"

#define MAX_FDES (1u << 24)

struct cursor {
	const uint8_t *p;
	size_t size, pos;
	const struct elf_file *f;
	bool bad;
};

static uint64_t get(struct cursor *c, size_t n)
{
	if (c->bad || n > c->size - c->pos) {
		c->bad = true;
		return 0;
	}
	const uint8_t *p = c->p + c->pos;
	c->pos += n;
	switch (n) {
	case 1:
		return p[0];
	case 2:
		return sw_elf_u16(c->f, p);
	case 4:
		return sw_elf_u32(c->f, p);
	default:
		return sw_elf_u64(c->f, p);
	}
}

static uint64_t uleb(struct cursor *c)
{
	uint64_t v = 0;
	for (unsigned shift = 0;; shift += 7) {
		uint64_t b = get(c, 1);
		if (c->bad)
			return 0;
		if (shift < 64)
			v |= (b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
		if (shift > 70) {
			c->bad = true;
			return 0;
		}
	}
}

static int64_t sleb(struct cursor *c)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint64_t b;
	do {
		b = get(c, 1);
		if (c->bad || shift > 70) {
			c->bad = true;
			return 0;
		}
		if (shift < 64)
			v |= (b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

/* Reads a pointer of encoding enc at the cursor; vaddr is its address. */
static uint64_t read_encoded(struct cursor *c, uint8_t enc, uint64_t vaddr)
{
	uint64_t v;
	switch (enc & 0x0f) {
	case 0x00:
		v = get(c, c->f->is64 ? 8 : 4);
		break;
	case 0x01:
		v = uleb(c);
		break;
	case 0x02:
		v = get(c, 2);
		break;
	case 0x03:
		v = get(c, 4);
		break;
	case 0x04:
		v = get(c, 8);
		break;
	case 0x09:
		v = (uint64_t)sleb(c);
		break;
	case 0x0a:
		v = (uint64_t)(int16_t)get(c, 2);
		break;
	case 0x0b:
		v = (uint64_t)(int32_t)get(c, 4);
		break;
	case 0x0c:
		v = get(c, 8);
		break;
	default:
		c->bad = true;
		return 0;
	}
	if ((enc & 0x70) == 0x10)
		v += vaddr;
	if (!c->f->is64)
		v &= 0xffffffffu;
	return v;
}

/* The FDE pointer encoding a CIE at off declares (absptr when none). */
static int cie_encoding(const struct elf_file *f, const uint8_t *data, size_t size, uint64_t off,
			uint8_t *ret)
{
	struct cursor c = {.p = data, .size = size, .pos = off, .f = f};
	if (off >= size)
		return -EINVAL;
	uint64_t len = get(&c, 4);
	if (len == 0xffffffff) {
		len = get(&c, 8);
		get(&c, 8);
	} else {
		get(&c, 4);
	}
	uint8_t version = (uint8_t)get(&c, 1);
	const char *aug = (const char *)c.p + c.pos;
	size_t max = c.bad ? 0 : c.size - c.pos;
	const char *nul = memchr(aug, '\0', max);
	if (c.bad || !nul)
		return -EINVAL;
	c.pos += (size_t)(nul - aug) + 1;
	if (strstr(aug, "eh"))
		get(&c, f->is64 ? 8 : 4);
	uleb(&c);
	sleb(&c);
	if (version == 1)
		get(&c, 1);
	else
		uleb(&c);
	*ret = 0;
	if (aug[0] != 'z')
		return c.bad ? -EINVAL : 0;
	uleb(&c);
	for (const char *a = aug + 1; *a && !c.bad; a++) {
		if (*a == 'R') {
			*ret = (uint8_t)get(&c, 1);
		} else if (*a == 'P') {
			uint8_t penc = (uint8_t)get(&c, 1);
			read_encoded(&c, penc & 0x7f, 0);
		} else if (*a == 'L') {
			get(&c, 1);
		} else if (*a != 'S' && *a != 'B' && *a != 'G') {
			break; /* unknown augmentation: the rest is unreadable, R came first */
		}
	}
	return c.bad ? -EINVAL : 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Sorts (when they are not) and drops repeats; returns how many remain. */
static size_t sorted_unique(uint64_t *v, size_t n)
{
	if (n && sw_object_sort_u64(v, n) < 0)
		qsort(v, n, sizeof(*v), cmp_u64);
	size_t j = 0;
	for (size_t i = 0; i < n; i++)
		if (j == 0 || v[j - 1] != v[i])
			v[j++] = v[i];
	return j;
}

int sw_elf_eh_frame_hdr_starts(const struct elf_file *f, const struct elf_shdr *s, uint64_t **ret,
			       size_t *ret_n)
{
	const uint8_t *data;
	if (sw_elf_section_data(f, s, &data, NULL) < 0)
		return -EINVAL;
	struct cursor c = {.p = data, .size = s->size, .f = f};
	uint8_t version = (uint8_t)get(&c, 1), ptr_enc = (uint8_t)get(&c, 1);
	uint8_t count_enc = (uint8_t)get(&c, 1), table_enc = (uint8_t)get(&c, 1);
	if (c.bad || version != 1 || ptr_enc == 0xff || count_enc == 0xff)
		return -ENOENT;
	read_encoded(&c, ptr_enc, s->addr + c.pos);
	uint64_t count = read_encoded(&c, count_enc, s->addr + c.pos);
	/* entries of a fixed size, absolute, or relative to the section (datarel) */
	size_t size = (table_enc & 0x07) == 0x02   ? 2
		      : (table_enc & 0x07) == 0x03 ? 4
		      : (table_enc & 0x07) == 0x04 ? 8
						   : 0;
	bool datarel = (table_enc & 0x70) == 0x30;
	if (c.bad || count == 0 || !size || (table_enc & 0x70 && !datarel) || count > MAX_FDES ||
	    count * 2 * size > s->size - c.pos)
		return -ENOENT;
	uint64_t *starts = malloc(count * sizeof(*starts));
	if (!starts)
		return -ENOMEM;
	size_t n = 0;
	for (uint64_t i = 0; i < count; i++) {
		uint64_t pc = read_encoded(&c, table_enc & 0x0f, 0);
		get(&c, size); /* the FDE's address */
		if (datarel)
			pc += s->addr;
		if (!f->is64)
			pc &= 0xffffffffu;
		if (pc) /* as the FDE scan: a zero start is no function's */
			starts[n++] = pc;
	}
	*ret = starts;
	*ret_n = sorted_unique(starts, n);
	return 0;
}

int sw_elf_eh_frame_starts(const struct elf_file *f, const struct elf_shdr *s, uint64_t **ret,
			   size_t *ret_n, struct sw_error *err)
{
	const uint8_t *data;
	int r = sw_elf_section_data(f, s, &data, err);
	if (r < 0)
		return r;
	size_t cap = 0, n = 0;
	uint64_t *starts = NULL;
	uint64_t off = 0, last_cie = UINT64_MAX;
	uint8_t enc = 0;
	while (s->size - off >= 4) {
		struct cursor c = {.p = data, .size = s->size, .pos = off, .f = f};
		uint64_t len = get(&c, 4);
		if (len == 0)
			break;
		size_t idsize = 4;
		if (len == 0xffffffff) {
			len = get(&c, 8);
			idsize = 8;
		}
		uint64_t body = c.pos;
		if (c.bad || len > s->size - body || len < idsize)
			break;
		uint64_t id = get(&c, idsize);
		if (id != 0) { /* an FDE: id is the distance back to its CIE */
			uint64_t cie = body - id;
			if (id > body)
				break;
			if (cie != last_cie) {
				if (cie_encoding(f, data, s->size, cie, &enc) < 0)
					break;
				last_cie = cie;
			}
			uint64_t pc = read_encoded(&c, enc, s->addr + c.pos);
			if (c.bad)
				break;
			if (pc) {
				if (n == cap) {
					size_t ncap = cap ? cap * 2 : 256;
					uint64_t *ns = ncap <= MAX_FDES
							   ? realloc(starts, ncap * sizeof(*ns))
							   : NULL;
					if (!ns) {
						free(starts);
						return sw_error_set(err, -ENOMEM, "too many FDEs");
					}
					starts = ns;
					cap = ncap;
				}
				starts[n++] = pc;
			}
		}
		off = body + len;
	}
	*ret = starts;
	*ret_n = sorted_unique(starts, n);
	return 0;
}
