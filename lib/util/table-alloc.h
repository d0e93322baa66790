/*
 * Zeroed memory for a hash table, whose slots are read (probed) before they
 * are written.  Fresh pages from calloc() are the kernel's shared zero page
 * on the first read and fault a second time on the first write; a large
 * table is made writable up front instead, in one call.  Kernels before
 * 5.14 refuse the request, and the table faults in as before.
 */
#ifndef SW_UTIL_TABLE_ALLOC_H
#define SW_UTIL_TABLE_ALLOC_H

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define SW_TABLE_POPULATE_MIN ((size_t)256 << 10)

static inline void *sw_table_alloc(size_t n, size_t size)
{
	void *p = calloc(n, size);
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
