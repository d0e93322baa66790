/*
 * Mach-O compact unwind (__unwind_info): finds a function's 32-bit encoding
 * by its address and takes one step by it, for arm64 and x86_64 images
 * alike (the architecture is the image's, passed in, so that one build can
 * test both).  Portable C: every byte of the image and of the stack comes
 * through the caller's fault-safe read callbacks; nothing allocates.
 */
#ifndef SWA_UNWIND_COMPACT_H
#define SWA_UNWIND_COMPACT_H

#include <stddef.h>
#include <stdint.h>

enum swa_cu_arch {
	SWA_CU_X86_64 = 1,
	SWA_CU_ARM64 = 2,
};

/* Reads len bytes at addr into dst: 0, or -errno when they are not readable. */
typedef int (*swa_cu_read_fn)(void *ctx, uint64_t addr, void *dst, size_t len);

struct swa_cu_reader {
	swa_cu_read_fn read_image; /* the image's memory (__unwind_info, code) */
	swa_cu_read_fn read_stack; /* the stack (a copy, or the live stack) */
	void *ctx;
};

/* One function's entry: its runtime range and its encoding. */
struct swa_cu_entry {
	uint64_t start, end;
	uint32_t encoding;
};

/*
 * Finds the entry covering pc in the __unwind_info section at info (runtime
 * address, size bytes) of the image whose Mach header is at base (offsets
 * in the section are from it).  0 and *ret; -ENOENT when pc is outside
 * every function; -EINVAL on a malformed section; -EFAULT when unreadable.
 */
int swa_cu_find(const struct swa_cu_reader *rd, uint64_t base, uint64_t info, uint64_t size,
		uint64_t pc, struct swa_cu_entry *ret);

/* A frame as compact unwind sees it; lr only on arm64. */
struct swa_cu_frame {
	uint64_t pc, sp, fp, lr;
	int leaf;   /* pc is where the thread stopped, not a return address */
	int has_lr; /* lr is the frame's own (the leaf, or a signal frame) */
};

enum swa_cu_step_result {
	SWA_CU_STEPPED = 1, /* *f now describes the caller */
	SWA_CU_DWARF = 2,   /* the function's FDE is at __eh_frame + *ret_fde_off */
};

/*
 * One step from f by e's encoding.  Returns SWA_CU_STEPPED, SWA_CU_DWARF,
 * -ENOENT when the encoding holds no unwind information (or needs a link
 * register the frame no longer has), -EINVAL for an encoding it cannot use,
 * -EFAULT when the stack or code is unreadable.  Callee-saved registers
 * other than the frame pointer are not tracked.  An encoding describes a
 * function's body, not its prologue; a leaf stopped on its first
 * instruction is known exactly all the same (the return address still in
 * lr, or on top of the stack) and is stepped so.
 */
int swa_cu_step(const struct swa_cu_reader *rd, enum swa_cu_arch arch, const struct swa_cu_entry *e,
		struct swa_cu_frame *f, uint32_t *ret_fde_off);

/* The encodings' fields, from Apple's <mach-o/compact_unwind_encoding.h> layout. */
#define SWA_CU_MODE_MASK            0x0f000000u
#define SWA_CU_ARM64_MODE_FRAMELESS 0x02000000u
#define SWA_CU_ARM64_MODE_DWARF     0x03000000u
#define SWA_CU_ARM64_MODE_FRAME     0x04000000u
#define SWA_CU_X86_64_MODE_RBP      0x01000000u
#define SWA_CU_X86_64_MODE_IMMD     0x02000000u
#define SWA_CU_X86_64_MODE_IND      0x03000000u
#define SWA_CU_X86_64_MODE_DWARF    0x04000000u
#define SWA_CU_DWARF_OFFSET_MASK    0x00ffffffu

#endif
