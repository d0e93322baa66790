/*
 * Tests for the forward search of sorted arrays (util/search.h): from any
 * start that the array allows, it finds what a linear count finds, in
 * arrays with runs of equal keys, keys at the extremes of 64 bits, and
 * elements larger than their key.
 */
#include <stddef.h>

#include "test.h"
#include "util/search.h"

struct elem {
	uint32_t pad;
	uint64_t lo, key;
};

static size_t count_at_most(const struct elem *v, size_t n, uint64_t key)
{
	size_t c = 0;
	while (c < n && v[c].key <= key)
		c++;
	return c;
}

static uint64_t rnd(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

static void check_key(const struct elem *v, size_t n, uint64_t key)
{
	size_t want = count_at_most(v, n, key);
	for (size_t from = 0; from <= want; from++)
		CHECK_INT(
		    sw_upper_bound_from(v, sizeof(*v), offsetof(struct elem, key), n, from, key),
		    want);
}

/* Every key of v, its neighbours and the extremes, from every start at or below the answer. */
static void check_all(const struct elem *v, size_t n)
{
	check_key(v, n, 0);
	check_key(v, n, UINT64_MAX);
	for (size_t i = 0; i < n; i++) {
		check_key(v, n, v[i].key);
		if (v[i].key > 0)
			check_key(v, n, v[i].key - 1);
		if (v[i].key < UINT64_MAX)
			check_key(v, n, v[i].key + 1);
	}
}

int main(void)
{
	/* nothing to search: base may be NULL */
	CHECK_INT(sw_upper_bound_from(NULL, 8, 0, 0, 0, 42), 0);

	struct elem v[300];
	uint64_t state = 0x9e3779b97f4a7c15ull;
	for (int round = 0; round < 40; round++) {
		size_t n = 1 + (size_t)(rnd(&state) % 300);
		uint64_t k = round % 3 == 0 ? 0 : rnd(&state) % 1000;
		for (size_t i = 0; i < n; i++) {
			/* runs of equal keys, gaps of every size up to the largest key */
			uint64_t gap =
			    rnd(&state) % 4 == 0 ? 0 : rnd(&state) % (round % 2 ? 3 : 100);
			k = UINT64_MAX - k < gap ? UINT64_MAX : k + gap;
			v[i] = (struct elem){.pad = 0xdeadbeef, .lo = ~k, .key = k};
		}
		if (round == 39)
			v[n - 1].key = UINT64_MAX;
		check_all(v, n);
	}
	return sw_test_end();
}
