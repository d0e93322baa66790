/*
 * The loaded images on Linux, from dl_iterate_phdr(): each object's load
 * bias, executable segments, GNU build-id note and .eh_frame_hdr.  Called
 * only by the watchdog while no thread is held (dl_iterate_phdr takes the
 * loader's lock).
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "../platform.h"
#include "wire/wire.h"

static char exe_path[4096];
static char interp[4096]; /* the main program's PT_INTERP: the dynamic loader */

static void find_build_id(const struct dl_phdr_info *info, const ElfW(Phdr) * ph,
			  struct swa_plat_image *im)
{
	const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
	const uint8_t *end = p + ph->p_memsz;
	while (p + sizeof(ElfW(Nhdr)) <= end) {
		const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
		size_t name = (nh->n_namesz + 3) & ~3u, desc = (nh->n_descsz + 3) & ~3u;
		const uint8_t *n = p + sizeof(*nh);
		if (n + name + desc > end)
			return;
		if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
		    memcmp(n, "GNU", 4) == 0 && nh->n_descsz <= sizeof(im->id)) {
			im->id_kind = SW_ID_BUILD_ID;
			im->id_len = nh->n_descsz;
			memcpy(im->id, n + name, nh->n_descsz);
			return;
		}
		p = n + name + desc;
	}
}

struct iter {
	swa_plat_image_fn fn;
	void *ctx;
	bool first;
};

static int each_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct iter *it = data;
	struct swa_plat_image im;
	memset(&im, 0, sizeof(im));
	im.slide = info->dlpi_addr;
	im.path = info->dlpi_name;
	if (it->first && (!im.path || !im.path[0])) {
		if (!exe_path[0]) {
			ssize_t n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);
			if (n > 0)
				exe_path[n] = '\0';
		}
		im.path = exe_path;
	}
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (it->first && ph->p_type == PT_INTERP && !interp[0] &&
		    ph->p_memsz < sizeof(interp))
			memcpy(interp, (const void *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz);
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && !im.text_size) {
			im.text_vmaddr = ph->p_vaddr;
			im.text_size = ph->p_memsz;
		} else if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			/* code in a further segment (Node's real code is in its second) */
			if (im.nmore_text < SWA_MAX_MORE_TEXT)
				im.more_text[im.nmore_text++] =
				    (struct swa_text_range){ph->p_vaddr, ph->p_memsz};
		} else if (ph->p_type == PT_GNU_EH_FRAME) {
			im.unwind_kind = SWA_UNWIND_KIND_EH_FRAME_HDR;
			im.unwind_info = info->dlpi_addr + ph->p_vaddr;
		} else if (ph->p_type == PT_NOTE && !im.id_len) {
			find_build_id(info, ph, &im);
		}
	}
	it->first = false;
	im.loader = interp[0] && im.path && strcmp(im.path, interp) == 0;
	const ElfW(Ehdr) *vdso = (const ElfW(Ehdr) *)getauxval(AT_SYSINFO_EHDR);
	im.memory_only =
	    vdso && (const void *)info->dlpi_phdr == (const char *)vdso + vdso->e_phoff;
	if (im.text_size && im.path)
		it->fn(&im, it->ctx);
	return 0;
}

/*
 * The vDSO's symbols, from its .dynsym in memory: the kernel maps the whole
 * ELF file, section headers included.
 */
int swa_plat_memory_symbol(uint64_t pc, uint64_t *ret_addr, uint64_t *ret_size, char *name,
			   size_t cap)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)getauxval(AT_SYSINFO_EHDR);
	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || !eh->e_shoff || !cap)
		return -ENOENT;
	const char *base = (const char *)eh;
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(base + eh->e_phoff);
	uint64_t bias = (uint64_t)(uintptr_t)base;
	for (unsigned i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD) {
			bias -= ph[i].p_vaddr - ph[i].p_offset;
			break;
		}
	const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(base + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum ||
		    !sh[i].sh_entsize)
			continue;
		const ElfW(Sym) *sym = (const ElfW(Sym) *)(base + sh[i].sh_offset);
		const char *str = base + sh[sh[i].sh_link].sh_offset;
		size_t n = sh[i].sh_size / sh[i].sh_entsize, strsz = sh[sh[i].sh_link].sh_size;
		for (size_t k = 0; k < n; k++) {
			uint64_t lo = bias + sym[k].st_value;
			if (ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC || sym[k].st_name >= strsz ||
			    pc < lo || pc - lo >= (sym[k].st_size ? sym[k].st_size : 1))
				continue;
			size_t len = strnlen(str + sym[k].st_name, strsz - sym[k].st_name);
			if (len >= cap)
				len = cap - 1;
			memcpy(name, str + sym[k].st_name, len);
			name[len] = '\0';
			*ret_addr = lo;
			*ret_size = sym[k].st_size;
			return 0;
		}
	}
	return -ENOENT;
}

int swa_plat_images(swa_plat_image_fn fn, void *ctx)
{
	struct iter it = {.fn = fn, .ctx = ctx, .first = true};
	dl_iterate_phdr(each_object, &it);
	return 0;
}

static int counters(struct dl_phdr_info *info, size_t size, void *data)
{
	uint64_t *gen = data;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs))
		*gen = info->dlpi_adds * 0x10000ull + info->dlpi_subs;
	return 1;
}

uint64_t swa_plat_images_generation(void)
{
	uint64_t gen = 0;
	dl_iterate_phdr(counters, &gen);
	return gen;
}
