/*
 * libFuzzer target: the agent's compact-unwind reader (unwind-compact.c) on
 * hostile input.  After a 9-byte prefix (the program counter's offset from
 * the image base, then the architecture), the input is the __unwind_info
 * section, placed 0x1000 bytes above the image base, and also the stack;
 * reads outside it fail, as a fault-safe read of unmapped memory would.
 * Each lookup that succeeds is stepped by its encoding.
 */
#include <errno.h>
#include <string.h>

#include "unwind-compact.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct mem {
	const uint8_t *p;
	uint64_t addr;
	size_t len;
};

static int read_mem(void *ctx, uint64_t addr, void *dst, size_t len)
{
	const struct mem *m = ctx;
	if (addr < m->addr || addr - m->addr > m->len || len > m->len - (addr - m->addr))
		return -EFAULT;
	memcpy(dst, m->p + (addr - m->addr), len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t pc_off;
	if (size < 9)
		return 0;
	memcpy(&pc_off, data, 4);
	enum swa_cu_arch arch = data[8] & 1 ? SWA_CU_ARM64 : SWA_CU_X86_64;
	struct mem m = {data + 9, 0x100001000ull, size - 9};
	struct swa_cu_reader rd = {read_mem, read_mem, &m};
	struct swa_cu_entry e;
	uint64_t base = 0x100000000ull;
	if (swa_cu_find(&rd, base, m.addr, m.len, base + pc_off, &e) < 0)
		return 0;
	if (e.start > base + pc_off || e.end <= base + pc_off)
		__builtin_trap();
	struct swa_cu_frame f = {.pc = base + pc_off,
				 .sp = m.addr + (pc_off % (m.len + 1)),
				 .fp = m.addr + 16,
				 .lr = 0x1234,
				 .leaf = data[8] & 4,
				 .has_lr = data[8] & 2};
	uint32_t fde = 0;
	int r = swa_cu_step(&rd, arch, &e, &f, &fde);
	if (r == SWA_CU_DWARF && fde > 0x00ffffff)
		__builtin_trap();
	return 0;
}
