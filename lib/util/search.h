/*
 * Searching arrays sorted by a 64-bit key for a run of lookups at rising
 * addresses (a sorted batch of addresses): each lookup starts where the
 * last one ended, so it mostly takes a step or none and touches the cache
 * lines the last one did.
 */
#ifndef SW_UTIL_SEARCH_H
#define SW_UTIL_SEARCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The key of element i of an array of elements of size stride, at offset off in each. */
static inline uint64_t sw_key_at(const void *base, size_t stride, size_t off, size_t i)
{
	uint64_t k;
	memcpy(&k, (const char *)base + i * stride + off, sizeof(k));
	return k;
}

/*
 * How many of the n elements have a key at most key, knowing that the
 * first `from` do: steps forward of 1, 2, 4, ... from there, then a binary
 * search of the last step, so the search stays near where it starts.
 * base may be NULL when n is 0.
 */
static inline size_t sw_upper_bound_from(const void *base, size_t stride, size_t off, size_t n,
					 size_t from, uint64_t key)
{
	size_t lo = from, step = 1;
	/* every element before lo is at most key */
	while (lo < n && sw_key_at(base, stride, off, lo) <= key) {
		size_t next = n - lo > step ? lo + step : n;
		if (next == n || sw_key_at(base, stride, off, next) > key) {
			size_t hi = next;
			lo++;
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;
				if (sw_key_at(base, stride, off, mid) <= key)
					lo = mid + 1;
				else
					hi = mid;
			}
			return lo;
		}
		lo = next + 1;
		step *= 2;
	}
	return lo;
}

#endif
