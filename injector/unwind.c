/*
 * The unwinder's driver: walks a capture from the leaf outwards, one frame
 * at a time, by call-frame information where the image has it for the
 * program counter (exact even in prologues and in code built without frame
 * pointers, like Debian's libc and GLib), and by the frame-pointer chain
 * where it does not.  Every frame pointer is checked against the stack's
 * bounds, alignment and strictly increasing order; the depth is capped.
 *
 * Mach-O images describe their functions with compact unwind
 * (unwind-compact.c), which may escape to __eh_frame for the CFI code.
 *
 * Stack memory comes from the copy taken while the thread was held; image
 * memory (.eh_frame_hdr, .eh_frame) through a small cache of pages read
 * fault-safely with swa_plat_read(), invalidated when the image list changes.
 */
#include <errno.h>
#include <string.h>

#include "unwind-compact.h"
#include "unwind.h"

#define CACHE_PAGES 64
#define PAGE        4096u

struct cache_page {
	uint64_t addr; /* page address + 1, 0 when empty */
	uint8_t data[PAGE];
};

static struct cache_page cache_pages[CACHE_PAGES];

void swa_mem_invalidate(void)
{
	for (size_t i = 0; i < CACHE_PAGES; i++)
		cache_pages[i].addr = 0;
	swa_cfi_invalidate();
}

static const uint8_t *cached_page(uint64_t page)
{
	size_t slot = (size_t)((page / PAGE) * 0x9e3779b97f4a7c15ull >> 58) % CACHE_PAGES;
	struct cache_page *cp = &cache_pages[slot];
	if (cp->addr != page + 1) {
		if (swa_plat_read(page, cp->data, PAGE) < 0) {
			cp->addr = 0;
			return NULL;
		}
		cp->addr = page + 1;
	}
	return cp->data;
}

int swa_mem_read(uint64_t addr, void *dst, size_t len)
{
	uint8_t *out = dst;
	while (len) {
		uint64_t page = addr & ~(uint64_t)(PAGE - 1);
		size_t off = (size_t)(addr - page);
		size_t n = PAGE - off < len ? PAGE - off : len;
		const uint8_t *data = cached_page(page);
		if (!data)
			return -EFAULT;
		memcpy(out, data + off, n);
		out += n;
		addr += n;
		len -= n;
	}
	return 0;
}

int swa_stack_read(struct swa_unwind_ctx *uc, uint64_t addr, uint64_t *ret)
{
	const struct swa_capture *cap = uc->cap;
	if (addr >= cap->stack_lo && addr + 8 <= cap->stack_lo + cap->copy_len && addr + 8 > addr) {
		memcpy(ret, cap->copy + (addr - cap->stack_lo), 8);
		return 0;
	}
	if (cap->home_len && addr >= cap->home_lo && addr + 8 <= cap->home_lo + cap->home_len &&
	    addr + 8 > addr) {
		memcpy(ret, cap->copy + cap->copy_len + (addr - cap->home_lo), 8);
		return 0;
	}
	/* beyond the copy: only inside the stack, and only when asked to */
	if (!uc->live_reads || addr < cap->stack_lo || (cap->stack_hi && addr + 8 > cap->stack_hi))
		return -EFAULT;
	return swa_plat_read(addr, ret, 8);
}

static bool in_stack(const struct swa_capture *cap, uint64_t addr)
{
	return addr >= cap->stack_lo && (!cap->stack_hi || addr < cap->stack_hi);
}

/*
 * One step by the frame-pointer chain: the frame record at fp holds the
 * caller's frame pointer and the return address.  Returns 1 on a step, 0 at
 * the end of the chain, -errno when the chain is not valid here.
 */
static int fp_step(struct swa_unwind_ctx *uc, struct swa_regs *regs, uint64_t *last_fp)
{
	if (!swa_regs_has(regs, SWA_REG_FP))
		return -ENOENT;
	int async = 0;
	uint64_t fp = swa_arch_frame_pointer(regs->r[SWA_REG_FP], &async);
	uint64_t sp = regs->r[SWA_REG_SP];
	if (fp == 0)
		return 0;
	if ((fp & 7) || fp < sp || fp <= *last_fp || !in_stack(uc->cap, fp) ||
	    !in_stack(uc->cap, fp + 15))
		return -EINVAL;
	uint64_t next_fp, ra;
	if (swa_stack_read(uc, fp, &next_fp) < 0 || swa_stack_read(uc, fp + 8, &ra) < 0)
		return -EFAULT;
	ra = swa_arch_strip(ra);
	if (ra == 0)
		return 0;
	uc->async |= async;
	struct swa_regs next = {0};
	swa_regs_set(&next, SWA_REG_FP, next_fp);
#if defined(__x86_64__)
	swa_regs_set(&next, SWA_REG_SP, fp + 16); /* push rbp; mov rsp, rbp: the caller's sp */
#else
	/*
	 * arm64 keeps the frame record at the bottom of the frame: fp + 16 is
	 * only a lower bound of the caller's sp, good for the checks, not for CFI.
	 */
	next.r[SWA_REG_SP] = fp + 16;
#endif
	next.pc = ra;
	*last_fp = fp;
	*regs = next;
	return 1;
}

#if defined(SWA_REG_LR)
/*
 * A leaf stopped before it saved the link register: the frame-pointer chain
 * still describes its caller's frame, so the caller is only in the link
 * register.  Emit it when it differs from the chain's saved return address.
 */
static bool leaf_lr(struct swa_unwind_ctx *uc, const struct swa_regs *regs, uint64_t *ret)
{
	if (!swa_regs_has(regs, SWA_REG_LR) || !swa_regs_has(regs, SWA_REG_FP))
		return false;
	uint64_t lr = swa_arch_strip(regs->r[SWA_REG_LR]);
	int async = 0;
	uint64_t fp = swa_arch_frame_pointer(regs->r[SWA_REG_FP], &async), saved = 0;
	if (!lr || !swa_images_find(lr))
		return false;
	if (in_stack(uc->cap, fp) && swa_stack_read(uc, fp + 8, &saved) == 0 &&
	    swa_arch_strip(saved) == lr)
		return false;
	*ret = lr;
	return true;
}
#endif

/* The compact-unwind reader's view of image memory and of the stack. */
static int cu_read_image(void *ctx, uint64_t addr, void *dst, size_t len)
{
	return swa_mem_read(addr, dst, len);
}

static int cu_read_stack(void *ctx, uint64_t addr, void *dst, size_t len)
{
	uint64_t v;
	if (len != 8 || swa_stack_read(ctx, addr, &v) < 0)
		return -EFAULT;
	memcpy(dst, &v, 8);
	return 0;
}

#if defined(__x86_64__)
#define CU_ARCH       SWA_CU_X86_64
#define CU_FRAME_MODE SWA_CU_X86_64_MODE_RBP
#else
#define CU_ARCH       SWA_CU_ARM64
#define CU_FRAME_MODE SWA_CU_ARM64_MODE_FRAME
#endif

/*
 * One step by a Mach-O image's compact unwind: its encoding, or the FDE in
 * __eh_frame it escapes to.  The leaf of a frame-pointer function is left
 * to the frame-pointer walk, which knows about the link register and
 * prologues (the encoding describes the body only), unless it stopped on
 * its first instruction.  A step to a return address outside every image
 * is refused, so that the frame-pointer walk gets its chance.
 */
static int compact_step(struct swa_unwind_ctx *uc, const struct swa_image *im,
			struct swa_regs *regs, bool pc_is_return, bool *ret_signal_frame)
{
	struct swa_cu_reader rd = {cu_read_image, cu_read_stack, uc};
	struct swa_cu_entry e;
	uint32_t fde_off;
	if (!im->unwind_info ||
	    swa_cu_find(&rd, im->text_vmaddr + im->slide, im->unwind_info, im->unwind_info_size,
			pc_is_return ? regs->pc - 1 : regs->pc, &e) < 0)
		return -ENOENT;
	if (!pc_is_return && (e.encoding & SWA_CU_MODE_MASK) == CU_FRAME_MODE &&
	    regs->pc != e.start)
		return -ENOENT;
	int async = 0;
	struct swa_cu_frame f = {.pc = regs->pc, .sp = regs->r[SWA_REG_SP], .leaf = !pc_is_return};
	f.fp = swa_arch_frame_pointer(regs->r[SWA_REG_FP], &async);
#if defined(SWA_REG_LR)
	f.lr = swa_arch_strip(regs->r[SWA_REG_LR]);
	f.has_lr = !pc_is_return && swa_regs_has(regs, SWA_REG_LR);
#endif
	int r = swa_cu_step(&rd, CU_ARCH, &e, &f, &fde_off);
	if (r == SWA_CU_DWARF) {
		if (!im->eh_frame || fde_off >= im->eh_frame_size)
			return -ENOENT;
		return swa_cfi_step_fde(uc, im->eh_frame + fde_off, regs, pc_is_return,
					ret_signal_frame);
	}
	/* an encoding used where it does not hold (a prologue) gives garbage: no image there */
	if (r < 0 || !swa_images_find(swa_arch_strip(f.pc)))
		return r < 0 ? r : -EINVAL;
	bool fp_known = swa_regs_has(regs, SWA_REG_FP);
	struct swa_regs next = {0};
	if (fp_known || (e.encoding & SWA_CU_MODE_MASK) == CU_FRAME_MODE)
		swa_regs_set(&next, SWA_REG_FP, f.fp);
	swa_regs_set(&next, SWA_REG_SP, f.sp);
	next.pc = swa_arch_strip(f.pc);
	uc->async |= async;
	*regs = next;
	return 1;
}

uint32_t swa_unwind(const struct swa_capture *cap, uint64_t *frames, uint32_t max,
		    uint32_t *ret_flags)
{
	struct swa_unwind_ctx uc = {.cap = cap, .live_reads = (cap->flags & SWA_CAPTURE_STILL)};
	struct swa_regs regs = cap->regs;
	uint32_t depth = 0, flags = 0;
	uint64_t last_fp = 0;
	bool pc_is_return = false;
	regs.pc = swa_arch_strip(regs.pc);
	if (max == 0) {
		*ret_flags = SWA_UNWIND_TRUNCATED;
		return 0;
	}
	frames[depth++] = regs.pc;
	while (depth < max) {
		uint64_t prev_sp = regs.r[SWA_REG_SP];
		const struct swa_image *im = swa_images_find(pc_is_return ? regs.pc - 1 : regs.pc);
		int r = -ENOENT;
		bool signal_frame = false;
		if (im) {
			struct swa_regs saved = regs;
			if (im->unwind_kind == SWA_UNWIND_KIND_MACHO)
				r = compact_step(&uc, im, &regs, pc_is_return, &signal_frame);
			else
				r = swa_cfi_step(&uc, im, &regs, pc_is_return, &signal_frame);
			if (r < 0)
				regs = saved;
			else if (r > 0)
				flags |= SWA_UNWIND_CFI;
		}
		if (r < 0) {
#if defined(SWA_REG_LR)
			uint64_t lr;
			if (depth == 1 && leaf_lr(&uc, &regs, &lr)) {
				frames[depth++] = lr;
				flags |= SWA_UNWIND_LEAF_FROM_LR;
				if (depth == max)
					break;
			}
#endif
			r = fp_step(&uc, &regs, &last_fp);
		}
		if (r == 0) {
			*ret_flags = flags | (uc.async ? SWA_UNWIND_ASYNC : 0);
			return depth;
		}
		if (r < 0)
			break;
		uint64_t sp = regs.r[SWA_REG_SP];
		/* the stack only grows one way: a caller's frame lies above */
		if (sp < prev_sp || (sp == prev_sp && depth > 1) ||
		    (cap->stack_hi && sp > cap->stack_hi) || regs.pc == 0)
			break;
		frames[depth++] = regs.pc;
		pc_is_return = !signal_frame;
	}
	*ret_flags = flags | SWA_UNWIND_TRUNCATED | (uc.async ? SWA_UNWIND_ASYNC : 0);
	return depth;
}
