/*
 * Pointer authentication and the agent's core, on aarch64 under
 * `qemu-aarch64 -cpu max` (tests/test-agent.py's pac scenario builds and
 * runs it):
 *
 * - swa_arch_strip() gives back the address that PACIA and PACIB (the A
 *   and B keys, the modifier a stack pointer as pac-ret uses) signed, for
 *   addresses 39 bits wide (iOS's user space) and 47 bits wide (macOS's),
 *   and clears bits planted in the PAC field;
 * - swa_arch_frame_pointer() clears bit 60 (a Swift async frame) and the
 *   bits above it, and says it saw one;
 * - swa_unwind() walks a frame-pointer chain whose return addresses and
 *   link register are signed and one of whose saved frame pointers has bit
 *   60 set: every frame comes out stripped, the sample flagged async.
 *
 * What this cannot show: where the PAC field starts is the kernel's choice
 * (the address width it configures), and qemu's user mode runs Linux's
 * 48-bit layout, so a real PAC lands in bits 48-54 here, where on iOS it
 * starts at bit 39.  XPACLRI strips whatever field the running system
 * has, which is why the core uses it rather than a mask.
 *
 * With "nopac" (run on a core without pointer authentication, such as
 * -cpu cortex-a57) only the stripping is checked: XPACLRI must be a no-op
 * there.  The signing instructions are emitted by encoding, so that the
 * file builds for the base architecture.
 */
#include <errno.h>
#include <string.h>

#include "test.h"
#include "unwind.h"

#if !defined(__aarch64__)
#error "test-agent-pac runs on aarch64 (under qemu-aarch64)"
#endif

static uint64_t pacia(uint64_t v, uint64_t modifier)
{
	register uint64_t x0 __asm__("x0") = v;
	register uint64_t x1 __asm__("x1") = modifier;
	__asm__(".inst 0xdac10020" : "+r"(x0) : "r"(x1)); /* pacia x0, x1 */
	return x0;
}

static uint64_t pacib(uint64_t v, uint64_t modifier)
{
	register uint64_t x0 __asm__("x0") = v;
	register uint64_t x1 __asm__("x1") = modifier;
	__asm__(".inst 0xdac10420" : "+r"(x0) : "r"(x1)); /* pacib x0, x1 */
	return x0;
}

/* Code ranges of a fake image: 39-bit (iOS) and 47-bit (macOS) addresses. */
static const uint64_t code_39 = 0x0000007123400000ull, code_47 = 0x00007ff123400000ull;
#define CODE_SIZE 0x100000u

static struct swa_image image;

int swa_plat_read(uint64_t addr, void *dst, size_t len)
{
	return -EFAULT; /* nothing outside the stack copy is read here */
}

const struct swa_image *swa_images_find(uint64_t pc)
{
	return pc >= image.lo && pc < image.hi ? &image : NULL;
}

static void check_strip(uint64_t addr, bool pac)
{
	uint64_t modifier = 0x0000fffff0001230ull;
	CHECK_INT(swa_arch_strip(addr), addr);
	if (!pac) {
		/* a core without PAC: XPACLRI is a no-op, even on set high bits */
		CHECK_INT(swa_arch_strip(addr | 0x007f000000000000ull),
			  addr | 0x007f000000000000ull);
		return;
	}
	uint64_t a = pacia(addr, modifier), b = pacib(addr, modifier);
	uint64_t a2 = pacia(addr, modifier + 16);
	/*
	 * signing did something: a PAC is 7 bits here, zero for one value in
	 * 128, so a few modifiers (all four unchanged: one in 268 million)
	 */
	bool changed = false;
	for (uint64_t m = 0; !changed && m < 64; m += 16)
		changed = pacia(addr, modifier + m) != addr;
	CHECK(changed);
	CHECK_INT(swa_arch_strip(a), addr);
	CHECK_INT(swa_arch_strip(a2), addr);
	CHECK_INT(swa_arch_strip(b), addr);
	/* bits planted in the running system's PAC field, not a real PAC */
	CHECK_INT(swa_arch_strip(addr | 0x007f000000000000ull), addr);
	CHECK_INT(swa_arch_strip(addr | 0x0001000000000000ull), addr);
}

static void check_async_bit(uint64_t fp)
{
	int async = 0;
	CHECK_INT(swa_arch_frame_pointer(fp, &async), fp);
	CHECK_INT(async, 0);
	CHECK_INT(swa_arch_frame_pointer(fp | 1ull << 60, &async), fp);
	CHECK_INT(async, 1);
	async = 0;
	CHECK_INT(swa_arch_frame_pointer(fp | 0xfull << 60, &async), fp);
	CHECK_INT(async, 1);
}

static uint64_t stack_words[512];

/*
 * A leaf stopped before saving lr (signed with the A key), its caller's
 * frame record holding a B-key return address and a saved frame pointer
 * marked async, the next record an A-key return address, then the end.
 */
static void check_unwind(uint64_t code)
{
	uint64_t lo = (uint64_t)(uintptr_t)stack_words, frames[8];
	uint64_t sp = lo + 64, fp1 = lo + 256, fp2 = lo + 1024;
	uint64_t pc = code + 0x40, ra0 = code + 0x1004, ra1 = code + 0x2008, ra2 = code + 0x300c;
	uint32_t flags = 0;
	image = (struct swa_image){.lo = code, .hi = code + CODE_SIZE};
	memset(stack_words, 0, sizeof(stack_words));
	stack_words[(fp1 - lo) / 8] = fp2 | 1ull << 60;
	stack_words[(fp1 - lo) / 8 + 1] = pacib(ra1, fp1 + 16);
	stack_words[(fp2 - lo) / 8] = 0;
	stack_words[(fp2 - lo) / 8 + 1] = pacia(ra2, fp2 + 16);
	struct swa_capture cap = {.stack_lo = lo,
				  .stack_hi = lo + sizeof(stack_words),
				  .copy = (uint8_t *)stack_words,
				  .copy_len = sizeof(stack_words),
				  .copy_cap = sizeof(stack_words)};
	cap.regs.pc =
	    pacia(pc, sp); /* a held thread's pc is not signed; stripping it is harmless */
	swa_regs_set(&cap.regs, SWA_REG_SP, sp);
	swa_regs_set(&cap.regs, SWA_REG_FP, fp1);
	swa_regs_set(&cap.regs, SWA_REG_LR, pacia(ra0, sp));
	uint32_t depth = swa_unwind(&cap, frames, 8, &flags);
	CHECK_INT(depth, 4);
	CHECK_INT(frames[0], pc);
	CHECK_INT(frames[1], ra0);
	CHECK_INT(frames[2], ra1);
	CHECK_INT(frames[3], ra2);
	CHECK(flags & SWA_UNWIND_LEAF_FROM_LR);
	CHECK(flags & SWA_UNWIND_ASYNC);
	CHECK(!(flags & SWA_UNWIND_TRUNCATED));
}

int main(int argc, char **argv)
{
	bool pac = !(argc > 1 && strcmp(argv[1], "nopac") == 0);
	const uint64_t addrs[] = {code_39, code_39 + 0x7ffffc, 0x0000007ffffffff0ull, code_47,
				  0x00007ffffffffff0ull};
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		check_strip(addrs[i], pac);
		check_async_bit(addrs[i] & ~15ull);
	}
	if (pac) {
		check_unwind(code_39);
		check_unwind(code_47);
	}
	printf("pac %s\n", pac ? "on" : "off");
	return sw_test_end();
}
