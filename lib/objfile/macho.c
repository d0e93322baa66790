/*
 * Mach-O reader: fills the container-neutral struct sw_object from one
 * slice of a thin or universal file, executables, dylibs, bundles and dSYM
 * companions alike: architecture, LC_UUID, the __TEXT segment, functions
 * from LC_SYMTAB (N_SECT symbols in instruction sections, stabs skipped),
 * LC_FUNCTION_STARTS, names found only in the export trie (LC_DYLD_INFO or
 * LC_DYLD_EXPORTS_TRIE) and the __DWARF segment's sections.  Chained fixups
 * and everything else in __LINKEDIT are left alone.
 *
 * The input is hostile: every offset, count and size is checked against the
 * slice before use, and errors name the offset in the file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "macho-format.h"
#include "macho.h"
#include "object.h"

#define MAX_SECTS     255 /* n_sect is one byte */
#define MAX_NAME_POOL ((size_t)256 << 20)
#define MAX_STUBS     (1u << 20)

struct sect {
	uint64_t addr, size;
	bool text;
};

struct parse {
	const uint8_t *d; /* the slice */
	size_t size;
	uint64_t base; /* the slice's offset in the file, for messages */
	bool is64;
	struct sect sects[MAX_SECTS];
	unsigned nsects;
	bool have_text;
	uint32_t symoff, nsyms, stroff, strsize;
	bool have_symtab;
	uint32_t fs_off, fs_size;
	bool have_fs;
	uint32_t trie_off, trie_size;
	bool have_trie;
	/* __stubs sections: first indirect symbol, stub size; and __stub_helper */
	struct stubs {
		uint64_t addr, size;
		uint32_t first, stub_size;
	} stubs[4], helper;
	unsigned nstubs;
	uint32_t indirect_off, nindirect;
};

struct priv {
	struct sw_symbol *symbols;
	uint64_t *starts;
	char *names;
	char *stub_names;       /* "_puts stub\0..." */
	struct parse *deferred; /* symbols left for later: the parsed commands */
};

static void release(struct sw_object *obj)
{
	struct priv *p = obj->priv;

	if (p) {
		free(p->symbols);
		free(p->starts);
		free(p->names);
		free(p->stub_names);
		free(p->deferred);
		free(p);
	}
	obj->priv = NULL;
	obj->symbols = NULL;
	obj->nsymbols = 0;
	obj->function_starts = NULL;
	obj->nfunction_starts = 0;
}

static int bad(struct sw_error *err, const struct parse *ps, uint64_t off, const char *what)
{
	return sw_error_set(err, -EINVAL, "%s at offset 0x%llx", what,
			    (unsigned long long)(ps->base + off));
}

static struct sw_section *dwarf_slot(struct sw_dwarf_sections *dw, const uint8_t *name)
{
	static const struct {
		const char *name;
		size_t off;
	} map[] = {
	    {"__debug_info", offsetof(struct sw_dwarf_sections, info)},
	    {"__debug_abbrev", offsetof(struct sw_dwarf_sections, abbrev)},
	    {"__debug_line", offsetof(struct sw_dwarf_sections, line)},
	    {"__debug_str", offsetof(struct sw_dwarf_sections, str)},
	    {"__debug_line_str", offsetof(struct sw_dwarf_sections, line_str)},
	    {"__debug_str_offs", offsetof(struct sw_dwarf_sections, str_offsets)},
	    {"__debug_addr", offsetof(struct sw_dwarf_sections, addr)},
	    {"__debug_ranges", offsetof(struct sw_dwarf_sections, ranges)},
	    {"__debug_rnglists", offsetof(struct sw_dwarf_sections, rnglists)},
	    {"__debug_aranges", offsetof(struct sw_dwarf_sections, aranges)},
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (macho_name_eq(name, map[i].name))
			return (struct sw_section *)((char *)dw + map[i].off);
	return NULL;
}

/* One section header at off (its load command checked to hold it). */
static int read_section(struct parse *ps, struct sw_object *obj, size_t off, struct sw_error *err)
{
	const uint8_t *s = ps->d + off;
	uint64_t addr = ps->is64 ? macho_rd64(s + SECT_OFF_ADDR) : macho_rd32(s + SECT_OFF_ADDR);
	uint64_t size = ps->is64 ? macho_rd64(s + 40) : macho_rd32(s + 36);
	size_t tail = ps->is64 ? 48 : 40; /* offset, align, reloff, nreloc, flags */
	uint32_t fileoff = macho_rd32(s + tail);
	uint32_t flags = macho_rd32(s + tail + 16);
	uint32_t type = flags & SECTION_TYPE;
	bool zerofill =
	    type == S_ZEROFILL || type == S_GB_ZEROFILL || type == S_THREAD_LOCAL_ZEROFILL;
	struct sw_section *slot;

	if (ps->nsects < MAX_SECTS) {
		struct sect *sc = &ps->sects[ps->nsects];

		sc->addr = addr;
		sc->size = size;
		sc->text = (flags & (S_ATTR_PURE_INSTRUCTIONS | S_ATTR_SOME_INSTRUCTIONS)) ||
			   (macho_name_eq(s + SECT_OFF_SEGNAME, "__TEXT") &&
			    macho_name_eq(s + SECT_OFF_SECTNAME, "__text"));
	}
	ps->nsects++;
	if (type == S_SYMBOL_STUBS && ps->nstubs < sizeof(ps->stubs) / sizeof(ps->stubs[0]))
		ps->stubs[ps->nstubs++] = (struct stubs){addr, size, macho_rd32(s + tail + 20),
							 macho_rd32(s + tail + 24)};
	else if (macho_name_eq(s + SECT_OFF_SECTNAME, "__stub_helper"))
		ps->helper = (struct stubs){.addr = addr, .size = size};
	if (!macho_name_eq(s + SECT_OFF_SEGNAME, "__DWARF") || zerofill)
		return 0;
	slot = dwarf_slot(&obj->dwarf, s + SECT_OFF_SECTNAME);
	if (!slot || size == 0)
		return 0;
	if (fileoff > ps->size || size > ps->size - fileoff)
		return bad(err, ps, off, "section data out of the file for the section header");
	slot->data = ps->d + fileoff;
	slot->size = (size_t)size;
	slot->addr = addr;
	return 0;
}

static int read_segment(struct parse *ps, struct sw_object *obj, size_t off, uint32_t cmdsize,
			struct sw_error *err)
{
	const uint8_t *c = ps->d + off;
	size_t hsize = ps->is64 ? SEG64_SIZE : SEG32_SIZE;
	size_t ssize = ps->is64 ? SECT64_SIZE : SECT32_SIZE;
	uint32_t nsects;

	if (cmdsize < hsize)
		return bad(err, ps, off, "truncated segment command");
	nsects = macho_rd32(c + (ps->is64 ? 64 : 48));
	if (nsects > (cmdsize - hsize) / ssize)
		return bad(err, ps, off, "segment's sections overrun its load command");
	if (macho_name_eq(c + SEG_OFF_SEGNAME, "__TEXT")) {
		obj->text_vmaddr = ps->is64 ? macho_rd64(c + 24) : macho_rd32(c + 24);
		obj->text_size = ps->is64 ? macho_rd64(c + 32) : macho_rd32(c + 28);
		ps->have_text = true;
	}
	for (uint32_t i = 0; i < nsects; i++) {
		int r = read_section(ps, obj, off + hsize + i * ssize, err);

		if (r < 0)
			return r;
	}
	return 0;
}

static int read_command(struct parse *ps, struct sw_object *obj, size_t off, uint32_t cmd,
			uint32_t cmdsize, struct sw_error *err)
{
	const uint8_t *c = ps->d + off;

	switch (cmd) {
	case LC_SEGMENT:
	case LC_SEGMENT_64:
		if ((cmd == LC_SEGMENT_64) != ps->is64)
			return bad(err, ps, off, "segment command of the wrong width");
		return read_segment(ps, obj, off, cmdsize, err);
	case LC_UUID:
		if (cmdsize < UUID_CMD_SIZE)
			return bad(err, ps, off, "truncated LC_UUID");
		memcpy(obj->id, c + 8, 16);
		obj->id_len = 16;
		return 0;
	case LC_SYMTAB:
		if (cmdsize < SYMTAB_CMD_SIZE)
			return bad(err, ps, off, "truncated LC_SYMTAB");
		ps->symoff = macho_rd32(c + 8);
		ps->nsyms = macho_rd32(c + 12);
		ps->stroff = macho_rd32(c + 16);
		ps->strsize = macho_rd32(c + 20);
		ps->have_symtab = true;
		return 0;
	case LC_DYSYMTAB:
		if (cmdsize < DYSYMTAB_CMD_SIZE)
			return bad(err, ps, off, "truncated LC_DYSYMTAB");
		ps->indirect_off = macho_rd32(c + DYSYMTAB_OFF_INDIRECTSYM);
		ps->nindirect = macho_rd32(c + DYSYMTAB_OFF_INDIRECTSYM + 4);
		return 0;
	case LC_FUNCTION_STARTS:
		if (cmdsize < LINKEDIT_CMD_SIZE)
			return bad(err, ps, off, "truncated LC_FUNCTION_STARTS");
		ps->fs_off = macho_rd32(c + 8);
		ps->fs_size = macho_rd32(c + 12);
		ps->have_fs = true;
		return 0;
	case LC_DYLD_INFO:
	case LC_DYLD_INFO_ONLY:
		if (cmdsize < DYLD_INFO_CMD_SIZE)
			return bad(err, ps, off, "truncated LC_DYLD_INFO");
		ps->trie_off = macho_rd32(c + DYLD_INFO_OFF_EXPORT);
		ps->trie_size = macho_rd32(c + DYLD_INFO_OFF_EXPORT + 4);
		ps->have_trie = ps->trie_size > 0;
		return 0;
	case LC_DYLD_EXPORTS_TRIE:
		if (cmdsize < LINKEDIT_CMD_SIZE)
			return bad(err, ps, off, "truncated LC_DYLD_EXPORTS_TRIE");
		ps->trie_off = macho_rd32(c + 8);
		ps->trie_size = macho_rd32(c + 12);
		ps->have_trie = ps->trie_size > 0;
		return 0;
	}
	return 0;
}

static int read_commands(struct parse *ps, struct sw_object *obj, struct sw_error *err)
{
	size_t hsize = ps->is64 ? MH_SIZE_64 : MH_SIZE_32;
	uint32_t ncmds = macho_rd32(ps->d + MH_OFF_NCMDS);
	uint32_t sizeofcmds = macho_rd32(ps->d + MH_OFF_SIZEOFCMDS);
	size_t end, pos = hsize;

	if (sizeofcmds > ps->size - hsize)
		return bad(err, ps, MH_OFF_SIZEOFCMDS,
			   "load commands overrun the file: sizeofcmds");
	end = hsize + sizeofcmds;
	for (uint32_t i = 0; i < ncmds; i++) {
		uint32_t cmd, cmdsize;
		int r;

		if (end - pos < LC_HEADER_SIZE)
			return bad(err, ps, pos, "truncated load command");
		cmd = macho_rd32(ps->d + pos);
		cmdsize = macho_rd32(ps->d + pos + 4);
		if (cmdsize < LC_HEADER_SIZE || cmdsize > end - pos)
			return bad(err, ps, pos, "bad load command size");
		r = read_command(ps, obj, pos, cmd, cmdsize, err);
		if (r < 0)
			return r;
		pos += cmdsize;
	}
	return 0;
}

/* A symbol being collected, with what decides among names at one address. */
struct cand {
	struct sw_symbol sym;
	int rank;
	size_t seq;
};

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->sym.addr != y->sym.addr)
		return x->sym.addr < y->sym.addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank > y->rank ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Global names first, then locals, then assembler temporaries ("ltmp0", "l_..."). */
static int rank_of(const char *name, unsigned flags)
{
	if (name[0] == 'l' || name[0] == 'L')
		return 0;
	return flags & SW_SYMBOL_GLOBAL ? 3 : 2;
}

static bool in_text(const struct parse *ps, uint64_t addr)
{
	for (unsigned i = 0; i < ps->nsects && i < MAX_SECTS; i++)
		if (ps->sects[i].text && addr >= ps->sects[i].addr &&
		    addr - ps->sects[i].addr < ps->sects[i].size)
			return true;
	return false;
}

static int read_symtab(const struct parse *ps, struct cand **ret, size_t *ret_n,
		       struct sw_error *err)
{
	size_t esize = ps->is64 ? NLIST64_SIZE : NLIST32_SIZE;
	struct cand *c;
	size_t n = 0;

	*ret = NULL;
	*ret_n = 0;
	if (!ps->have_symtab || ps->nsyms == 0)
		return 0;
	if (ps->symoff > ps->size || (ps->size - ps->symoff) / esize < ps->nsyms)
		return bad(err, ps, ps->symoff, "symbol table out of the file");
	if (ps->stroff > ps->size || ps->strsize > ps->size - ps->stroff)
		return bad(err, ps, ps->stroff, "string table out of the file");
	c = calloc(ps->nsyms, sizeof(*c));
	if (!c)
		return sw_error_set(err, -ENOMEM, "out of memory for %u symbols", ps->nsyms);
	for (uint32_t i = 0; i < ps->nsyms; i++) {
		const uint8_t *e = ps->d + ps->symoff + (size_t)i * esize;
		uint32_t strx = macho_rd32(e);
		uint8_t type = e[4], sect = e[5];
		uint64_t value = ps->is64 ? macho_rd64(e + 8) : macho_rd32(e + 8);
		const char *name;

		if ((type & N_STAB) || (type & N_TYPE) != N_SECT || sect == 0 ||
		    sect > ps->nsects || !ps->sects[sect - 1].text)
			continue;
		/* __mh_execute_header claims section 1 but sits at the image base. */
		if (value < ps->sects[sect - 1].addr ||
		    value - ps->sects[sect - 1].addr >= ps->sects[sect - 1].size)
			continue;
		if (strx == 0 || strx >= ps->strsize ||
		    !memchr(ps->d + ps->stroff + strx, 0, ps->strsize - strx))
			continue;
		name = (const char *)ps->d + ps->stroff + strx;
		if (!*name)
			continue;
		c[n].sym.addr = value;
		c[n].sym.name = name;
		c[n].sym.flags = SW_SYMBOL_FUNCTION | (type & N_EXT ? SW_SYMBOL_GLOBAL : 0);
		c[n].rank = rank_of(name, c[n].sym.flags);
		c[n].seq = n;
		n++;
	}
	*ret = c;
	*ret_n = n;
	return 0;
}

static int read_uleb(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (*p < end) {
		uint8_t b = *(*p)++;

		if (shift >= 64 || (shift == 63 && (b & 0x7e)))
			return -EOVERFLOW;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return -EINVAL;
}

static int read_function_starts(const struct parse *ps, struct sw_object *obj, struct priv *pv,
				struct sw_error *err)
{
	const uint8_t *p, *end;
	uint64_t addr = obj->text_vmaddr, delta;
	size_t n = 0;

	if (!ps->have_fs || ps->fs_size == 0)
		return 0;
	if (ps->fs_off > ps->size || ps->fs_size > ps->size - ps->fs_off)
		return bad(err, ps, ps->fs_off, "function starts out of the file");
	/* Each start takes at least one byte, which bounds the array. */
	pv->starts = malloc((size_t)ps->fs_size * sizeof(uint64_t));
	if (!pv->starts)
		return sw_error_set(err, -ENOMEM, "out of memory for function starts");
	p = ps->d + ps->fs_off;
	end = p + ps->fs_size;
	while (p < end) {
		const uint8_t *at = p;

		if (read_uleb(&p, end, &delta) < 0)
			return bad(err, ps, (uint64_t)(at - ps->d), "bad function start delta");
		if (delta == 0)
			break;
		if (addr + delta < addr)
			return bad(err, ps, (uint64_t)(at - ps->d), "function start overflows");
		addr += delta;
		/* 32-bit ARM marks Thumb functions with bit 0. */
		pv->starts[n++] = ps->is64 ? addr : addr & ~(uint64_t)1;
	}
	obj->function_starts = pv->starts;
	obj->nfunction_starts = n;
	return 0;
}

static bool has_symbol_at(const struct cand *c, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c[mid].sym.addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && c[lo].sym.addr == addr;
}

/*
 * Adds the export trie's names at addresses where the symbol table has
 * none (stripped images keep their exported names only in the trie).
 * c[0..*n) is sorted; new candidates go after it.
 */
static int add_exports(const struct parse *ps, struct sw_object *obj, struct priv *pv,
		       struct cand **c, size_t *n, struct sw_error *err)
{
	struct sw_macho_export *ex = NULL;
	size_t nex = 0, nsym = *n, total;
	struct sw_buf names;
	struct cand *grown;
	int r;

	if (!ps->have_trie)
		return 0;
	if (ps->trie_off > ps->size || ps->trie_size > ps->size - ps->trie_off)
		return bad(err, ps, ps->trie_off, "export trie out of the file");
	sw_buf_init(&names, MAX_NAME_POOL);
	r = sw_macho_trie_walk(ps->d + ps->trie_off, ps->trie_size, ps->base + ps->trie_off, &ex,
			       &nex, &names, err);
	if (r < 0)
		goto out;
	grown = realloc(*c, (nsym + nex + 1) * sizeof(**c));
	if (!grown) {
		r = sw_error_set(err, -ENOMEM, "out of memory for %zu exports", nex);
		goto out;
	}
	*c = grown;
	pv->names = sw_buf_detach(&names, NULL);
	total = nsym;
	for (size_t i = 0; i < nex; i++) {
		uint64_t addr = obj->text_vmaddr + ex[i].offset;

		if (ex[i].kind != EXPORT_SYMBOL_FLAGS_KIND_REGULAR || addr < obj->text_vmaddr ||
		    !in_text(ps, addr) || has_symbol_at(*c, nsym, addr))
			continue;
		/* an export has no size: the next symbol or function start bounds it */
		grown[total].sym = (struct sw_symbol){
		    .addr = addr,
		    .name = pv->names + ex[i].name,
		    .flags = SW_SYMBOL_GLOBAL | SW_SYMBOL_FUNCTION | SW_SYMBOL_FROM_EXPORTS,
		};
		grown[total].rank = 1;
		grown[total].seq = total;
		total++;
	}
	*n = total;
	r = 0;
out:
	free(ex);
	sw_buf_finish(&names);
	return r;
}

/* The symbol table's name for indirect symbol i, or NULL (local, absolute, bad). */
static const char *indirect_name(const struct parse *ps, uint32_t i)
{
	size_t esize = ps->is64 ? NLIST64_SIZE : NLIST32_SIZE;
	uint32_t sym, strx;

	if (i >= ps->nindirect || ps->indirect_off > ps->size ||
	    (ps->size - ps->indirect_off) / 4 < ps->nindirect)
		return NULL;
	sym = macho_rd32(ps->d + ps->indirect_off + (size_t)i * 4);
	if ((sym & (INDIRECT_SYMBOL_LOCAL | INDIRECT_SYMBOL_ABS)) || !ps->have_symtab ||
	    sym >= ps->nsyms || ps->symoff > ps->size ||
	    (ps->size - ps->symoff) / esize < ps->nsyms || ps->stroff > ps->size ||
	    ps->strsize > ps->size - ps->stroff)
		return NULL;
	strx = macho_rd32(ps->d + ps->symoff + (size_t)sym * esize);
	if (strx == 0 || strx >= ps->strsize ||
	    !memchr(ps->d + ps->stroff + strx, 0, ps->strsize - strx))
		return NULL;
	return (const char *)ps->d + ps->stroff + strx;
}

/*
 * Names the entries of __stubs by what they jump to, from the indirect
 * symbol table ("_puts stub", shown "puts stub"), and __stub_helper, the
 * lazy binder's code, as "stub helper": without them an address there took
 * the name of the function before it.  New candidates go after c[0..*n).
 */
static int add_stubs(const struct parse *ps, struct priv *pv, struct cand **c, size_t *n,
		     struct sw_error *err)
{
	struct sw_buf names;
	size_t count = ps->helper.size ? 1 : 0, total = *n;
	size_t *at;
	struct cand *grown;

	for (unsigned k = 0; k < ps->nstubs; k++)
		if (ps->stubs[k].stub_size)
			count += ps->stubs[k].size / ps->stubs[k].stub_size;
	if (count == 0 || count > MAX_STUBS)
		return 0;
	grown = realloc(*c, (*n + count) * sizeof(**c));
	at = calloc(count, sizeof(*at));
	if (grown)
		*c = grown;
	if (!grown || !at) {
		free(at);
		return sw_error_set(err, -ENOMEM, "out of memory for %zu stubs", count);
	}
	sw_buf_init(&names, MAX_NAME_POOL);
	for (unsigned k = 0; k < ps->nstubs; k++) {
		const struct stubs *st = &ps->stubs[k];

		for (uint64_t i = 0; st->stub_size && i < st->size / st->stub_size; i++) {
			const char *target = indirect_name(ps, st->first + (uint32_t)i);

			at[total - *n] = names.len;
			if (sw_buf_printf(&names, "%s stub%c", target ? target : "_?", 0) < 0)
				break;
			grown[total].sym = (struct sw_symbol){
			    st->addr + i * st->stub_size, st->stub_size, NULL, SW_SYMBOL_FUNCTION};
			grown[total].rank = 3;
			grown[total].seq = total;
			total++;
		}
	}
	if (ps->helper.size) {
		at[total - *n] = names.len;
		if (sw_buf_printf(&names, "_stub helper%c", 0) >= 0) {
			grown[total].sym = (struct sw_symbol){ps->helper.addr, ps->helper.size,
							      NULL, SW_SYMBOL_FUNCTION};
			grown[total].rank = 3;
			grown[total].seq = total;
			total++;
		}
	}
	pv->stub_names = sw_buf_detach(&names, NULL);
	for (size_t i = *n; i < total; i++)
		grown[i].sym.name = pv->stub_names ? pv->stub_names + at[i - *n] : "stub";
	free(at);
	*n = total;
	return 0;
}

/* Sorts, keeps the best name per address, and hands the result to obj. */
static int finish_symbols(struct sw_object *obj, struct priv *pv, struct cand *c, size_t n,
			  struct sw_error *err)
{
	size_t out = 0;

	if (n > 1)
		qsort(c, n, sizeof(*c), cand_cmp);
	pv->symbols = calloc(n ? n : 1, sizeof(*pv->symbols));
	if (!pv->symbols)
		return sw_error_set(err, -ENOMEM, "out of memory for %zu symbols", n);
	for (size_t i = 0; i < n; i++)
		if (out == 0 || pv->symbols[out - 1].addr != c[i].sym.addr)
			pv->symbols[out++] = c[i].sym;
	obj->symbols = pv->symbols;
	obj->nsymbols = out;
	return 0;
}

static int load_symbols(const struct parse *ps, struct sw_object *obj, struct priv *pv,
			struct sw_error *err)
{
	struct cand *c = NULL;
	size_t n = 0;
	int r;

	r = read_symtab(ps, &c, &n, err);
	if (r < 0)
		return r;
	if (n > 1)
		qsort(c, n, sizeof(*c), cand_cmp);
	r = add_exports(ps, obj, pv, &c, &n, err);
	if (r >= 0)
		r = add_stubs(ps, pv, &c, &n, err);
	if (r >= 0)
		r = finish_symbols(obj, pv, c, n, err);
	free(c);
	return r;
}

/* struct sw_object.load_symbols, for an object opened with defer_symbols. */
static int load_deferred(struct sw_object *obj, struct sw_error *err)
{
	struct priv *pv = obj->priv;
	struct parse *ps = pv->deferred;
	int r = read_function_starts(ps, obj, pv, err);
	if (r >= 0)
		r = load_symbols(ps, obj, pv, err);
	pv->deferred = NULL;
	free(ps);
	return r;
}

static int load_thin(struct sw_object *obj, const uint8_t *d, size_t size, uint64_t base,
		     struct sw_error *err)
{
	struct parse *ps;
	struct priv *pv;
	int r;

	ps = calloc(1, sizeof(*ps));
	pv = calloc(1, sizeof(*pv));
	if (!ps || !pv) {
		free(ps);
		free(pv);
		return sw_error_set(err, -ENOMEM, "out of memory");
	}
	ps->d = d;
	ps->size = size;
	ps->base = base;
	ps->is64 = macho_rd32(d) == MH_MAGIC_64;
	obj->priv = pv;
	obj->release = release;
	obj->dwarf.addr_size = ps->is64 ? 8 : 4;
	obj->dwarf.big_endian = false;
	r = read_commands(ps, obj, err);
	if (r >= 0 && obj->defer_symbols) {
		pv->deferred = ps;
		obj->load_symbols = load_deferred;
		ps = NULL;
	} else if (r >= 0) {
		r = read_function_starts(ps, obj, pv, err);
		if (r >= 0)
			r = load_symbols(ps, obj, pv, err);
	}
	free(ps);
	if (r < 0) {
		release(obj);
		obj->release = NULL;
		return r;
	}
	obj->has_debug_info = obj->dwarf.info.size > 0;
	return 0;
}

int sw_macho_load(struct sw_object *obj, const uint8_t *data, size_t size, const char *arch,
		  struct sw_error *err)
{
	struct sw_macho_slice slices[SW_MACHO_MAX_SLICES];
	const struct sw_macho_slice *s;
	size_t n;
	int r, i;

	r = sw_macho_slices(data, size, slices, SW_MACHO_MAX_SLICES, &n, err);
	if (r < 0)
		return r;
	i = sw_macho_pick_slice(slices, n, arch, err);
	if (i < 0)
		return i;
	s = &slices[i];
	obj->format = SW_OBJECT_MACHO;
	memcpy(obj->arch, s->arch, sizeof(obj->arch));
	return load_thin(obj, data + s->offset, (size_t)s->size, s->offset, err);
}
