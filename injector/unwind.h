/*
 * The agent's unwinder: turns a capture (registers and a copy of the stack)
 * into return addresses, after the thread was released.  Call-frame
 * information from .eh_frame (through the image's .eh_frame_hdr index)
 * where the image has it for the program counter, frame pointers where it
 * does not; both only ever read the stack copy, the stack bounds and image
 * memory through fault-safe reads.  Nothing here allocates or locks.
 */
#ifndef SWA_UNWIND_H
#define SWA_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

#include "platform.h"

/* One loaded image as the unwinder needs it. */
struct swa_image {
	uint32_t index;
	uint64_t lo, hi; /* runtime range of the executable segment */
	uint64_t slide;
	uint64_t text_vmaddr, text_size;
	uint32_t unwind_kind;                   /* swa_unwind_kind */
	uint64_t unwind_info, unwind_info_size; /* Mach-O __unwind_info (runtime), 0 if none */
	uint64_t eh_frame_size;                 /* Mach-O __eh_frame's size */
	uint64_t eh_hdr;                        /* runtime address of .eh_frame_hdr, 0 if none */
	uint64_t eh_table;                      /* its binary-search table, 0 if unusable */
	uint64_t eh_frame; /* .eh_frame (from eh_hdr on ELF, __eh_frame on Mach-O) */
	uint32_t fde_count;
	uint8_t table_enc;
	uint32_t id_kind, id_len;
	uint8_t id[32];
	char *path;
	bool seen;
	bool announced;
	bool gone;   /* unloaded, removal not announced yet */
	bool loader; /* the dynamic loader: its lock may be held */
	bool hints;  /* send symbol hints for its frames (the host has no copy) */
};

/* Finds the image whose executable segment holds pc (images.c). */
const struct swa_image *swa_images_find(uint64_t pc);

/* Reads image memory through a small page cache (fault-safe). */
int swa_mem_read(uint64_t addr, void *dst, size_t len);
void swa_mem_invalidate(void);

enum swa_unwind_flags {
	SWA_UNWIND_TRUNCATED = 1u << 0,
	SWA_UNWIND_LEAF_FROM_LR = 1u << 1,
	SWA_UNWIND_CFI = 1u << 2,
	SWA_UNWIND_ASYNC = 1u << 3, /* a Swift async frame (bit 60 of a saved fp) was crossed */
};

/*
 * Unwinds cap into frames (leaf first, at most max); returns the depth and
 * sets *ret_flags (swa_unwind_flags).
 */
uint32_t swa_unwind(const struct swa_capture *cap, uint64_t *frames, uint32_t max,
		    uint32_t *ret_flags);

/* ---- internal to the unwinder ---- */

struct swa_unwind_ctx {
	const struct swa_capture *cap;
	bool live_reads; /* read the live stack beyond the copy */
	bool async;      /* crossed a Swift async frame */
};

/* Reads 8 bytes of stack at addr: from the copy, else fault-safely. */
int swa_stack_read(struct swa_unwind_ctx *uc, uint64_t addr, uint64_t *ret);

/*
 * One step by call-frame information: regs describe a frame whose program
 * counter is regs->pc; on success they describe its caller.  Returns 1 on a
 * step, 0 when the frame is the outermost (return address undefined), and
 * -errno when there is no usable information.  *signal_frame tells whether
 * the frame was a signal frame (the caller's pc is then not a return address).
 */
int swa_cfi_step(struct swa_unwind_ctx *uc, const struct swa_image *im, struct swa_regs *regs,
		 bool pc_is_return, bool *ret_signal_frame);

/*
 * The same step by the FDE at fde_at (Mach-O's compact unwind names one in
 * __eh_frame instead of an .eh_frame_hdr table); -ENOENT when it does not
 * cover the program counter.
 */
int swa_cfi_step_fde(struct swa_unwind_ctx *uc, uint64_t fde_at, struct swa_regs *regs,
		     bool pc_is_return, bool *ret_signal_frame);

/* Finds the FDE covering pc in im's .eh_frame_hdr table: its address or 0. */
uint64_t swa_cfi_find_fde(const struct swa_image *im, uint64_t pc);
/* Parses im->eh_hdr into the table fields; 0 or -errno. */
int swa_cfi_index(struct swa_image *im);

#endif
