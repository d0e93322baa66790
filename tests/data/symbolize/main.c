/* Oracle fixture: static functions, three-deep always_inline chains, calls across units. */
#include <stdio.h>
#include <stdlib.h>

#include "fixture.h"

static inline __attribute__((always_inline)) int leaf(int x)
{
	if (x & 1)
		x = x * 3 + 1;
	return x + printf("leaf %d\n", x);
}

static inline __attribute__((always_inline)) int middle(int x)
{
	int y = leaf(x + 1);
	return y * 2 + leaf(y);
}

static inline __attribute__((always_inline)) int top(int x)
{
	int z = middle(x) + 7;
	if (z > 100)
		z -= middle(z);
	return z;
}

static __attribute__((noinline)) int static_worker(int n)
{
	int acc = 0;
	for (int i = 0; i < n; i++)
		acc += top(i);
	return acc;
}

static __attribute__((noinline)) long static_sum(const int *v, int n)
{
	long s = 0;
	for (int i = 0; i < n; i++)
		s += v[i] * (long)i;
	return s;
}

int exported_entry(int n)
{
	int v[16];
	for (int i = 0; i < 16; i++)
		v[i] = top(i + n);
	return (int)static_sum(v, 16) + static_worker(n);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3;
	int r = exported_entry(n);
	r += util_mix(r, n);
	r += util_small(r);
	r += cxx_entry(n);
	printf("%d\n", r);
	return 0;
}
