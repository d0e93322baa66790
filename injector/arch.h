/*
 * The processor architectures the agent unwinds, described by DWARF register
 * numbers: the register file a capture fills and the unwinder restores.
 * Architecture, not operating system: the same numbers serve Linux and Darwin.
 */
#ifndef SWA_ARCH_H
#define SWA_ARCH_H

#include <stdint.h>

#if defined(__x86_64__)
#define SWA_ARCH_NAME "x86_64"
#define SWA_NREGS     17 /* rax..r15, and 16 = return address column (rip) */
#define SWA_REG_SP    7
#define SWA_REG_FP    6
#define SWA_REG_RA    16
#elif defined(__aarch64__)
#define SWA_ARCH_NAME "arm64"
#define SWA_NREGS     33 /* x0..x30, 31 = sp, 32 = pc (not a DWARF column) */
#define SWA_REG_SP    31
#define SWA_REG_FP    29
#define SWA_REG_LR    30
#define SWA_REG_RA    30
#else
#error "the stallwatch agent supports x86_64 and aarch64"
#endif

struct swa_regs {
	uint64_t pc;
	uint64_t r[SWA_NREGS];
	uint64_t valid; /* bit n: r[n] is known */
};

static inline void swa_regs_set(struct swa_regs *regs, unsigned n, uint64_t v)
{
	regs->r[n] = v;
	regs->valid |= 1ull << n;
}

static inline int swa_regs_has(const struct swa_regs *regs, unsigned n)
{
	return n < SWA_NREGS && (regs->valid >> n) & 1;
}

/*
 * Code addresses (return addresses, a held thread's pc and lr) may carry
 * pointer-authentication bits (arm64e, Linux aarch64 with
 * -mbranch-protection=pac-ret).  Where they start depends on the system's
 * address width (39 bits on iOS, 47 on macOS, 48 or 52 on Linux), so no
 * mask is right everywhere: XPACLRI (hint #7) strips exactly the PAC field
 * of the running system and is a no-op on cores without PAC.
 */
static inline uint64_t swa_arch_strip(uint64_t v)
{
#if defined(__aarch64__)
	register uint64_t lr __asm__("x30") = v;
	__asm__("hint #7" : "+r"(lr));
	return lr;
#else
	return v;
#endif
}

/*
 * A saved frame pointer with bit 60 set marks a Swift async frame (the
 * caller's context is an async context, not a stack frame) on arm64 and
 * x86_64 alike: bits 60-63 are cleared, the walk goes on, and the sample
 * says it crossed one.
 */
#define SWA_ASYNC_FRAME_BIT (1ull << 60)

static inline uint64_t swa_arch_frame_pointer(uint64_t v, int *ret_async)
{
	if (v & SWA_ASYNC_FRAME_BIT)
		*ret_async = 1;
	return v & ~(0xfull << 60);
}

#endif
