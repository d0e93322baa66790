/*
 * A spare block: the largest of the blocks of one kind that were let go,
 * which the next user of that kind takes instead of new pages (a stall's
 * samples, a whole tree's nodes, a stall's raw NDJSON fields: megabytes
 * each, once a stall, which mapped anew would fault in every time).
 */
#ifndef SW_UTIL_SPARE_H
#define SW_UTIL_SPARE_H

#include <stddef.h>
#include <stdlib.h>

struct sw_spare {
	void *block; /* malloc'ed, or NULL */
	size_t cap;  /* its size, in the owner's units */
};

/* Keeps block (malloc'ed, cap units; NULL: none) when larger than the spare; frees the smaller. */
static inline void sw_spare_keep(struct sw_spare *s, void *block, size_t cap)
{
	if (block && cap > s->cap) {
		free(s->block);
		*s = (struct sw_spare){block, cap};
	} else {
		free(block);
	}
}

/* The spare block when it has at least min units (*ret_cap of them), now the caller's; or NULL. */
static inline void *sw_spare_take(struct sw_spare *s, size_t min, size_t *ret_cap)
{
	void *block = s->block && s->cap >= min ? s->block : NULL;
	*ret_cap = block ? s->cap : 0;
	if (block)
		*s = (struct sw_spare){NULL, 0};
	return block;
}

#endif
