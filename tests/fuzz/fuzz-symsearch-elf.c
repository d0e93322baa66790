/*
 * libFuzzer target for the ELF peek the symbol index uses (build-id note,
 * .gnu_debuglink, code and DWARF presence), fed through a memfd since the
 * peek reads with pread.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "symbols/symsearch-private.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct sw_symsearch_elf out;

	if (fd < 0)
		fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	if (sw_symsearch_elf_peek(fd, size, &out) == 0) {
		if (out.id_len > sizeof(out.id) || strlen(out.debuglink) >= sizeof(out.debuglink))
			__builtin_trap();
	}
	return 0;
}
