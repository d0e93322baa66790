/*
 * ELF reader: 32- and 64-bit, either byte order.  Fills the neutral
 * sw_object with the architecture, the GNU build-id, the first executable
 * segment, the function symbols of .symtab (or .dynsym), the function starts
 * of .eh_frame, the .gnu_debuglink name and the DWARF sections (inflated
 * when compressed).  Every offset, size and count read from the file is
 * checked against the mapping before use.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf-private.h"

#define SHT_SYMTAB     2
#define SHT_STRTAB     3
#define SHT_NOTE       7
#define SHT_NOBITS     8
#define SHT_DYNSYM     11
#define SHF_EXECINSTR  0x4
#define SHF_COMPRESSED 0x800
#define PT_LOAD        1
#define PT_INTERP      3
#define PT_NOTE        4
#define PF_X           1
#define STT_NOTYPE     0
#define STT_FUNC       2
#define STT_GNU_IFUNC  10
#define STB_LOCAL      0
#define SHN_UNDEF      0
#define SHN_LORESERVE  0xff00
#define SHN_XINDEX     0xffff
#define EM_ARM         40

#define MAX_SECTIONS (1u << 20)
#define MAX_SYMBOLS  (1u << 26)

/* A word of the file's class: 4 bytes in ELF32, 8 in ELF64. */
static uint64_t word(const struct elf_file *f, const uint8_t *p)
{
	return f->is64 ? sw_elf_u64(f, p) : sw_elf_u32(f, p);
}

static bool in_file(const struct elf_file *f, uint64_t off, uint64_t len)
{
	return off <= f->size && len <= f->size - off;
}

int sw_elf_section_data(const struct elf_file *f, const struct elf_shdr *s, const uint8_t **ret,
			struct sw_error *err)
{
	if (s->type == SHT_NOBITS || !in_file(f, s->offset, s->size))
		return sw_error_set(err, -EINVAL,
				    "section data at offset 0x%llx size 0x%llx is outside the file",
				    (unsigned long long)s->offset, (unsigned long long)s->size);
	*ret = f->data + s->offset;
	return 0;
}

static const char *arch_name(uint16_t machine, bool is64)
{
	switch (machine) {
	case 3:
		return "i386";
	case 62:
		return "x86_64";
	case 183:
		return "aarch64";
	case EM_ARM:
		return "arm";
	case 8:
		return is64 ? "mips64" : "mips";
	case 20:
		return "ppc";
	case 21:
		return "ppc64";
	case 22:
		return "s390x";
	case 243:
		return is64 ? "riscv64" : "riscv32";
	default:
		return "unknown";
	}
}

static void read_shdr(const struct elf_file *f, const uint8_t *p, struct elf_shdr *s)
{
	s->name = sw_elf_u32(f, p);
	s->type = sw_elf_u32(f, p + 4);
	if (f->is64) {
		s->flags = sw_elf_u64(f, p + 8);
		s->addr = sw_elf_u64(f, p + 16);
		s->offset = sw_elf_u64(f, p + 24);
		s->size = sw_elf_u64(f, p + 32);
		s->link = sw_elf_u32(f, p + 40);
		s->info = sw_elf_u32(f, p + 44);
		s->entsize = sw_elf_u64(f, p + 56);
	} else {
		s->flags = sw_elf_u32(f, p + 8);
		s->addr = sw_elf_u32(f, p + 12);
		s->offset = sw_elf_u32(f, p + 16);
		s->size = sw_elf_u32(f, p + 20);
		s->link = sw_elf_u32(f, p + 24);
		s->info = sw_elf_u32(f, p + 28);
		s->entsize = sw_elf_u32(f, p + 36);
	}
}

static int load_sections(struct elf_file *f, struct sw_error *err)
{
	const uint8_t *h = f->data;
	uint64_t shoff = word(f, h + (f->is64 ? 40 : 32));
	uint16_t shentsize = sw_elf_u16(f, h + (f->is64 ? 58 : 46));
	uint64_t shnum = sw_elf_u16(f, h + (f->is64 ? 60 : 48));
	uint32_t shstrndx = sw_elf_u16(f, h + (f->is64 ? 62 : 50));
	size_t want = f->is64 ? 64 : 40;

	if (shoff == 0)
		return 0; /* no section headers: nothing but segments */
	if (shentsize < want || !in_file(f, shoff, shentsize))
		return sw_error_set(err, -EINVAL, "bad section header table at offset 0x%llx",
				    (unsigned long long)shoff);
	struct elf_shdr first;
	read_shdr(f, f->data + shoff, &first);
	if (shnum == 0)
		shnum = first.size; /* extended numbering */
	if (shstrndx == SHN_XINDEX)
		shstrndx = first.link;
	if (shnum > MAX_SECTIONS || !in_file(f, shoff, shnum * shentsize))
		return sw_error_set(
		    err, -EINVAL,
		    "section header table at offset 0x%llx (%llu entries) is truncated",
		    (unsigned long long)shoff, (unsigned long long)shnum);
	f->sh = calloc(shnum ? shnum : 1, sizeof(*f->sh));
	if (!f->sh)
		return sw_error_set(err, -ENOMEM, "out of memory");
	f->nsh = shnum;
	for (size_t i = 0; i < shnum; i++)
		read_shdr(f, f->data + shoff + i * shentsize, &f->sh[i]);
	if (shstrndx < shnum && f->sh[shstrndx].type != SHT_NOBITS &&
	    in_file(f, f->sh[shstrndx].offset, f->sh[shstrndx].size) && f->sh[shstrndx].size) {
		f->shstr = (const char *)f->data + f->sh[shstrndx].offset;
		f->shstr_size = f->sh[shstrndx].size;
	}
	return 0;
}

static const char *section_name(const struct elf_file *f, const struct elf_shdr *s)
{
	if (!f->shstr || s->name >= f->shstr_size)
		return "";
	const char *n = f->shstr + s->name;
	if (!memchr(n, '\0', f->shstr_size - s->name))
		return "";
	return n;
}

/* Scans a note area for NT_GNU_BUILD_ID. */
static void find_build_id(const struct elf_file *f, const uint8_t *p, uint64_t size,
			  struct sw_object *obj)
{
	uint64_t off = 0;
	while (size - off >= 12) {
		uint32_t namesz = sw_elf_u32(f, p + off), descsz = sw_elf_u32(f, p + off + 4);
		uint32_t type = sw_elf_u32(f, p + off + 8);
		uint64_t name_off = off + 12;
		uint64_t desc_off = name_off + (((uint64_t)namesz + 3) & ~(uint64_t)3);
		uint64_t next = desc_off + (((uint64_t)descsz + 3) & ~(uint64_t)3);
		if (desc_off > size || descsz > size - desc_off)
			return;
		if (type == 3 && namesz == 4 && memcmp(p + name_off, "GNU", 4) == 0 && descsz > 0 &&
		    descsz <= sizeof(obj->id)) {
			memcpy(obj->id, p + desc_off, descsz);
			obj->id_len = descsz;
			return;
		}
		if (next <= off || next > size)
			return;
		off = next;
	}
}

static int load_segments(const struct elf_file *f, struct sw_object *obj, struct sw_error *err)
{
	const uint8_t *h = f->data;
	uint64_t phoff = word(f, h + (f->is64 ? 32 : 28));
	uint16_t phentsize = sw_elf_u16(f, h + (f->is64 ? 54 : 42));
	uint16_t phnum = sw_elf_u16(f, h + (f->is64 ? 56 : 44));
	size_t want = f->is64 ? 56 : 32;
	bool have_text = false;

	if (phoff == 0 || phnum == 0)
		return 0;
	if (phentsize < want || !in_file(f, phoff, (uint64_t)phnum * phentsize))
		return sw_error_set(err, -EINVAL,
				    "program header table at offset 0x%llx is truncated",
				    (unsigned long long)phoff);
	for (unsigned i = 0; i < phnum; i++) {
		const uint8_t *p = f->data + phoff + (uint64_t)i * phentsize;
		uint32_t type = sw_elf_u32(f, p), flags;
		uint64_t offset, vaddr, filesz, memsz;
		if (f->is64) {
			flags = sw_elf_u32(f, p + 4);
			offset = sw_elf_u64(f, p + 8);
			vaddr = sw_elf_u64(f, p + 16);
			filesz = sw_elf_u64(f, p + 32);
			memsz = sw_elf_u64(f, p + 40);
		} else {
			offset = sw_elf_u32(f, p + 4);
			vaddr = sw_elf_u32(f, p + 8);
			filesz = sw_elf_u32(f, p + 16);
			memsz = sw_elf_u32(f, p + 20);
			flags = sw_elf_u32(f, p + 24);
		}
		if (type == PT_LOAD && (flags & PF_X) && !have_text) {
			obj->text_vmaddr = vaddr;
			obj->text_size = memsz;
			have_text = true;
		}
		if (type == PT_INTERP)
			obj->interp = true;
		if (type == PT_NOTE && !obj->id_len && in_file(f, offset, filesz))
			find_build_id(f, f->data + offset, filesz, obj);
	}
	return 0;
}

/* A symbol and its index in the table, for a stable sort. */
/* Is section index shndx an executable section of the file? */
static bool exec_section(const struct elf_file *f, uint16_t shndx)
{
	return shndx != SHN_UNDEF && shndx < SHN_LORESERVE && shndx < f->nsh &&
	       (f->sh[shndx].flags & SHF_EXECINSTR);
}

/*
 * Function symbols of one symbol table: STT_FUNC and STT_GNU_IFUNC, and
 * STT_NOTYPE in executable sections (assembly), as llvm-symbolizer takes
 * them.  Of several at one address the largest (then the last in the table)
 * wins, again as llvm-symbolizer does, so that both name a function alike
 * (gcc's C1/C2 constructor aliases, for one).
 */
/*
 * 64-bit PowerPC ELFv1 function symbols point at descriptors in .opd, whose
 * first word is the code address.  Returns false when sym is not one.
 */
static bool opd_entry(const struct elf_file *f, uint16_t shndx, uint64_t value, uint64_t *ret)
{
	if (shndx >= f->nsh || !f->is64 || sw_elf_u16(f, f->data + 18) != 21)
		return false;
	const struct elf_shdr *s = &f->sh[shndx];
	if (!f->shstr || s->name >= f->shstr_size || strncmp(f->shstr + s->name, ".opd", 5) != 0)
		return false;
	if (value < s->addr || value - s->addr > s->size || s->size - (value - s->addr) < 8 ||
	    !in_file(f, s->offset, s->size) || s->type == SHT_NOBITS)
		return false;
	*ret = sw_elf_u64(f, f->data + s->offset + (value - s->addr));
	return true;
}

struct symtab {
	const struct elf_file *f;
	const uint8_t *data, *str;
	size_t entsize;
	uint64_t str_size;
	bool str_ends; /* the string table ends with a NUL: every name in it ends */
	bool arm;
};

/*
 * Symbol i of the table as a function symbol; false when it is not one.
 * known: it was read as one before, so its name need not be checked again
 * (a random read of the string table per symbol).
 */
static bool read_symbol(const struct symtab *t, uint64_t i, bool known, struct sw_symbol *ret)
{
	const struct elf_file *f = t->f;
	const uint8_t *p = t->data + i * t->entsize;
	uint32_t name = sw_elf_u32(f, p);
	uint8_t info = f->is64 ? p[4] : p[12];
	uint16_t shndx = sw_elf_u16(f, p + (f->is64 ? 6 : 14));
	uint64_t value = f->is64 ? sw_elf_u64(f, p + 8) : sw_elf_u32(f, p + 4);
	uint64_t size = f->is64 ? sw_elf_u64(f, p + 16) : sw_elf_u32(f, p + 8);
	unsigned type = info & 0xf, bind = info >> 4;
	if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
		return false;
	if (type == STT_FUNC && !exec_section(f, shndx) && opd_entry(f, shndx, value, &value))
		shndx = 0; /* resolved through .opd */
	else if (!exec_section(f, shndx))
		return false;
	const char *nm = (const char *)t->str + name;
	if (!known && name >= t->str_size)
		return false;
	if (!known && (!nm[0] || (!t->str_ends && !memchr(nm, '\0', t->str_size - name))))
		return false;
	if (!known && type == STT_NOTYPE && nm[0] == '$')
		return false; /* ARM/AArch64 mapping symbols */
	if (t->arm)
		value &= ~(uint64_t)1;
	*ret = (struct sw_symbol){
	    .addr = value,
	    .size = size,
	    .name = nm,
	    .flags = (bind != STB_LOCAL ? SW_SYMBOL_GLOBAL : 0) |
		     (type != STT_NOTYPE ? SW_SYMBOL_FUNCTION : 0),
	};
	return true;
}

/* Keeps the largest of the symbols at one address, then the last in the table. */
static size_t keep_best(const struct symtab *t, const uint32_t *order, size_t k,
			struct sw_symbol *out)
{
	size_t j = 0;
	for (size_t i = 0; i < k;) {
		struct sw_symbol best, sym;
		read_symbol(t, order[i], true, &best);
		for (i++; i < k && read_symbol(t, order[i], true, &sym) && sym.addr == best.addr;
		     i++)
			if (sym.size >= best.size)
				best = sym;
		out[j++] = best;
	}
	return j;
}

#define POSITION_BITS 26 /* MAX_SYMBOLS */

/*
 * The positions of the function symbols (address, then position), by
 * (address, position) pairs: for addresses of 2^38 and more (kernels).
 */
static int sort_wide(const struct symtab *t, uint64_t n, uint32_t *order, size_t *ret_k)
{
	struct sw_sort_key *key = malloc((n ? n : 1) * sizeof(*key));
	if (!key)
		return -ENOMEM;
	struct sw_symbol sym;
	size_t k = 0;
	for (uint64_t i = 1; i < n; i++)
		if (read_symbol(t, i, false, &sym))
			key[k++] = (struct sw_sort_key){sym.addr, (size_t)i};
	int r = sw_object_sort_keys(key, k);
	for (size_t i = 0; r == 0 && i < k; i++)
		order[i] = (uint32_t)key[i].index;
	free(key);
	*ret_k = k;
	return r;
}

/*
 * The table's function symbols sorted by address, one per address: the
 * largest, then the last in the table, as llvm-symbolizer keeps.  Only
 * their positions in the table are sorted, packed below the address in one
 * 64-bit key, by a stable sort on the address bits, and the kept symbols
 * are read again.  Small keys matter: fresh pages are much of the cost of
 * opening a binary.
 */
static struct sw_symbol *keep_symbols(const struct symtab *t, uint64_t n, size_t *ret_n)
{
	uint64_t *key = malloc((n ? n : 1) * sizeof(*key));
	/* positions overwrite the keys they were read from, never one ahead */
	uint32_t *order = (uint32_t *)key;
	size_t k = 0;
	bool packed = true;
	struct sw_symbol sym;
	for (uint64_t i = 1; key && packed && i < n; i++) {
		if (!read_symbol(t, i, false, &sym))
			continue;
		packed = sym.addr >> (64 - POSITION_BITS) == 0;
		key[k++] = sym.addr << POSITION_BITS | i;
	}
	int r = key ? 0 : -ENOMEM;
	if (r == 0 && packed) {
		/* the positions rise already: sorting by address alone keeps ties in table order */
		r = sw_object_sort_u64_high(key, k, POSITION_BITS);
		for (size_t i = 0; r == 0 && i < k; i++)
			order[i] = (uint32_t)(key[i] & (((uint64_t)1 << POSITION_BITS) - 1));
	} else if (r == 0) {
		r = sort_wide(t, n, order, &k);
	}
	struct sw_symbol *out = r == 0 ? malloc((k ? k : 1) * sizeof(*out)) : NULL;
	*ret_n = out ? keep_best(t, order, k, out) : 0;
	free(key);
	return out;
}

static int load_symtab(const struct elf_file *f, const struct elf_shdr *s, struct elf_priv *priv,
		       struct sw_object *obj, struct sw_error *err)
{
	struct symtab t = {.f = f, .entsize = f->is64 ? 24 : 16};
	if (s->link >= f->nsh)
		return sw_error_set(err, -EINVAL, "symbol table names bad string table %u",
				    s->link);
	const struct elf_shdr *ss = &f->sh[s->link];
	int r = sw_elf_section_data(f, s, &t.data, err);
	if (r >= 0)
		r = sw_elf_section_data(f, ss, &t.str, err);
	if (r < 0)
		return r;
	t.str_size = ss->size;
	t.str_ends = ss->size && t.str[ss->size - 1] == '\0';
	t.arm = sw_elf_u16(f, f->data + 18) == EM_ARM;
	uint64_t n = s->size / t.entsize;
	if (n > MAX_SYMBOLS)
		return sw_error_set(err, -E2BIG, "symbol table at offset 0x%llx is too large",
				    (unsigned long long)s->offset);
	size_t k;
	struct sw_symbol *syms = keep_symbols(&t, n, &k);
	if (!syms)
		return sw_error_set(err, -ENOMEM, "out of memory");
	priv->symbols = syms;
	obj->symbols = syms;
	obj->nsymbols = k;
	return 0;
}

/* The slot of the section whose name, after ".debug_" or ".zdebug_", is len bytes of name. */
static struct sw_section *dwarf_slot(struct sw_dwarf_sections *d, const char *name, size_t len)
{
	static const struct {
		const char *name;
		size_t off;
	} map[] = {
	    {"info", offsetof(struct sw_dwarf_sections, info)},
	    {"abbrev", offsetof(struct sw_dwarf_sections, abbrev)},
	    {"line", offsetof(struct sw_dwarf_sections, line)},
	    {"str", offsetof(struct sw_dwarf_sections, str)},
	    {"line_str", offsetof(struct sw_dwarf_sections, line_str)},
	    {"str_offsets", offsetof(struct sw_dwarf_sections, str_offsets)},
	    {"addr", offsetof(struct sw_dwarf_sections, addr)},
	    {"ranges", offsetof(struct sw_dwarf_sections, ranges)},
	    {"rnglists", offsetof(struct sw_dwarf_sections, rnglists)},
	    {"aranges", offsetof(struct sw_dwarf_sections, aranges)},
	    {"cu_index", offsetof(struct sw_dwarf_sections, cu_index)},
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strlen(map[i].name) == len && strncmp(name, map[i].name, len) == 0)
			return (struct sw_section *)((char *)d + map[i].off);
	return NULL;
}

static int load_debug_section(const struct elf_file *f, const struct elf_shdr *s, const char *name,
			      struct elf_priv *priv, struct sw_object *obj, struct sw_error *err)
{
	bool zdebug = strncmp(name, ".zdebug_", 8) == 0;
	const char *kind = name + (zdebug ? 8 : 7);
	/*
	 * A split unit's file (.dwo) or package (.dwp) names its sections with
	 * ".dwo", and they win over the skeleton's of the same kind: an object
	 * of clang's -gsplit-dwarf=single holds both, and is only read for its
	 * split unit.
	 */
	size_t len = strlen(kind);
	bool dwo = len > 4 && strcmp(kind + len - 4, ".dwo") == 0;
	struct sw_section *slot = dwarf_slot(&obj->dwarf, kind, dwo ? len - 4 : len);
	if (!slot || (slot->size && !dwo) || s->type == SHT_NOBITS || !s->size)
		return 0;
	if (zdebug || (s->flags & SHF_COMPRESSED)) {
		int r = sw_elf_decompress(f, s, zdebug, priv, slot, err);
		if (r < 0)
			return r;
	} else {
		int r = sw_elf_section_data(f, s, &slot->data, NULL);
		if (r < 0)
			return sw_error_set(
			    err, r, "%s at offset 0x%llx size 0x%llx is outside the file", name,
			    (unsigned long long)s->offset, (unsigned long long)s->size);
		slot->size = s->size;
	}
	slot->addr = s->addr;
	return 0;
}

static void load_debuglink(const struct elf_file *f, const struct elf_shdr *s,
			   struct sw_object *obj)
{
	const uint8_t *data = NULL;
	if (sw_elf_section_data(f, s, &data, NULL) < 0 || s->size < 2)
		return;
	if (data[0] && memchr(data, '\0', s->size))
		obj->debuglink = (const char *)data;
}

static int load_named_sections(const struct elf_file *f, struct elf_priv *priv,
			       struct sw_object *obj, struct sw_error *err)
{
	const struct elf_shdr *symtab = NULL, *dynsym = NULL, *eh = NULL, *eh_hdr = NULL;
	for (size_t i = 1; i < f->nsh; i++) {
		const struct elf_shdr *s = &f->sh[i];
		const char *name = section_name(f, s);
		int r = 0;
		if (s->type == SHT_SYMTAB && !symtab)
			symtab = s;
		else if (s->type == SHT_DYNSYM && !dynsym)
			dynsym = s;
		else if (strncmp(name, ".debug_", 7) == 0 || strncmp(name, ".zdebug_", 8) == 0)
			r = load_debug_section(f, s, name, priv, obj, err);
		else if (strcmp(name, ".gnu_debuglink") == 0)
			load_debuglink(f, s, obj);
		else if (strcmp(name, ".eh_frame") == 0 && s->type != SHT_NOBITS)
			eh = s;
		else if (strcmp(name, ".eh_frame_hdr") == 0 && s->type != SHT_NOBITS)
			eh_hdr = s;
		else if (s->type == SHT_NOTE && !obj->id_len && s->type != SHT_NOBITS &&
			 in_file(f, s->offset, s->size))
			find_build_id(f, f->data + s->offset, s->size, obj);
		if (r < 0)
			return r;
	}
	priv->symtab = symtab;
	priv->dynsym = dynsym;
	priv->eh = eh;
	priv->eh_hdr = eh_hdr;
	return 0;
}

/* The symbol table, PLT entries and function starts of the sections load_named_sections() found. */
static int load_symbols(const struct elf_file *f, struct elf_priv *priv, struct sw_object *obj,
			struct sw_error *err)
{
	const struct elf_shdr *syms = priv->symtab ? priv->symtab : priv->dynsym;
	if (syms) {
		int r = load_symtab(f, syms, priv, obj, err);
		if (r < 0)
			return r;
	}
	/* PLT names are a bonus: without them an entry only lacks its name */
	if (sw_elf_plt_symbols(f, priv, obj) == -ENOMEM)
		return sw_error_set(err, -ENOMEM, "out of memory");
	/* unwind tables are a bonus: a broken one costs only function starts */
	if (priv->eh_hdr && sw_elf_eh_frame_hdr_starts(f, priv->eh_hdr, &priv->starts,
						       &obj->nfunction_starts) == 0) {
		obj->function_starts = priv->starts;
	} else if (priv->eh) {
		if (sw_elf_eh_frame_starts(f, priv->eh, &priv->starts, &obj->nfunction_starts,
					   NULL) < 0)
			obj->nfunction_starts = 0;
		obj->function_starts = priv->starts;
	}
	return 0;
}

/* struct sw_object.load_symbols, for an object opened with defer_symbols. */
static int load_deferred(struct sw_object *obj, struct sw_error *err)
{
	struct elf_priv *priv = obj->priv;
	int r = load_symbols(&priv->file, priv, obj, err);
	free(priv->file.sh);
	priv->file.sh = NULL;
	priv->symtab = priv->dynsym = priv->eh = priv->eh_hdr = NULL;
	return r;
}

static void elf_release(struct sw_object *obj)
{
	struct elf_priv *priv = obj->priv;
	if (!priv)
		return;
	for (size_t i = 0; i < priv->ndecompressed; i++)
		free(priv->decompressed[i]);
	free(priv->symbols);
	free(priv->starts);
	free(priv->plt_names);
	free(priv->file.sh);
	free(priv);
	obj->priv = NULL;
}

int sw_elf_load(struct sw_object *obj, const uint8_t *data, size_t size, struct sw_error *err)
{
	if (size < 52 || memcmp(data, "\177ELF", 4) != 0)
		return sw_error_set(err, -EINVAL, "truncated ELF header at offset 0");
	if ((data[4] != 1 && data[4] != 2) || (data[5] != 1 && data[5] != 2))
		return sw_error_set(err, -EINVAL, "bad ELF class %u or byte order %u at offset 4",
				    data[4], data[5]);
	struct elf_file f = {.data = data, .size = size, .is64 = data[4] == 2, .be = data[5] == 2};
	if (f.is64 && size < 64)
		return sw_error_set(err, -EINVAL, "truncated ELF header at offset 0");
	struct elf_priv *priv = calloc(1, sizeof(*priv));
	if (!priv)
		return sw_error_set(err, -ENOMEM, "out of memory");
	obj->priv = priv;
	obj->release = elf_release;
	obj->format = SW_OBJECT_ELF;
	uint16_t machine = sw_elf_u16(&f, data + 18);
	snprintf(obj->arch, sizeof(obj->arch), "%s", arch_name(machine, f.is64));
	obj->dwarf.big_endian = f.be;
	obj->dwarf.addr_size = f.is64 ? 8 : 4;
	int r = load_sections(&f, err);
	if (r >= 0)
		r = load_segments(&f, obj, err);
	if (r >= 0)
		r = load_named_sections(&f, priv, obj, err);
	if (r >= 0 && obj->defer_symbols) {
		priv->file = f; /* the section headers now belong to priv */
		obj->load_symbols = load_deferred;
		f.sh = NULL;
	} else if (r >= 0) {
		r = load_symbols(&f, priv, obj, err);
		priv->symtab = priv->dynsym = priv->eh = priv->eh_hdr = NULL; /* in f.sh */
	}
	free(f.sh);
	if (r < 0)
		return r;
	obj->has_debug_info = obj->dwarf.info.size > 0;
	return 0;
}
