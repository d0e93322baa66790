/*
 * The agent's compact-unwind reader (injector/unwind-compact.c) against
 * Mach-O images linked by ld64.lld, with facts from other tools that
 * tests/test-unwind-compact.py writes to REF:
 *
 *   end OFF                      the end of the code (the index's sentinel)
 *   fn OFF ENCODING SIZE PUSHES  every entry llvm-objdump --unwind-info lists,
 *                                with the prologue llvm-objdump -d shows
 *                                (the frame's size, the registers pushed)
 *   fde OFF PC-LO PC-HI          every FDE llvm-dwarfdump --eh-frame lists
 *
 * For every function: the lookup of its first and last byte gives its
 * start and encoding; a synthetic stack laid out as its prologue left it
 * unwinds by its encoding to the planted caller (or names its FDE).  Then
 * hand-made sections cover regular pages and hostile counts, and on an
 * x86_64 host the core's unwinder walks a stack through a DWARF escape, a
 * frameless function and frame records of the x86_64 image.
 *
 * usage: test-unwind-compact arm64|x86_64 IMAGE REF
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "unwind-compact.h"
#include "unwind.h"

#define MAX_FNS    4096
#define MAX_FDES   4096
#define STACK_SIZE (2u << 20)
#define STACK_BASE 0x7ff000000000ull
#define CALLER_PC  0x1000c0ffeeull
#define CALLER_FP  (STACK_BASE + STACK_SIZE - 64)

struct fn {
	uint32_t off, enc;
	long size; /* the frame's size from the prologue, -1 unknown */
	char pushes[64];
};

struct fde {
	uint64_t off, lo, hi;
};

static struct fn fns[MAX_FNS];
static size_t nfns;
static struct fde fdes[MAX_FDES];
static size_t nfdes;
static uint32_t code_end;

/* The image as dyld would map it, at a page-aligned buffer. */
static uint8_t *image;
static uint64_t image_vmaddr, image_len; /* file address of image[0] */
static uint64_t unwind_info_addr, unwind_info_size, eh_frame_addr, eh_frame_size;

static uint8_t stack[STACK_SIZE];

static uint64_t rt(uint64_t vmaddr)
{
	return (uint64_t)(uintptr_t)image + (vmaddr - image_vmaddr);
}

static int read_image(void *ctx, uint64_t addr, void *dst, size_t len)
{
	uint64_t lo = (uint64_t)(uintptr_t)image;
	if (addr < lo || addr - lo > image_len || len > image_len - (addr - lo))
		return -EFAULT;
	memcpy(dst, image + (addr - lo), len);
	return 0;
}

static int read_stack(void *ctx, uint64_t addr, void *dst, size_t len)
{
	if (addr < STACK_BASE || addr - STACK_BASE > STACK_SIZE ||
	    len > STACK_SIZE - (addr - STACK_BASE))
		return -EFAULT;
	memcpy(dst, stack + (addr - STACK_BASE), len);
	return 0;
}

static void put_stack(uint64_t addr, uint64_t v)
{
	CHECK(addr >= STACK_BASE && addr + 8 <= STACK_BASE + STACK_SIZE);
	memcpy(stack + (addr - STACK_BASE), &v, 8);
}

static const struct swa_cu_reader reader = {read_image, read_stack, NULL};

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* Maps the segments (all but __PAGEZERO) and finds the two sections. */
static void load_image(const char *path)
{
	FILE *f = fopen(path, "rb");
	static uint8_t file[4 << 20];
	size_t size;
	CHECK(f);
	size = fread(file, 1, sizeof(file), f);
	fclose(f);
	CHECK(size > 32 && size < sizeof(file) && rd32(file) == 0xfeedfacfu);
	uint32_t ncmds = rd32(file + 16);
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int pass = 0; pass < 2; pass++) {
		size_t off = 32;
		for (uint32_t i = 0; i < ncmds; i++, off += rd32(file + off + 4)) {
			const uint8_t *c = file + off;
			if (rd32(c) != 0x19 || !strcmp((const char *)c + 8, "__PAGEZERO"))
				continue; /* LC_SEGMENT_64 but the guard page */
			uint64_t vmaddr = rd64(c + 24), vmsize = rd64(c + 32),
				 fileoff = rd64(c + 40);
			uint64_t filesize = rd64(c + 48);
			if (pass == 0) {
				lo = vmaddr < lo ? vmaddr : lo;
				hi = vmaddr + vmsize > hi ? vmaddr + vmsize : hi;
				continue;
			}
			memcpy(image + (vmaddr - lo), file + fileoff, filesize);
			for (uint32_t s = 0; s < rd32(c + 64); s++) {
				const uint8_t *sect = c + 72 + 80 * s;
				if (!strcmp((const char *)sect, "__unwind_info")) {
					unwind_info_addr = rd64(sect + 32);
					unwind_info_size = rd64(sect + 40);
				} else if (!strcmp((const char *)sect, "__eh_frame")) {
					eh_frame_addr = rd64(sect + 32);
					eh_frame_size = rd64(sect + 40);
				}
			}
		}
		if (pass == 0) {
			CHECK(hi > lo && hi - lo < (64u << 20));
			image_vmaddr = lo;
			image_len = (hi - lo + 4095) & ~4095ull;
			image = aligned_alloc(4096, image_len);
			CHECK(image);
			memset(image, 0, image_len);
		}
	}
	CHECK(unwind_info_addr && unwind_info_size);
}

static void load_ref(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[256];
	CHECK(f);
	while (fgets(line, sizeof(line), f)) {
		struct fn *fn = &fns[nfns];
		struct fde *fd = &fdes[nfdes];
		if (sscanf(line, "end %x", &code_end) == 1)
			continue;
		if (sscanf(line, "fn %x %x %ld %63s", &fn->off, &fn->enc, &fn->size, fn->pushes) ==
		    4) {
			CHECK(++nfns < MAX_FNS);
		} else if (sscanf(line, "fde %" SCNx64 " %" SCNx64 " %" SCNx64, &fd->off, &fd->lo,
				  &fd->hi) == 3) {
			CHECK(++nfdes < MAX_FDES);
		} else {
			fprintf(stderr, "bad reference line: %s", line);
			CHECK(0);
		}
	}
	fclose(f);
	CHECK(nfns > 1 && code_end > fns[nfns - 1].off);
}

static uint64_t fn_end(size_t i)
{
	return i + 1 < nfns ? fns[i + 1].off : code_end;
}

/* Every function's first and last byte find its entry; outside finds nothing. */
static void check_lookups(void)
{
	struct swa_cu_entry e;
	uint64_t base = rt(image_vmaddr), info = rt(unwind_info_addr);
	for (size_t i = 0; i < nfns; i++) {
		uint64_t pcs[2] = {base + fns[i].off, base + fn_end(i) - 1};
		for (int k = 0; k < 2; k++) {
			int r = swa_cu_find(&reader, base, info, unwind_info_size, pcs[k], &e);
			if (r != 0 || e.start != base + fns[i].off || e.end != base + fn_end(i) ||
			    e.encoding != fns[i].enc) {
				fprintf(stderr,
					"lookup of 0x%x+%d: %d, 0x%llx 0x%08x, want 0x%08x\n",
					fns[i].off, k, r, (unsigned long long)(e.start - base),
					e.encoding, fns[i].enc);
				CHECK(0);
			}
		}
	}
	CHECK(swa_cu_find(&reader, base, info, unwind_info_size, base + fns[0].off - 1, &e) ==
	      -ENOENT);
	CHECK(swa_cu_find(&reader, base, info, unwind_info_size, base + code_end, &e) == -ENOENT);
	CHECK(swa_cu_find(&reader, base, info, unwind_info_size, base - 1, &e) == -ENOENT);
	printf("lookups: %zu functions\n", nfns);
}

/*
 * A frameless x86_64 function's stack as its prologue left it: the return
 * address at the top, the pushed registers below it in push order.
 */
static void check_x86_64_frameless(const struct fn *fn, const struct swa_cu_entry *e, int *count)
{
	uint64_t sp = STACK_BASE + 4096, ra_at = sp + (uint64_t)fn->size - 8, at = ra_at;
	uint64_t want_fp = CALLER_FP;
	char pushes[64];
	struct swa_cu_frame f = {.pc = e->start + 1, .sp = sp, .fp = CALLER_FP};
	uint32_t fde;
	memset(stack, 0xa5, 8192 + (size_t)fn->size);
	put_stack(ra_at, CALLER_PC);
	snprintf(pushes, sizeof(pushes), "%s", fn->pushes);
	for (char *save = NULL, *reg = strtok_r(pushes, ",", &save); reg && strcmp(reg, "-");
	     reg = strtok_r(NULL, ",", &save)) {
		at -= 8;
		put_stack(at, !strcmp(reg, "rbp") ? CALLER_FP - 256 : 0x5a5a5a5a00 + at);
		if (!strcmp(reg, "rbp"))
			want_fp = CALLER_FP - 256;
	}
	CHECK(swa_cu_step(&reader, SWA_CU_X86_64, e, &f, &fde) == SWA_CU_STEPPED);
	if (f.pc != CALLER_PC || f.sp != ra_at + 8 || f.fp != want_fp)
		fprintf(stderr, "x86_64 frameless 0x%08x (%s, %ld): pc 0x%llx sp +%lld fp 0x%llx\n",
			e->encoding, fn->pushes, fn->size, (unsigned long long)f.pc,
			(long long)(f.sp - sp), (unsigned long long)f.fp);
	CHECK(f.pc == CALLER_PC && f.sp == ra_at + 8 && f.fp == want_fp);
	(*count)++;
}

/* A frame record: the caller's frame pointer and the return address. */
static void check_frame_record(enum swa_cu_arch arch, const struct swa_cu_entry *e)
{
	uint64_t sp = STACK_BASE + 4096, fp = sp + 48;
	struct swa_cu_frame f = {.pc = e->start + 4, .sp = sp, .fp = fp};
	uint32_t fde;
	put_stack(fp, CALLER_FP);
	put_stack(fp + 8, CALLER_PC);
	CHECK(swa_cu_step(&reader, arch, e, &f, &fde) == SWA_CU_STEPPED);
	CHECK(f.pc == CALLER_PC && f.sp == fp + 16 && f.fp == CALLER_FP);
	/* a misaligned frame pointer is refused */
	f = (struct swa_cu_frame){.pc = e->start + 4, .sp = sp, .fp = fp + 4};
	CHECK(swa_cu_step(&reader, arch, e, &f, &fde) == -EINVAL);
}

/* An arm64 leaf: its caller is in lr, its frame is the prologue's size. */
static void check_arm64_frameless(const struct fn *fn, const struct swa_cu_entry *e)
{
	uint64_t sp = STACK_BASE + 4096;
	struct swa_cu_frame f = {
	    .pc = e->start, .sp = sp, .fp = CALLER_FP, .lr = CALLER_PC, .has_lr = 1};
	uint32_t fde;
	CHECK(fn->size >= 0);
	CHECK(swa_cu_step(&reader, SWA_CU_ARM64, e, &f, &fde) == SWA_CU_STEPPED);
	if (f.sp != sp + (uint64_t)fn->size)
		fprintf(stderr, "arm64 frameless 0x%08x: sp +%lld, prologue says %ld\n",
			e->encoding, (long long)(f.sp - sp), fn->size);
	CHECK(f.pc == CALLER_PC && f.sp == sp + (uint64_t)fn->size && f.fp == CALLER_FP);
	f = (struct swa_cu_frame){.pc = e->start, .sp = sp, .fp = CALLER_FP};
	CHECK(swa_cu_step(&reader, SWA_CU_ARM64, e, &f, &fde) == -ENOENT);
}

/* The FDE the encoding names covers exactly the function. */
static void check_dwarf(enum swa_cu_arch arch, const struct swa_cu_entry *e)
{
	struct swa_cu_frame f = {.pc = e->start, .sp = STACK_BASE + 4096};
	uint32_t off = 0;
	bool found = false;
	CHECK(swa_cu_step(&reader, arch, e, &f, &off) == SWA_CU_DWARF);
	for (size_t i = 0; i < nfdes; i++)
		if (fdes[i].off == off)
			found = fdes[i].lo == e->start - rt(image_vmaddr) + image_vmaddr;
	if (!found)
		fprintf(stderr, "encoding 0x%08x: no FDE at 0x%x for the function\n", e->encoding,
			off);
	CHECK(found);
}

/*
 * A leaf stopped on a function's first instruction, whatever its
 * encoding says about the body: the return address is still in lr
 * (arm64) or on top of the stack (x86_64).
 */
static void check_entry(enum swa_cu_arch arch, const struct swa_cu_entry *e)
{
	uint64_t sp = STACK_BASE + 4096;
	struct swa_cu_frame f = {.pc = e->start,
				 .sp = sp,
				 .fp = CALLER_FP,
				 .lr = CALLER_PC,
				 .leaf = 1,
				 .has_lr = arch == SWA_CU_ARM64};
	uint32_t fde;
	put_stack(sp, CALLER_PC);
	CHECK_INT(swa_cu_step(&reader, arch, e, &f, &fde), SWA_CU_STEPPED);
	CHECK_INT(f.pc, CALLER_PC);
	CHECK_INT(f.sp, arch == SWA_CU_ARM64 ? sp : sp + 8);
	CHECK_INT(f.fp, CALLER_FP);
}

static void check_steps(enum swa_cu_arch arch)
{
	int frame = 0, frameless = 0, dwarf = 0, indirect = 0, none = 0;
	uint64_t base = rt(image_vmaddr);
	for (size_t i = 0; i < nfns; i++) {
		struct swa_cu_entry e;
		uint32_t mode = fns[i].enc & SWA_CU_MODE_MASK;
		CHECK(swa_cu_find(&reader, base, rt(unwind_info_addr), unwind_info_size,
				  base + fns[i].off, &e) == 0);
		bool dwarf_mode = mode == (arch == SWA_CU_ARM64 ? SWA_CU_ARM64_MODE_DWARF
								: SWA_CU_X86_64_MODE_DWARF);
		if (fns[i].enc != 0 && !dwarf_mode)
			check_entry(arch, &e);
		if (fns[i].enc == 0) {
			struct swa_cu_frame f = {0};
			uint32_t fde;
			CHECK(swa_cu_step(&reader, arch, &e, &f, &fde) == -ENOENT);
			none++;
		} else if (arch == SWA_CU_ARM64 && mode == SWA_CU_ARM64_MODE_FRAME) {
			check_frame_record(arch, &e);
			frame++;
		} else if (arch == SWA_CU_ARM64 && mode == SWA_CU_ARM64_MODE_FRAMELESS) {
			check_arm64_frameless(&fns[i], &e);
			frameless++;
		} else if (arch == SWA_CU_X86_64 && mode == SWA_CU_X86_64_MODE_RBP) {
			check_frame_record(arch, &e);
			frame++;
		} else if (arch == SWA_CU_X86_64 &&
			   (mode == SWA_CU_X86_64_MODE_IMMD || mode == SWA_CU_X86_64_MODE_IND)) {
			CHECK(fns[i].size > 0);
			check_x86_64_frameless(
			    &fns[i], &e, mode == SWA_CU_X86_64_MODE_IND ? &indirect : &frameless);
		} else {
			check_dwarf(arch, &e);
			dwarf++;
		}
	}
	printf("steps: %d frame, %d frameless, %d indirect, %d dwarf, %d none\n", frame, frameless,
	       indirect, dwarf, none);
	/* the fixtures have each kind; a toolchain change that loses one shows here */
	CHECK(frame > 100 && frameless > 0 && dwarf > 0);
	CHECK(arch == SWA_CU_ARM64 || indirect > 0);
}

/* ---- hand-made sections: regular pages, page-local encodings, hostile counts ---- */

struct mem {
	const uint8_t *p;
	uint64_t addr, len;
};

static int read_mem(void *ctx, uint64_t addr, void *dst, size_t len)
{
	const struct mem *m = ctx;
	if (addr < m->addr || addr - m->addr > m->len || len > m->len - (addr - m->addr))
		return -EFAULT;
	memcpy(dst, m->p + (addr - m->addr), len);
	return 0;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/*
 * Header, two common encodings, three index entries (the last the
 * sentinel at 0x3000), a regular page for 0x1000.. and a compressed one
 * for 0x2000.. with one encoding of its own.
 */
static size_t build_section(uint8_t *s)
{
	static const uint32_t header[7] = {1, 28, 2, 36, 0, 36, 3};
	memset(s, 0, 256);
	for (int i = 0; i < 7; i++)
		put32(s + 4 * i, header[i]);
	put32(s + 28, 0x04000000);
	put32(s + 32, 0x02001000);
	const uint32_t index[3][3] = {{0x1000, 72, 0}, {0x2000, 104, 0}, {0x3000, 0, 0}};
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 3; k++)
			put32(s + 36 + 12 * i + 4 * k, index[i][k]);
	/* regular: kind, entry offset, count, {function offset, encoding}... */
	put32(s + 72, 2);
	put16(s + 76, 8);
	put16(s + 78, 3);
	const uint32_t regular[3][2] = {
	    {0x1000, 0x04000000}, {0x1100, 0x02002000}, {0x1800, 0x03000040}};
	for (int i = 0; i < 3; i++) {
		put32(s + 80 + 8 * i, regular[i][0]);
		put32(s + 84 + 8 * i, regular[i][1]);
	}
	/* compressed: kind, entry offset, count, encodings offset, count */
	put32(s + 104, 3);
	put16(s + 108, 12);
	put16(s + 110, 3);
	put16(s + 112, 24);
	put16(s + 114, 1);
	put32(s + 116, 0x000 | 0u << 24);
	put32(s + 120, 0x200 | 2u << 24); /* the page's own encoding */
	put32(s + 124, 0x800 | 1u << 24);
	put32(s + 128, 0x02003000);
	return 132;
}

static void check_synthetic_sections(void)
{
	static uint8_t mh[0x4000];
	uint8_t *s = mh + 0x100;
	uint64_t base = 0x100000000ull, info = base + 0x100;
	struct mem m = {mh, base, sizeof(mh)};
	struct swa_cu_reader rd = {read_mem, read_stack, &m};
	struct swa_cu_entry e;
	size_t size = build_section(s);
	const struct {
		uint32_t pc, start, end, enc;
	} want[] = {
	    {0x1000, 0x1000, 0x1100, 0x04000000}, {0x10ff, 0x1000, 0x1100, 0x04000000},
	    {0x17ff, 0x1100, 0x1800, 0x02002000}, {0x1fff, 0x1800, 0x2000, 0x03000040},
	    {0x2000, 0x2000, 0x2200, 0x04000000}, {0x2300, 0x2200, 0x2800, 0x02003000},
	    {0x2fff, 0x2800, 0x3000, 0x02001000},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		int r = swa_cu_find(&rd, base, info, size, base + want[i].pc, &e);
		CHECK_INT(r, 0);
		CHECK_INT(e.start - base, want[i].start);
		CHECK_INT(e.end - base, want[i].end);
		CHECK_INT(e.encoding, want[i].enc);
	}
	CHECK_INT(swa_cu_find(&rd, base, info, size, base + 0x3000, &e), -ENOENT);
	CHECK_INT(swa_cu_find(&rd, base, info, size, base + 0xfff, &e), -ENOENT);
	CHECK_INT(swa_cu_find(&rd, base, info, 20, base + 0x1000, &e), -EINVAL);
	CHECK_INT(swa_cu_find(&rd, base, base + sizeof(mh), size, base + 0x1000, &e), -EFAULT);
	/* hostile: each field out of range in turn */
	put32(s, 2);
	CHECK_INT(swa_cu_find(&rd, base, info, size, base + 0x1000, &e), -EINVAL);
	build_section(s);
	put32(s + 24, 0x40000000); /* index count */
	CHECK_INT(swa_cu_find(&rd, base, info, size, base + 0x1000, &e), -EINVAL);
	build_section(s);
	put32(s + 36 + 4, 0x10000); /* page offset */
	CHECK_INT(swa_cu_find(&rd, base, info, size, base + 0x1000, &e), -EINVAL);
	build_section(s);
	put16(s + 78, 0xffff); /* regular entry count */
	CHECK_INT(swa_cu_find(&rd, base, info, size, base + 0x1000, &e), -EINVAL);
	build_section(s);
	put32(s + 124, 0x800 | 7u << 24); /* encoding index past the page's */
	CHECK_INT(swa_cu_find(&rd, base, info, size, base + 0x2900, &e), -EINVAL);
	build_section(s);
	put32(s + 72, 9); /* page kind */
	CHECK_INT(swa_cu_find(&rd, base, info, size, base + 0x1000, &e), -EINVAL);
	printf("synthetic sections: ok\n");
}

/*
 * x86_64 frameless permutations worked by hand from the format: pushes in
 * order, the registers numbered 1 rbx .. 6 rbp, the last pushed first.
 */
static void check_permutations(void)
{
	const struct {
		uint32_t enc;
		int rbp_slot; /* rbp's slot below the return address, 0: not saved */
		int rc;
	} cases[] = {
	    {0x02030819, 2, SWA_CU_STEPPED}, /* push rbx; push rbp: perm 5*5+0 */
	    {0x02040c73, 3, SWA_CU_STEPPED}, /* push r15; push r14; push rbp: 5*20+3*4+3 */
	    {0x020a1800, 1, SWA_CU_STEPPED}, /* rbp r15 r14 r13 r12 rbx: all zero digits */
	    {0x02020406, 0, -EINVAL},        /* one register, digit 6 */
	    {0x02011800, 0, -EINVAL},        /* six registers do not fit in 8 bytes */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t sp = STACK_BASE + 4096;
		uint64_t size = ((cases[i].enc >> 16) & 0xff) * 8, ra_at = sp + size - 8;
		struct swa_cu_entry e = {0x1000, 0x2000, cases[i].enc};
		struct swa_cu_frame f = {.pc = 0x1004, .sp = sp, .fp = CALLER_FP};
		uint32_t fde;
		memset(stack, 0, 8192);
		put_stack(ra_at, CALLER_PC);
		if (cases[i].rbp_slot)
			put_stack(ra_at - 8 * (uint64_t)cases[i].rbp_slot, CALLER_FP - 512);
		CHECK_INT(swa_cu_step(&reader, SWA_CU_X86_64, &e, &f, &fde), cases[i].rc);
		if (cases[i].rc != SWA_CU_STEPPED)
			continue;
		CHECK_INT(f.pc, CALLER_PC);
		CHECK_INT(f.sp, ra_at + 8);
		CHECK_INT(f.fp, cases[i].rbp_slot ? CALLER_FP - 512 : CALLER_FP);
	}
}

/* ---- the core's unwinder through the x86_64 image ---- */

static struct swa_image core_image;

int swa_plat_read(uint64_t addr, void *dst, size_t len)
{
	return read_image(NULL, addr, dst, len);
}

const struct swa_image *swa_images_find(uint64_t pc)
{
	return pc >= core_image.lo && pc < core_image.hi ? &core_image : NULL;
}

static const struct fn *pick(uint32_t mode, bool want_rbp_pushed)
{
	for (size_t i = 0; i < nfns; i++)
		if ((fns[i].enc & SWA_CU_MODE_MASK) == mode && fn_end(i) - fns[i].off > 4 &&
		    (!want_rbp_pushed || strstr(fns[i].pushes, "rbp")))
			return &fns[i];
	return NULL;
}

#if defined(__aarch64__)
#if defined(SW_TEST_PAC)
/* pacia x0, x1 by its encoding: run under qemu-aarch64 -cpu max (PAC on) */
static uint64_t sign(uint64_t v, uint64_t modifier)
{
	register uint64_t x0 __asm__("x0") = v;
	register uint64_t x1 __asm__("x1") = modifier;
	__asm__(".inst 0xdac10020" : "+r"(x0) : "r"(x1));
	return x0;
}
#else
static uint64_t sign(uint64_t v, uint64_t modifier)
{
	return v;
}
#endif

/*
 * An arm64 stack: a frameless leaf stopped in its body (its caller in lr),
 * called from a function with a frame record, called from another, then
 * the end of the chain; with SW_TEST_PAC every return address is signed.
 */
static void core_unwind_arm64(enum swa_cu_arch arch)
{
	const struct fn *leaf = pick(SWA_CU_ARM64_MODE_FRAMELESS, false);
	const struct fn *framed = pick(SWA_CU_ARM64_MODE_FRAME, false);
	uint64_t base = rt(image_vmaddr), frames[8];
	uint32_t flags;
	if (arch != SWA_CU_ARM64)
		return;
	CHECK(leaf && framed && leaf->size >= 0);
	if (!leaf || !framed || leaf->size < 0)
		return;
	core_image = (struct swa_image){.lo = base,
					.hi = base + code_end,
					.slide = base - image_vmaddr,
					.text_vmaddr = image_vmaddr,
					.unwind_kind = SWA_UNWIND_KIND_MACHO,
					.unwind_info = rt(unwind_info_addr),
					.unwind_info_size = unwind_info_size,
					.eh_frame = eh_frame_addr ? rt(eh_frame_addr) : 0,
					.eh_frame_size = eh_frame_size};
	swa_mem_invalidate();
	memset(stack, 0, sizeof(stack));
	uint64_t s = STACK_BASE + 0x1000, fp1 = s + (uint64_t)leaf->size + 32, fp2 = fp1 + 64;
	uint64_t pc = base + leaf->off + 4, ra1 = base + framed->off + 8;
	uint64_t ra2 = base + framed->off + 12, ra3 = base + framed->off + 16;
	uint64_t signed1 = sign(ra1, s), signed2 = sign(ra2, fp1 + 16),
		 signed3 = sign(ra3, fp2 + 16);
	put_stack(fp1, fp2);
	put_stack(fp1 + 8, signed2);
	put_stack(fp2, 0);
	put_stack(fp2 + 8, signed3);
	struct swa_capture cap = {.stack_lo = STACK_BASE,
				  .stack_hi = STACK_BASE + STACK_SIZE,
				  .copy = stack,
				  .copy_len = STACK_SIZE,
				  .copy_cap = STACK_SIZE};
	cap.regs.pc = pc;
	swa_regs_set(&cap.regs, SWA_REG_SP, s);
	swa_regs_set(&cap.regs, SWA_REG_FP, fp1);
	swa_regs_set(&cap.regs, SWA_REG_LR, signed1);
	uint32_t depth = swa_unwind(&cap, frames, 8, &flags);
	CHECK_INT(depth, 4);
	CHECK_INT(frames[0], pc);
	CHECK_INT(frames[1], ra1);
	CHECK_INT(frames[2], ra2);
	CHECK_INT(frames[3], ra3);
	CHECK(flags & SWA_UNWIND_CFI);
	CHECK(!(flags & SWA_UNWIND_TRUNCATED));
	/*
	 * Signed, the stack's return addresses must differ from their values:
	 * a pointer authentication code is a few bits, so one of them is zero
	 * for one value in 128 (CI saw it under qemu, whose keys are random);
	 * three at once, one run in two million.
	 */
	bool signed_ras = signed1 != ra1 || signed2 != ra2 || signed3 != ra3;
	printf("core unwind through the arm64 image%s: %u frames\n",
	       signed_ras ? " (return addresses signed)" : "", depth);
}
#endif

/*
 * A stack whose leaf stopped on the first instruction of a function with
 * DWARF unwind information, called from a frameless function (which
 * pushed rbp, if one did), called from a function with a frame record,
 * called from the outermost frame: the walk must give all four.
 */
static void check_core_unwind(enum swa_cu_arch arch)
{
#if defined(__x86_64__)
	const struct fn *leaf = pick(SWA_CU_X86_64_MODE_DWARF, false);
	const struct fn *frameless = pick(SWA_CU_X86_64_MODE_IMMD, true);
	const struct fn *framed = pick(SWA_CU_X86_64_MODE_RBP, false);
	uint64_t base = rt(image_vmaddr), frames[8];
	uint32_t flags;
	if (arch != SWA_CU_X86_64)
		return;
	if (!frameless)
		frameless = pick(SWA_CU_X86_64_MODE_IMMD, false);
	CHECK(leaf && frameless && framed && eh_frame_addr);
	if (!leaf || !frameless || !framed)
		return;
	core_image = (struct swa_image){.lo = base,
					.hi = base + code_end,
					.slide = base - image_vmaddr,
					.text_vmaddr = image_vmaddr,
					.unwind_kind = SWA_UNWIND_KIND_MACHO,
					.unwind_info = rt(unwind_info_addr),
					.unwind_info_size = unwind_info_size,
					.eh_frame = rt(eh_frame_addr),
					.eh_frame_size = eh_frame_size};
	swa_mem_invalidate();
	memset(stack, 0, sizeof(stack));
	uint64_t s = STACK_BASE + 0x1000, ra1 = base + frameless->off + 2;
	uint64_t ra2 = base + framed->off + 2, ra3 = base + framed->off + 3;
	uint64_t ra2_at = s + 8 + (uint64_t)frameless->size - 8, fp = ra2_at + 8 + 32;
	put_stack(s, ra1);
	put_stack(ra2_at, ra2);
	if (strstr(frameless->pushes, "rbp")) {
		/* rbp's slot: its place among the pushes, first push just below the return address
		 */
		char pushes[64], *save = NULL;
		uint64_t at = ra2_at;
		snprintf(pushes, sizeof(pushes), "%s", frameless->pushes);
		for (char *r = strtok_r(pushes, ",", &save); r; r = strtok_r(NULL, ",", &save)) {
			at -= 8;
			if (!strcmp(r, "rbp"))
				put_stack(at, fp);
		}
	}
	put_stack(fp, 0);
	put_stack(fp + 8, ra3);
	struct swa_capture cap = {.stack_lo = STACK_BASE,
				  .stack_hi = STACK_BASE + STACK_SIZE,
				  .copy = stack,
				  .copy_len = STACK_SIZE,
				  .copy_cap = STACK_SIZE};
	cap.regs.pc = base + leaf->off;
	swa_regs_set(&cap.regs, SWA_REG_SP, s);
	swa_regs_set(&cap.regs, SWA_REG_FP, fp);
	uint32_t depth = swa_unwind(&cap, frames, 8, &flags);
	CHECK_INT(depth, 4);
	CHECK_INT(frames[0], base + leaf->off);
	CHECK_INT(frames[1], ra1);
	CHECK_INT(frames[2], ra2);
	CHECK_INT(frames[3], ra3);
	CHECK(flags & SWA_UNWIND_CFI);
	CHECK(!(flags & SWA_UNWIND_TRUNCATED));
	/* stopped on the frameless function's first instruction: its caller is on top */
	put_stack(s, ra2);
	cap.regs.pc = base + frameless->off;
	depth = swa_unwind(&cap, frames, 8, &flags);
	CHECK_INT(depth, 3);
	CHECK_INT(frames[0], base + frameless->off);
	CHECK_INT(frames[1], ra2);
	CHECK_INT(frames[2], ra3);
	/* a garbage return address (a prologue read by the body's rule) is refused */
	put_stack(s, 0x4141414141414141ull);
	depth = swa_unwind(&cap, frames, 8, &flags);
	CHECK(depth < 2 || frames[1] != 0x4141414141414141ull);
	printf("core unwind through the x86_64 image: ok\n");
#elif defined(__aarch64__)
	core_unwind_arm64(arch);
#else
	(void)arch;
	printf("core unwind through the image: not on this host\n");
#endif
}

int main(int argc, char **argv)
{
	enum swa_cu_arch arch;
	if (argc != 4) {
		fprintf(stderr, "usage: test-unwind-compact arm64|x86_64 IMAGE REF\n");
		return 2;
	}
	arch = strcmp(argv[1], "arm64") == 0 ? SWA_CU_ARM64 : SWA_CU_X86_64;
	load_image(argv[2]);
	load_ref(argv[3]);
	check_lookups();
	check_steps(arch);
	check_synthetic_sections();
	check_permutations();
	check_core_unwind(arch);
	return sw_test_end();
}
