/*
 * Names for the procedure linkage table: no symbol covers .plt, .plt.sec or
 * .plt.got, so an address there took the name of whatever function came
 * before it.  Each PLT entry is named after the function it jumps to, as
 * objdump and llvm-symbolizer call it ("puts@plt"): the relocations of
 * .rela.plt (or .rel.plt) name, in order, the entries after the PLT's
 * header, and those of .plt.sec when the linker split the table (IBT).
 * .plt.got's entries jump through GOT slots whose dynamic relocations name
 * them.  The header gets the section's name, so that it at least never
 * borrows a neighbour's.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf-private.h"
#include "util/buf.h"

#define SHT_RELA   4
#define SHT_REL    9
#define MAX_PLT    (1u << 20)
#define NAME_LIMIT ((size_t)64 << 20)

struct plt {
	const struct elf_file *f;
	struct sw_buf names; /* "puts@plt\0..." */
	struct sw_symbol *syms;
	size_t n, cap;
	size_t *name_at; /* offsets into names, turned into pointers at the end */
};

static const struct elf_shdr *section(const struct elf_file *f, const char *name)
{
	for (size_t i = 1; i < f->nsh; i++)
		if (f->shstr && f->sh[i].name < f->shstr_size &&
		    strcmp(f->shstr + f->sh[i].name, name) == 0)
			return &f->sh[i];
	return NULL;
}

static int add(struct plt *p, uint64_t addr, uint64_t size, const char *name, size_t len)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		struct sw_symbol *s = realloc(p->syms, cap * sizeof(*s));
		size_t *at = realloc(p->name_at, cap * sizeof(*at));
		if (s)
			p->syms = s;
		if (at)
			p->name_at = at;
		if (!s || !at)
			return -ENOMEM;
		p->cap = cap;
	}
	p->name_at[p->n] = p->names.len;
	int r = sw_buf_append(&p->names, name, len);
	if (r >= 0)
		r = sw_buf_putc(&p->names, '\0');
	if (r < 0)
		return r;
	p->syms[p->n++] = (struct sw_symbol){
	    .addr = addr, .size = size, .flags = SW_SYMBOL_FUNCTION, .name = NULL};
	return 0;
}

/* The dynamic symbol's name of relocation i, or NULL. */
static const char *reloc_name(const struct elf_file *f, const struct elf_shdr *rel,
			      const uint8_t *data, uint64_t i)
{
	bool rela = rel->type == SHT_RELA;
	size_t esize = f->is64 ? (rela ? 24 : 16) : (rela ? 12 : 8);
	const uint8_t *r = data + i * esize;
	uint64_t info = f->is64 ? sw_elf_u64(f, r + 8) : sw_elf_u32(f, r + 4);
	uint64_t symi = f->is64 ? info >> 32 : info >> 8;
	if (rel->link >= f->nsh)
		return NULL;
	const struct elf_shdr *dynsym = &f->sh[rel->link];
	size_t ssize = f->is64 ? 24 : 16;
	const uint8_t *syms, *str;
	if (!symi || dynsym->link >= f->nsh || symi >= dynsym->size / ssize ||
	    sw_elf_section_data(f, dynsym, &syms, NULL) < 0 ||
	    sw_elf_section_data(f, &f->sh[dynsym->link], &str, NULL) < 0)
		return NULL;
	uint32_t name = sw_elf_u32(f, syms + symi * ssize);
	const struct elf_shdr *ss = &f->sh[dynsym->link];
	if (name >= ss->size || !memchr(str + name, '\0', ss->size - name) || !str[name])
		return NULL;
	return (const char *)str + name;
}

/* Names n entries of s after its first header bytes, from the relocations in order. */
static int name_entries(struct plt *p, const struct elf_shdr *s, uint64_t header,
			const struct elf_shdr *rel, const uint8_t *data, uint64_t n)
{
	uint64_t ent = (s->size - header) / n;
	char name[512];
	for (uint64_t i = 0; i < n; i++) {
		const char *target = reloc_name(p->f, rel, data, i);
		int len = snprintf(name, sizeof(name), "%s@plt", target ? target : "?");
		if (len < 0 || (size_t)len >= sizeof(name))
			continue;
		int r = add(p, s->addr + header + i * ent, ent, name, (size_t)len);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * The dynamic relocations (.rela.dyn) that name a symbol, sorted by the
 * address they patch: a large library has tens of thousands of relative
 * ones, and scanning them all for each .plt.got entry took most of the
 * time of opening it.
 */
struct got_rels {
	const struct elf_shdr *rel;
	const uint8_t *data;
	struct sw_sort_key *v;
	size_t n;
};

static void got_rels_load(const struct elf_file *f, struct got_rels *g)
{
	*g = (struct got_rels){.rel = section(f, ".rela.dyn")};
	if (!g->rel || g->rel->type != SHT_RELA || !f->is64 ||
	    sw_elf_section_data(f, g->rel, &g->data, NULL) < 0)
		return;
	uint64_t total = g->rel->size / 24;
	g->v = malloc((total ? total : 1) * sizeof(*g->v));
	for (uint64_t i = 0; g->v && i < total; i++)
		if (sw_elf_u64(f, g->data + i * 24 + 8) >> 32) /* a symbol index */
			g->v[g->n++] = (struct sw_sort_key){sw_elf_u64(f, g->data + i * 24), i};
	if (g->v && sw_object_sort_keys(g->v, g->n) < 0)
		g->n = 0;
}

/* The symbol name the relocation of the GOT slot at addr names, or NULL. */
static const char *got_slot_name(const struct elf_file *f, const struct got_rels *g, uint64_t addr)
{
	size_t lo = 0, hi = g->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (g->v[mid].key < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < g->n && g->v[lo].key == addr ? reloc_name(f, g->rel, g->data, g->v[lo].index)
						 : NULL;
}

/*
 * .plt.got (GNU ld, x86-64): entries of 8 or 16 bytes, each an indirect
 * jump through a GOT slot (jmp *disp32(%rip), after endbr64 or bnd); the
 * slot's dynamic relocation names the function.
 */
static int name_plt_got(struct plt *p, const struct elf_shdr *got)
{
	const uint8_t *data;
	uint64_t ent = got->entsize ? got->entsize : 8;
	char name[512];
	if (!p->f->is64 || ent < 6 || ent > 64 || sw_elf_section_data(p->f, got, &data, NULL) < 0)
		return add(p, got->addr, got->size, ".plt.got", 8);
	struct got_rels g;
	got_rels_load(p->f, &g);
	int r = 0;
	for (uint64_t off = 0; r >= 0 && off + ent <= got->size; off += ent) {
		const char *target = NULL;
		for (uint64_t k = off; k + 6 <= off + ent; k++)
			if (data[k] == 0xff && data[k + 1] == 0x25) {
				int32_t disp = (int32_t)sw_elf_u32(p->f, data + k + 2);
				target = got_slot_name(p->f, &g, got->addr + k + 6 + (int64_t)disp);
				break;
			}
		int len = snprintf(name, sizeof(name), "%s@plt", target ? target : "?");
		if (len < 0 || (size_t)len >= sizeof(name))
			continue;
		r = add(p, got->addr + off, ent, name, (size_t)len);
	}
	free(g.v);
	return r;
}

static int collect(struct plt *p)
{
	const struct elf_file *f = p->f;
	const struct elf_shdr *rel = section(f, ".rela.plt");
	if (!rel)
		rel = section(f, ".rel.plt");
	const struct elf_shdr *plt = section(f, ".plt"), *sec = section(f, ".plt.sec"),
			      *got = section(f, ".plt.got");
	const uint8_t *data = NULL;
	uint64_t n = 0;
	if (rel && (rel->type == SHT_RELA || rel->type == SHT_REL) &&
	    sw_elf_section_data(f, rel, &data, NULL) >= 0) {
		bool rela = rel->type == SHT_RELA;
		n = rel->size / (f->is64 ? (rela ? 24 : 16) : (rela ? 12 : 8));
	}
	if (n > MAX_PLT)
		n = 0;
	int r = 0;
	uint64_t ent = plt && plt->entsize ? plt->entsize : 16;
	/* the header: whatever the entries leave at the start (16 bytes on x86, 32 on arm64) */
	if (plt && n && plt->size > n * ent) {
		uint64_t header = plt->size - n * ent;
		r = add(p, plt->addr, header, ".plt", 4);
		if (r >= 0)
			r = name_entries(p, plt, header, rel, data, n);
	} else if (plt && plt->size) {
		r = add(p, plt->addr, plt->size, ".plt", 4);
	}
	if (r >= 0 && sec && n && sec->size >= n)
		r = name_entries(p, sec, 0, rel, data, n);
	if (r >= 0 && got && got->size)
		r = name_plt_got(p, got);
	return r;
}

static int by_addr(const void *a, const void *b)
{
	const struct sw_symbol *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Whether the sorted symbols hold one at addr. */
static bool has_symbol_at(const struct sw_symbol *s, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && s[lo].addr == addr;
}

int sw_elf_plt_symbols(const struct elf_file *f, struct elf_priv *priv, struct sw_object *obj)
{
	struct plt p = {.f = f};
	sw_buf_init(&p.names, NAME_LIMIT);
	int r = collect(&p);
	if (r < 0 || p.n == 0)
		goto out;
	/* the symbol table's own names win where they exist */
	size_t n = obj->nsymbols, keep = 0;
	for (size_t i = 0; i < p.n; i++)
		if (!has_symbol_at(obj->symbols, n, p.syms[i].addr))
			p.syms[keep++] = p.syms[i], p.name_at[keep - 1] = p.name_at[i];
	struct sw_symbol *all = realloc(priv->symbols, (n + keep) * sizeof(*all));
	if (!all) {
		r = -ENOMEM;
		goto out;
	}
	priv->symbols = all;
	priv->plt_names = sw_buf_detach(&p.names, NULL);
	for (size_t i = 0; i < keep; i++)
		p.syms[i].name = priv->plt_names + p.name_at[i];
	/* the few PLT entries sorted, then merged in from the back: at one
	 * address, table symbols before PLT ones, PLT ones in their order */
	if (sw_object_sort_by_u64(p.syms, keep, sizeof(*p.syms), offsetof(struct sw_symbol, addr)) <
	    0)
		qsort(p.syms, keep, sizeof(*p.syms), by_addr);
	size_t a = n, b = keep, k = n + keep;
	while (b > 0) {
		if (a > 0 && all[a - 1].addr > p.syms[b - 1].addr)
			all[--k] = all[--a];
		else
			all[--k] = p.syms[--b];
	}
	obj->symbols = all;
	obj->nsymbols = n + keep;
out:
	sw_buf_finish(&p.names);
	free(p.syms);
	free(p.name_at);
	return r;
}
