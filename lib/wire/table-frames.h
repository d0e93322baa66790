/*
 * The frames of a recording's stack table, for its reader and its writer:
 * copies kept in blocks that never move (the table's entries point into
 * them) and are freed together.
 */
#ifndef SW_WIRE_TABLE_FRAMES_H
#define SW_WIRE_TABLE_FRAMES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SW_TABLE_BLOCK ((size_t)65536) /* frames: half a megabyte */

struct sw_table_block {
	struct sw_table_block *next;
	size_t used, cap;
	uint64_t frames[];
};

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
		b = malloc(sizeof(*b) + cap * sizeof(b->frames[0]));
		if (!b)
			return NULL;
		*b = (struct sw_table_block){.next = t->blocks, .cap = cap};
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
		free(t->blocks);
		t->blocks = next;
	}
}

#endif
