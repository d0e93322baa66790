/*
 * Just enough ELF for the symbol index: the GNU build-id note, the
 * .gnu_debuglink name, and whether the file holds code (.text) and DWARF
 * (.debug_info), read with pread from the section headers (or the program
 * headers' PT_NOTE when there are none).  The full reader is elf.c; this
 * peek exists so that indexing a tree of files reads a few hundred bytes
 * per file, not whole mappings.  Hostile input: every count and offset is
 * bounded.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symsearch-private.h"

#define MAX_SHDRS       65536
#define MAX_SHSTRTAB    (1u << 20)
#define MAX_NOTES       (1u << 16)
#define NT_GNU_BUILD_ID 3
#define SHT_PROGBITS    1
#define SHT_NOTE        7
#define SHT_NOBITS      8
#define PT_NOTE         4

struct elf {
	int fd;
	uint64_t size;
	bool is64, be;
};

static uint64_t rd(const struct elf *e, const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[e->be ? n - 1 - i : i] << (8 * i);
	return v;
}

/* Reads len bytes at off into a new buffer (NULL when out of the file). */
static uint8_t *fetch(const struct elf *e, uint64_t off, uint64_t len)
{
	uint8_t *b;

	if (off > e->size || len > e->size - off || len > (1u << 26))
		return NULL;
	b = malloc(len ? len : 1);
	if (b && pread(e->fd, b, len, (off_t)off) != (ssize_t)len) {
		free(b);
		return NULL;
	}
	return b;
}

static void parse_notes(const struct elf *e, const uint8_t *p, size_t len,
			struct sw_symsearch_elf *out)
{
	size_t pos = 0;

	for (unsigned i = 0; i < MAX_NOTES && len - pos >= 12; i++) {
		uint32_t namesz = (uint32_t)rd(e, p + pos, 4);
		uint32_t descsz = (uint32_t)rd(e, p + pos + 4, 4);
		uint32_t type = (uint32_t)rd(e, p + pos + 8, 4);
		size_t name_off = pos + 12, desc_off, nsz = (namesz + 3u) & ~3u,
		       dsz = (descsz + 3u) & ~3u;

		if (namesz > len || descsz > len || nsz > len - name_off)
			return;
		desc_off = name_off + nsz;
		if (descsz > len - desc_off)
			return;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(p + name_off, "GNU", 4) == 0 &&
		    descsz > 0 && descsz <= sizeof(out->id)) {
			memcpy(out->id, p + desc_off, descsz);
			out->id_len = descsz;
			return;
		}
		pos = desc_off + (dsz <= len - desc_off ? dsz : len - desc_off);
	}
}

static void note_at(const struct elf *e, uint64_t off, uint64_t len, struct sw_symsearch_elf *out)
{
	uint8_t *b = len <= (1u << 16) ? fetch(e, off, len) : NULL;

	if (b)
		parse_notes(e, b, (size_t)len, out);
	free(b);
}

static void look_at_section(const struct elf *e, const char *name, uint32_t type, uint64_t off,
			    uint64_t size, struct sw_symsearch_elf *out)
{
	if (type == SHT_NOTE && out->id_len == 0)
		note_at(e, off, size, out);
	else if (strcmp(name, ".text") == 0 && type == SHT_PROGBITS && size > 0)
		out->has_code = true;
	else if ((strcmp(name, ".debug_info") == 0 || strcmp(name, ".zdebug_info") == 0) &&
		 type != SHT_NOBITS && size > 0)
		out->has_debug = true;
	else if (strcmp(name, ".gnu_debuglink") == 0 && type != SHT_NOBITS && size > 4) {
		size_t n = size < sizeof(out->debuglink) ? (size_t)size : sizeof(out->debuglink);
		uint8_t *b = fetch(e, off, n);

		if (b && memchr(b, 0, n))
			strcpy(out->debuglink, (const char *)b);
		free(b);
	}
}

static int read_sections(const struct elf *e, const uint8_t *eh, struct sw_symsearch_elf *out)
{
	uint64_t shoff = rd(e, eh + (e->is64 ? 40 : 32), e->is64 ? 8 : 4);
	uint64_t shentsize = rd(e, eh + (e->is64 ? 58 : 46), 2);
	uint64_t shnum = rd(e, eh + (e->is64 ? 60 : 48), 2);
	uint64_t shstrndx = rd(e, eh + (e->is64 ? 62 : 50), 2);
	size_t min = e->is64 ? 64 : 40;
	uint8_t *sh = NULL, *strs = NULL;
	uint64_t str_size = 0;

	if (shoff == 0 || shentsize < min)
		return 0;
	if (shnum == 0 || shstrndx == 0xffff) {
		uint8_t *s0 = fetch(e, shoff, min);

		if (!s0)
			return 0;
		if (shnum == 0)
			shnum = rd(e, s0 + (e->is64 ? 32 : 20), e->is64 ? 8 : 4);
		if (shstrndx == 0xffff)
			shstrndx = rd(e, s0 + (e->is64 ? 40 : 24), 4);
		free(s0);
	}
	if (shnum == 0 || shnum > MAX_SHDRS || shstrndx >= shnum)
		return 0;
	sh = fetch(e, shoff, shnum * shentsize);
	if (!sh)
		return 0;
	{
		const uint8_t *s = sh + shstrndx * shentsize;

		str_size = rd(e, s + (e->is64 ? 32 : 20), e->is64 ? 8 : 4);
		if (str_size <= MAX_SHSTRTAB)
			strs = fetch(e, rd(e, s + (e->is64 ? 24 : 16), e->is64 ? 8 : 4), str_size);
	}
	for (uint64_t i = 0; strs && i < shnum; i++) {
		const uint8_t *s = sh + i * shentsize;
		uint64_t name = rd(e, s, 4);
		uint32_t type = (uint32_t)rd(e, s + 4, 4);
		uint64_t off = rd(e, s + (e->is64 ? 24 : 16), e->is64 ? 8 : 4);
		uint64_t size = rd(e, s + (e->is64 ? 32 : 20), e->is64 ? 8 : 4);

		if (name >= str_size || !memchr(strs + name, 0, str_size - name))
			continue;
		look_at_section(e, (const char *)strs + name, type, off, size, out);
	}
	free(strs);
	free(sh);
	return 1;
}

static void read_phdr_notes(const struct elf *e, const uint8_t *eh, struct sw_symsearch_elf *out)
{
	uint64_t phoff = rd(e, eh + (e->is64 ? 32 : 28), e->is64 ? 8 : 4);
	uint64_t phentsize = rd(e, eh + (e->is64 ? 54 : 42), 2);
	uint64_t phnum = rd(e, eh + (e->is64 ? 56 : 44), 2);
	uint8_t *ph;

	if (phoff == 0 || phentsize < (e->is64 ? 56u : 32u))
		return;
	ph = fetch(e, phoff, phnum * phentsize);
	for (uint64_t i = 0; ph && i < phnum && out->id_len == 0; i++) {
		const uint8_t *p = ph + i * phentsize;

		if (rd(e, p, 4) != PT_NOTE)
			continue;
		if (e->is64)
			note_at(e, rd(e, p + 8, 8), rd(e, p + 32, 8), out);
		else
			note_at(e, rd(e, p + 4, 4), rd(e, p + 16, 4), out);
	}
	free(ph);
}

int sw_symsearch_elf_peek(int fd, uint64_t file_size, struct sw_symsearch_elf *ret)
{
	struct sw_symsearch_elf out;
	struct elf e = {.fd = fd, .size = file_size};
	uint8_t eh[64];

	memset(&out, 0, sizeof(out));
	if (file_size < 52 || pread(fd, eh, sizeof(eh), 0) < 52 || memcmp(eh, "\177ELF", 4) != 0 ||
	    (eh[4] != 1 && eh[4] != 2) || (eh[5] != 1 && eh[5] != 2))
		return -EINVAL;
	e.is64 = eh[4] == 2;
	e.be = eh[5] == 2;
	if (e.is64 && file_size < 64)
		return -EINVAL;
	read_sections(&e, eh, &out);
	if (out.id_len == 0)
		read_phdr_notes(&e, eh, &out);
	*ret = out;
	return 0;
}
