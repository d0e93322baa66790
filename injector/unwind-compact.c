/*
 * Compact unwind, the Mach-O linker's summary of each function's frame in
 * one 32-bit word: the __unwind_info section indexes them by function
 * offset from the image's Mach header, in a first-level index of pages
 * (the last entry a sentinel marking the end of the code) and second-level
 * pages, regular ({offset, encoding} pairs) or compressed (24-bit offsets
 * from the page's first function and an 8-bit index into the section's
 * common encodings, then the page's own).  A step by an encoding follows
 * the frame-pointer record (arm64 FRAME, x86_64 RBP), or pops a frameless
 * function's fixed stack (arm64: the return address is still in lr;
 * x86_64: the size is in the encoding or in the function's `sub` opcode,
 * and the saved registers lie below the return address in the order the
 * encoding's permutation gives), or hands the function's FDE in __eh_frame
 * to the CFI code.  Personalities and LSDAs are of no use to an unwinder
 * that does not run handlers, and are ignored.
 *
 * The section is hostile input like all image memory: every count and
 * offset is checked against the section's size, every read is fault-safe.
 */
#include <errno.h>

#include "unwind-compact.h"

#define HEADER_SIZE      28
#define INDEX_ENTRY_SIZE 12
#define PAGE_REGULAR     2
#define PAGE_COMPRESSED  3
#define X86_64_REG_RBP   6

static int read_u32(const struct swa_cu_reader *rd, uint64_t addr, uint32_t *ret)
{
	uint8_t b[4];
	int r = rd->read_image(rd->ctx, addr, b, 4);
	if (r < 0)
		return r;
	*ret = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	return 0;
}

static int read_u16(const struct swa_cu_reader *rd, uint64_t addr, uint16_t *ret)
{
	uint8_t b[2];
	int r = rd->read_image(rd->ctx, addr, b, 2);
	if (r < 0)
		return r;
	*ret = (uint16_t)(b[0] | b[1] << 8);
	return 0;
}

static int read_stack(const struct swa_cu_reader *rd, uint64_t addr, uint64_t *ret)
{
	uint8_t b[8];
	int r = rd->read_stack(rd->ctx, addr, b, 8);
	if (r < 0)
		return r;
	*ret = 0;
	for (int i = 7; i >= 0; i--)
		*ret = *ret << 8 | b[i];
	return 0;
}

/*
 * Binary search over n entries at addr, stride apart, whose first word
 * (masked) is a function offset: the last entry at or below off, or -1.
 */
static int64_t search(const struct swa_cu_reader *rd, uint64_t addr, uint32_t n, uint32_t stride,
		      uint32_t mask, uint32_t off, int *err)
{
	int64_t lo = 0, hi = (int64_t)n - 1, found = -1;
	while (lo <= hi) {
		int64_t mid = lo + (hi - lo) / 2;
		uint32_t v;
		if ((*err = read_u32(rd, addr + (uint64_t)mid * stride, &v)) < 0)
			return -1;
		if ((v & mask) <= off) {
			found = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found;
}

struct page_ref {
	uint64_t info, size; /* the section */
	uint32_t common_off; /* common encodings array */
	uint32_t common_n;
	uint32_t first_func; /* the page's first function offset */
	uint32_t next_func;  /* the next page's first function offset */
	uint32_t page_off;   /* the page, from the section's start */
};

static int in_section(const struct page_ref *p, uint64_t off, uint64_t len)
{
	return off <= p->size && len <= p->size - off;
}

static int find_regular(const struct swa_cu_reader *rd, const struct page_ref *p, uint32_t off,
			uint32_t *ret_start, uint32_t *ret_end, uint32_t *ret_enc)
{
	uint16_t entry_off, n;
	int err = 0;
	uint64_t page = p->info + p->page_off;
	if (read_u16(rd, page + 4, &entry_off) < 0 || read_u16(rd, page + 6, &n) < 0)
		return -EFAULT;
	if (!in_section(p, (uint64_t)p->page_off + entry_off, (uint64_t)n * 8))
		return -EINVAL;
	uint64_t entries = page + entry_off;
	int64_t j = search(rd, entries, n, 8, 0xffffffffu, off, &err);
	if (err < 0)
		return err;
	if (j < 0)
		return -ENOENT;
	if (read_u32(rd, entries + (uint64_t)j * 8, ret_start) < 0 ||
	    read_u32(rd, entries + (uint64_t)j * 8 + 4, ret_enc) < 0)
		return -EFAULT;
	*ret_end = p->next_func;
	if (j + 1 < n && read_u32(rd, entries + (uint64_t)(j + 1) * 8, ret_end) < 0)
		return -EFAULT;
	return 0;
}

static int find_compressed(const struct swa_cu_reader *rd, const struct page_ref *p, uint32_t off,
			   uint32_t *ret_start, uint32_t *ret_end, uint32_t *ret_enc)
{
	uint16_t entry_off, n, enc_off, enc_n;
	uint64_t page = p->info + p->page_off;
	int err = 0;
	if (read_u16(rd, page + 4, &entry_off) < 0 || read_u16(rd, page + 6, &n) < 0 ||
	    read_u16(rd, page + 8, &enc_off) < 0 || read_u16(rd, page + 10, &enc_n) < 0)
		return -EFAULT;
	if (!in_section(p, (uint64_t)p->page_off + entry_off, (uint64_t)n * 4) ||
	    !in_section(p, (uint64_t)p->page_off + enc_off, (uint64_t)enc_n * 4) ||
	    off < p->first_func)
		return -EINVAL;
	uint64_t entries = page + entry_off;
	int64_t j = search(rd, entries, n, 4, 0x00ffffffu, off - p->first_func, &err);
	uint32_t entry, next;
	if (err < 0)
		return err;
	if (j < 0)
		return -ENOENT;
	if (read_u32(rd, entries + (uint64_t)j * 4, &entry) < 0)
		return -EFAULT;
	*ret_start = p->first_func + (entry & 0x00ffffffu);
	*ret_end = p->next_func;
	if (j + 1 < n) {
		if (read_u32(rd, entries + (uint64_t)(j + 1) * 4, &next) < 0)
			return -EFAULT;
		*ret_end = p->first_func + (next & 0x00ffffffu);
	}
	uint32_t idx = entry >> 24;
	if (idx < p->common_n)
		return read_u32(rd, p->info + p->common_off + (uint64_t)idx * 4, ret_enc) < 0
			   ? -EFAULT
			   : 0;
	if (idx - p->common_n >= enc_n)
		return -EINVAL;
	return read_u32(rd, page + enc_off + (uint64_t)(idx - p->common_n) * 4, ret_enc) < 0
		   ? -EFAULT
		   : 0;
}

/* Reads the header and the first-level index: which page covers off. */
static int find_page(const struct swa_cu_reader *rd, uint64_t info, uint64_t size, uint32_t off,
		     struct page_ref *p)
{
	uint32_t h[7];
	int err = 0;
	for (int i = 0; i < 7; i++)
		if (size < HEADER_SIZE || read_u32(rd, info + 4 * (uint64_t)i, &h[i]) < 0)
			return size < HEADER_SIZE ? -EINVAL : -EFAULT;
	*p = (struct page_ref){.info = info, .size = size, .common_off = h[1], .common_n = h[2]};
	uint32_t index_off = h[5], index_n = h[6];
	if (h[0] != 1 || !in_section(p, h[1], (uint64_t)h[2] * 4) ||
	    !in_section(p, index_off, (uint64_t)index_n * INDEX_ENTRY_SIZE))
		return -EINVAL;
	if (index_n < 2) /* no page before the sentinel */
		return -ENOENT;
	uint64_t index = info + index_off;
	int64_t i = search(rd, index, index_n, INDEX_ENTRY_SIZE, 0xffffffffu, off, &err);
	if (err < 0)
		return err;
	if (i < 0 || i >= (int64_t)index_n - 1) /* before the code, or past the sentinel */
		return -ENOENT;
	uint64_t ent = index + (uint64_t)i * INDEX_ENTRY_SIZE;
	if (read_u32(rd, ent, &p->first_func) < 0 || read_u32(rd, ent + 4, &p->page_off) < 0 ||
	    read_u32(rd, ent + INDEX_ENTRY_SIZE, &p->next_func) < 0)
		return -EFAULT;
	if (p->page_off == 0)
		return -ENOENT;
	if (!in_section(p, p->page_off, 12) || p->next_func < p->first_func)
		return -EINVAL;
	return 0;
}

int swa_cu_find(const struct swa_cu_reader *rd, uint64_t base, uint64_t info, uint64_t size,
		uint64_t pc, struct swa_cu_entry *ret)
{
	struct page_ref p;
	uint32_t kind, start, end, enc;
	if (pc < base || pc - base > 0xffffffffu || info == 0)
		return -ENOENT;
	uint32_t off = (uint32_t)(pc - base);
	int r = find_page(rd, info, size, off, &p);
	if (r < 0)
		return r;
	if (read_u32(rd, info + p.page_off, &kind) < 0)
		return -EFAULT;
	if (kind == PAGE_REGULAR)
		r = find_regular(rd, &p, off, &start, &end, &enc);
	else if (kind == PAGE_COMPRESSED)
		r = find_compressed(rd, &p, off, &start, &end, &enc);
	else
		r = -EINVAL;
	if (r < 0)
		return r;
	if (start > off || end <= off)
		return end <= start ? -EINVAL : -ENOENT;
	ret->start = base + start;
	ret->end = base + end;
	ret->encoding = enc;
	return 0;
}

/* The frame record at fp: the caller's frame pointer and return address. */
static int step_frame_record(const struct swa_cu_reader *rd, struct swa_cu_frame *f)
{
	uint64_t fp = f->fp, next_fp, ra;
	if ((fp & 7) || fp < f->sp || fp + 16 < fp)
		return -EINVAL;
	if (read_stack(rd, fp, &next_fp) < 0 || read_stack(rd, fp + 8, &ra) < 0)
		return -EFAULT;
	f->fp = next_fp;
	f->pc = ra;
	f->sp = fp + 16;
	f->has_lr = 0;
	return SWA_CU_STEPPED;
}

static int step_arm64(const struct swa_cu_reader *rd, uint32_t enc, struct swa_cu_frame *f,
		      uint32_t *ret_fde_off)
{
	switch (enc & SWA_CU_MODE_MASK) {
	case SWA_CU_ARM64_MODE_FRAME:
		return step_frame_record(rd, f);
	case SWA_CU_ARM64_MODE_FRAMELESS: {
		/* a leaf: nothing saved, the caller is in lr, the frame is sp..sp+size */
		uint64_t size = (uint64_t)((enc >> 12) & 0xfff) * 16;
		if (!f->has_lr)
			return -ENOENT;
		f->pc = f->lr;
		f->sp += size;
		f->has_lr = 0;
		return SWA_CU_STEPPED;
	}
	case SWA_CU_ARM64_MODE_DWARF:
		*ret_fde_off = enc & SWA_CU_DWARF_OFFSET_MASK;
		return SWA_CU_DWARF;
	default:
		return -ENOENT;
	}
}

/*
 * The registers a frameless x86_64 function saved, in the order it pushed
 * them: the permutation numbers each one among the registers (1 rbx .. 6
 * rbp) not yet taken, in mixed radix 6, 5, 4, ...
 */
static int x86_64_saved_registers(uint32_t count, uint32_t perm, unsigned regs[6])
{
	unsigned taken = 0;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t weight = 1;
		for (uint32_t k = i + 1; k < count; k++)
			weight *= 6 - k;
		uint32_t digit = perm / weight;
		perm -= digit * weight;
		if (digit >= 6 - i)
			return -EINVAL;
		for (unsigned reg = 1; reg <= 6; reg++) {
			if (taken & (1u << reg))
				continue;
			if (digit-- == 0) {
				regs[i] = reg;
				taken |= 1u << reg;
				break;
			}
		}
	}
	return perm == 0 ? 0 : -EINVAL;
}

static int step_x86_64_frameless(const struct swa_cu_reader *rd, uint64_t size, uint32_t enc,
				 struct swa_cu_frame *f)
{
	uint32_t count = (enc >> 10) & 7;
	unsigned regs[6];
	if (count > 6 || size < 8 + 8 * (uint64_t)count ||
	    x86_64_saved_registers(count, enc & 0x3ff, regs) < 0)
		return -EINVAL;
	uint64_t ra_at = f->sp + size - 8, ra, fp = f->fp;
	if (ra_at < f->sp)
		return -EINVAL;
	for (uint32_t i = 0; i < count; i++)
		if (regs[i] == X86_64_REG_RBP &&
		    read_stack(rd, ra_at - 8 * ((uint64_t)count - i), &fp) < 0)
			return -EFAULT;
	if (read_stack(rd, ra_at, &ra) < 0)
		return -EFAULT;
	f->pc = ra;
	f->sp = ra_at + 8;
	f->fp = fp;
	f->has_lr = 0;
	return SWA_CU_STEPPED;
}

static int step_x86_64(const struct swa_cu_reader *rd, const struct swa_cu_entry *e, uint32_t enc,
		       struct swa_cu_frame *f, uint32_t *ret_fde_off)
{
	uint32_t sub;
	switch (enc & SWA_CU_MODE_MASK) {
	case SWA_CU_X86_64_MODE_RBP:
		return step_frame_record(rd, f);
	case SWA_CU_X86_64_MODE_IMMD:
		return step_x86_64_frameless(rd, (uint64_t)((enc >> 16) & 0xff) * 8, enc, f);
	case SWA_CU_X86_64_MODE_IND:
		/* the size is the immediate of the function's `sub $n, %rsp`, at this offset */
		if (read_u32(rd, e->start + ((enc >> 16) & 0xff), &sub) < 0)
			return -EFAULT;
		return step_x86_64_frameless(rd, (uint64_t)sub + ((enc >> 13) & 7) * 8, enc, f);
	case SWA_CU_X86_64_MODE_DWARF:
		*ret_fde_off = enc & SWA_CU_DWARF_OFFSET_MASK;
		return SWA_CU_DWARF;
	default:
		return -ENOENT;
	}
}

/* The first instruction: nothing pushed, nothing saved yet. */
static int step_entry(const struct swa_cu_reader *rd, enum swa_cu_arch arch, struct swa_cu_frame *f)
{
	uint64_t ra;
	if (arch == SWA_CU_ARM64) {
		if (!f->has_lr)
			return -ENOENT;
		f->pc = f->lr;
	} else {
		if (read_stack(rd, f->sp, &ra) < 0)
			return -EFAULT;
		f->pc = ra;
		f->sp += 8;
	}
	f->leaf = f->has_lr = 0;
	return SWA_CU_STEPPED;
}

int swa_cu_step(const struct swa_cu_reader *rd, enum swa_cu_arch arch, const struct swa_cu_entry *e,
		struct swa_cu_frame *f, uint32_t *ret_fde_off)
{
	uint32_t dwarf = arch == SWA_CU_ARM64 ? SWA_CU_ARM64_MODE_DWARF : SWA_CU_X86_64_MODE_DWARF;
	if (f->leaf && f->pc == e->start && e->encoding != 0 &&
	    (e->encoding & SWA_CU_MODE_MASK) != dwarf)
		return step_entry(rd, arch, f);
	f->leaf = 0;
	if (arch == SWA_CU_ARM64)
		return step_arm64(rd, e->encoding, f, ret_fde_off);
	if (arch == SWA_CU_X86_64)
		return step_x86_64(rd, e, e->encoding, f, ret_fde_off);
	return -EINVAL;
}
