/*
 * The loaded images on Linux, from dl_iterate_phdr(): each object's load
 * bias, executable segment, GNU build-id note and .eh_frame_hdr.  Called
 * only by the watchdog while no thread is held (dl_iterate_phdr takes the
 * loader's lock).
 */
#include <elf.h>
#include <link.h>
#include <string.h>
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
		} else if (ph->p_type == PT_GNU_EH_FRAME) {
			im.unwind_kind = SWA_UNWIND_KIND_EH_FRAME_HDR;
			im.unwind_info = info->dlpi_addr + ph->p_vaddr;
		} else if (ph->p_type == PT_NOTE && !im.id_len) {
			find_build_id(info, ph, &im);
		}
	}
	it->first = false;
	im.loader = interp[0] && im.path && strcmp(im.path, interp) == 0;
	if (im.text_size && im.path)
		it->fn(&im, it->ctx);
	return 0;
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
