/*
 * Zeroed memory for a hash table, whose slots are read (probed) before they
 * are written.  Fresh pages from calloc() are the kernel's shared zero page
 * on the first read and fault a second time on the first write; a large
 * table is made writable up front instead, in one call.  Kernels before
 * 5.14 refuse the request, and the table faults in as before.
 *
 * Tables of 2 MB and more are probed at random over more pages than the
 * TLB holds: they ask for huge pages first (a miss in the TLB costs as much
 * as the one in the cache, and one fault fills 2 MB).  Where the kernel
 * gives none (transparent huge pages off), nothing changes.
 */
#ifndef SW_UTIL_TABLE_ALLOC_H
#define SW_UTIL_TABLE_ALLOC_H

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define SW_TABLE_POPULATE_MIN ((size_t)256 << 10)
#define SW_HUGE_PAGE          ((size_t)2 << 20)

/* Asks for huge pages over the whole huge pages of [p, p + size) (Linux). */
static inline void sw_huge_pages(void *p, size_t size)
{
#ifdef MADV_HUGEPAGE
	uintptr_t start = ((uintptr_t)p + SW_HUGE_PAGE - 1) & ~(SW_HUGE_PAGE - 1),
		  end = ((uintptr_t)p + size) & ~(SW_HUGE_PAGE - 1);
	if (end > start)
		madvise((void *)start, end - start, MADV_HUGEPAGE);
#else
	(void)p;
	(void)size;
#endif
}

static inline void *sw_table_alloc(size_t n, size_t size)
{
	void *p = calloc(n, size);
	if (p && n * size >= SW_HUGE_PAGE)
		sw_huge_pages(p, n * size); /* before the pages are made: populated as huge */
#ifdef MADV_POPULATE_WRITE
	if (p && n * size >= SW_TABLE_POPULATE_MIN) {
		uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
		uintptr_t start = ((uintptr_t)p + page - 1) & ~(page - 1),
			  end = ((uintptr_t)p + n * size) & ~(page - 1);
		if (end > start)
			madvise((void *)start, end - start, MADV_POPULATE_WRITE);
	}
#endif
	return p;
}

#endif
