/*
 * The frames of a recording's stack table, for its reader and its writer:
 * copies kept in blocks that never move (the table's entries point into
 * them) and are freed together.  A block is a huge page where the kernel
 * gives them (util/table-alloc.h): a table of 6.4M frames is read at
 * random, entry by entry, and took 12,500 page faults in 4 KB pages.
 */
#ifndef SW_WIRE_TABLE_FRAMES_H
#define SW_WIRE_TABLE_FRAMES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util/table-alloc.h"

struct sw_table_block {
	struct sw_table_block *next;
	size_t used, cap;
	bool mapped; /* a huge page of its own, not from malloc() */
	uint64_t frames[];
};

/* The frames of a block, header included: one huge page, aligned as one. */
#define SW_TABLE_BLOCK ((SW_HUGE_PAGE - sizeof(struct sw_table_block)) / sizeof(uint64_t))

/*
 * SW_HUGE_PAGE bytes aligned as a huge page, asked to be one: mapped
 * twice as large and cut to the aligned part, so that a block reserves no
 * more address space than it holds (aligned_alloc() kept twice as much).
 * NULL: none, for malloc() to do.
 */
static inline void *sw_table_huge_block(void)
{
#ifdef MADV_HUGEPAGE
	size_t size = 2 * SW_HUGE_PAGE;
	char *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	char *start = (char *)(((uintptr_t)m + SW_HUGE_PAGE - 1) & ~(SW_HUGE_PAGE - 1));
	if (start > m)
		munmap(m, (size_t)(start - m));
	if (start + SW_HUGE_PAGE < m + size)
		munmap(start + SW_HUGE_PAGE, (size_t)(m + size - start - SW_HUGE_PAGE));
	sw_huge_pages(start, SW_HUGE_PAGE);
	return start;
#else
	return NULL;
#endif
}

struct sw_table_frames {
	struct sw_table_block *blocks; /* the newest first */
};

/*
 * Room for n frames at the end of t's blocks, kept by
 * sw_table_frames_keep() (the next room starts there until then); NULL:
 * out of memory.
 */
static inline uint64_t *sw_table_frames_room(struct sw_table_frames *t, size_t n)
{
	struct sw_table_block *b = t->blocks;
	if (!b || b->cap - b->used < n) {
		size_t cap = n > SW_TABLE_BLOCK ? n : SW_TABLE_BLOCK;
		void *huge = cap == SW_TABLE_BLOCK ? sw_table_huge_block() : NULL;
		b = huge ? huge : malloc(sizeof(*b) + cap * sizeof(b->frames[0]));
		if (!b)
			return NULL;
		*b = (struct sw_table_block){.next = t->blocks, .cap = cap, .mapped = huge != NULL};
		t->blocks = b;
	}
	return b->frames + b->used;
}

/* Keeps the n frames of the last room, which stay put until sw_table_frames_free(). */
static inline void sw_table_frames_keep(struct sw_table_frames *t, size_t n)
{
	t->blocks->used += n;
}

/* A copy of n frames, which stays put until sw_table_frames_free(); NULL: out of memory. */
static inline const uint64_t *sw_table_frames_copy(struct sw_table_frames *t,
						   const uint64_t *frames, size_t n)
{
	uint64_t *copy = sw_table_frames_room(t, n);
	if (!copy)
		return NULL;
	if (n)
		memcpy(copy, frames, n * sizeof(*copy));
	sw_table_frames_keep(t, n);
	return copy;
}

static inline void sw_table_frames_free(struct sw_table_frames *t)
{
	while (t->blocks) {
		struct sw_table_block *next = t->blocks->next;
		if (t->blocks->mapped)
			munmap(t->blocks, SW_HUGE_PAGE);
		else
			free(t->blocks);
		t->blocks = next;
	}
}

#endif
