/*
 * libFuzzer target: the agent's unwinder and call-frame-information reader
 * (unwind.c, unwind-cfi.c) on hostile input.  The input is both the
 * image's memory (.eh_frame_hdr at its start, everything it points to
 * inside it) and the stack copy; reads outside it fail, as a fault-safe read
 * of unmapped memory would.  The first 16 bytes choose the program counter
 * and the stack pointer within the input.
 */
#include <errno.h>
#include <string.h>

#include "unwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t *mem;
static size_t mem_len;
static struct swa_image image;

int swa_plat_read(uint64_t addr, void *dst, size_t len)
{
	uint64_t base = (uint64_t)(uintptr_t)mem;
	if (addr < base || addr - base > mem_len || len > mem_len - (addr - base))
		return -EFAULT;
	memcpy(dst, mem + (addr - base), len);
	return 0;
}

const struct swa_image *swa_images_find(uint64_t pc)
{
	return pc >= image.lo && pc < image.hi ? &image : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 32)
		return 0;
	uint64_t pc_off, sp_off;
	memcpy(&pc_off, data, 8);
	memcpy(&sp_off, data + 8, 8);
	mem = data + 16;
	mem_len = size - 16;
	uint64_t base = (uint64_t)(uintptr_t)mem;
	swa_mem_invalidate();
	memset(&image, 0, sizeof(image));
	image.lo = base;
	image.hi = base + mem_len;
	image.eh_hdr = base;
	swa_cfi_index(&image);

	struct swa_capture cap;
	memset(&cap, 0, sizeof(cap));
	size_t sp = (size_t)(sp_off % mem_len) & ~(size_t)7;
	cap.stack_lo = base + sp;
	cap.stack_hi = base + mem_len;
	cap.copy = (uint8_t *)(uintptr_t)(mem + sp);
	cap.copy_len = cap.copy_cap = mem_len - sp;
	cap.regs.pc = base + pc_off % mem_len;
	swa_regs_set(&cap.regs, SWA_REG_SP, cap.stack_lo);
	swa_regs_set(&cap.regs, SWA_REG_FP, cap.stack_lo + 16);
	uint64_t frames[64];
	uint32_t flags;
	uint32_t depth = swa_unwind(&cap, frames, 64, &flags);
	if (depth > 64)
		__builtin_trap();
	return 0;
}
