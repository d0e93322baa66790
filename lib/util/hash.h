/*
 * Hashing runs of 64-bit words (raw stacks: return addresses), shared by the
 * collector and the report's memo.
 */
#ifndef SW_UTIL_HASH_H
#define SW_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t sw_hash_step(uint64_t h, uint64_t v)
{
	h = (h ^ v) * 0xff51afd7ed558ccdull;
	return h ^ (h >> 29);
}

/*
 * Every word counts (a recording chooses its stacks: a hash of some frames
 * only could be made to collide), in four independent lanes, so a deep
 * stack costs a quarter of one multiply chain.
 */
static inline uint64_t sw_hash_u64s(const uint64_t *v, size_t n, uint64_t seed)
{
	uint64_t h[4] = {0x84222325cbf29ce4ull ^ seed, 0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full,
			 0x165667b19e3779f9ull ^ n};
	size_t k = 0;
	for (; k + 4 <= n; k += 4)
		for (int l = 0; l < 4; l++)
			h[l] = sw_hash_step(h[l], v[k + l]);
	for (; k < n; k++)
		h[0] = sw_hash_step(h[0], v[k]);
	return sw_hash_step(sw_hash_step(sw_hash_step(h[0], h[1]), h[2]), h[3]);
}

#endif
