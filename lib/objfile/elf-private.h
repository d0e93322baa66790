/*
 * What the ELF reader's files share: the decoded headers and the reader's
 * private state hung on sw_object.priv.
 */
#ifndef SW_ELF_PRIVATE_H
#define SW_ELF_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"
#include "object.h"

struct elf_shdr {
	uint32_t name, type, link, info;
	uint64_t flags, addr, offset, size, entsize;
};

struct elf_file {
	const uint8_t *data;
	size_t size;
	bool is64, be;
	struct elf_shdr *sh;
	size_t nsh;
	const char *shstr; /* section name table, checked NUL-terminated at its end */
	size_t shstr_size;
};

/* The reader's own allocations, freed by the object's release hook. */
struct elf_priv {
	void *decompressed[16]; /* one per compressed debug section */
	size_t ndecompressed;
	uint64_t inflated; /* bytes of all of them, against SW_ELF_INFLATE_LIMIT() */
	struct sw_symbol *symbols;
	uint64_t *starts;
	char *plt_names; /* the names sw_elf_plt_symbols() made */
	/* symbols left for later (struct sw_object.defer_symbols): where they are */
	struct elf_file file; /* its section headers owned here */
	const struct elf_shdr *symtab, *dynsym, *eh, *eh_hdr;
};

/* Decompressed DWARF sections larger than this are refused. */
#define SW_ELF_MAX_DECOMPRESSED ((uint64_t)1 << 30)
/*
 * What all compressed sections of a file may inflate to together: 16 times
 * the file's size plus 64 MiB (real debug info compresses 3 to 10 times),
 * so a small file cannot make the reader inflate gigabytes.
 */
#define SW_ELF_INFLATE_LIMIT(file_size) ((uint64_t)(file_size)*16 + ((uint64_t)64 << 20))

/* Integers in the file's byte order (inline: every symbol and FDE reads several). */
static inline uint16_t sw_elf_u16(const struct elf_file *f, const uint8_t *p)
{
	return f->be ? (uint16_t)(p[0] << 8 | p[1]) : (uint16_t)(p[1] << 8 | p[0]);
}

static inline uint32_t sw_elf_u32(const struct elf_file *f, const uint8_t *p)
{
	if (f->be)
		return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static inline uint64_t sw_elf_u64(const struct elf_file *f, const uint8_t *p)
{
	uint64_t a = sw_elf_u32(f, p), b = sw_elf_u32(f, p + 4);
	return f->be ? a << 32 | b : b << 32 | a;
}

/* Points *ret at the section's bytes; -EINVAL when it lies outside the file. */
int sw_elf_section_data(const struct elf_file *f, const struct elf_shdr *s, const uint8_t **ret,
			struct sw_error *err);

/* Inflates a SHF_COMPRESSED or .zdebug section; the copy goes to priv. */
int sw_elf_decompress(const struct elf_file *f, const struct elf_shdr *s, bool zdebug,
		      struct elf_priv *priv, struct sw_section *ret, struct sw_error *err);

/*
 * Adds "puts@plt"-style symbols for the PLT's entries (elf-plt.c) to
 * obj->symbols, kept sorted, where the symbol table has none.
 */
int sw_elf_plt_symbols(const struct elf_file *f, struct elf_priv *priv, struct sw_object *obj);

/*
 * The function starts .eh_frame_hdr's search table lists, sorted and
 * unique: the same as the FDE scan below, at 8 bytes a function instead of
 * an FDE parsed.  -ENOENT when there is no table this reads.
 */
int sw_elf_eh_frame_hdr_starts(const struct elf_file *f, const struct elf_shdr *s, uint64_t **ret,
			       size_t *ret_n);
/* The function starts .eh_frame's FDEs give, sorted and unique. */
int sw_elf_eh_frame_starts(const struct elf_file *f, const struct elf_shdr *s, uint64_t **ret,
			   size_t *ret_n, struct sw_error *err);

#endif
