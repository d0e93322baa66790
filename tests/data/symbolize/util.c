/* Oracle fixture: a second C unit with its own inlines and a table of functions. */
#include <string.h>

#include "fixture.h"

static inline __attribute__((always_inline)) unsigned rotl(unsigned x, int k)
{
	return (x << k) | (x >> (32 - k));
}

static inline __attribute__((always_inline)) unsigned scramble(unsigned x)
{
	x ^= rotl(x, 7);
	x += rotl(x, 13) * 5u;
	return x;
}

#define F(n)                                                                                       \
	static __attribute__((noinline)) unsigned f##n(unsigned x)                                 \
	{                                                                                          \
		return scramble(x + n) ^ (x >> (n % 7));                                           \
	}
F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11) F(12) F(13) F(14) F(15)

static unsigned (*const table[])(unsigned) = {f0, f1, f2,  f3,  f4,  f5,  f6,  f7,
					       f8, f9, f10, f11, f12, f13, f14, f15};

int util_mix(int a, int b)
{
	unsigned acc = (unsigned)a;
	char buf[64];
	memset(buf, b, sizeof(buf));
	for (int i = 0; i < 64; i++)
		acc = table[(acc + (unsigned char)buf[i]) % 16](acc);
	return (int)acc;
}

/* Small enough for LTO to inline into main.c: a cross-unit abstract origin. */
int util_small(int a)
{
	return scramble((unsigned)a) % 1000;
}
