/* Oracle fixture without a C library, for 32-bit and big-endian targets. */
static inline __attribute__((always_inline)) unsigned leaf(unsigned x)
{
	return x * 2654435761u ^ (x >> 7);
}

static inline __attribute__((always_inline)) unsigned middle(unsigned x)
{
	return leaf(x + 1) + leaf(x ^ 0x55);
}

static inline __attribute__((always_inline)) unsigned top(unsigned x)
{
	unsigned y = middle(x);
	return y > 1000 ? middle(y) : y;
}

static __attribute__((noinline)) unsigned worker(unsigned n)
{
	unsigned acc = 0;
	for (unsigned i = 0; i < n; i++)
		acc += top(i);
	return acc;
}

volatile unsigned sink;

void _start(void)
{
	sink = worker(sink);
	for (;;)
		;
}
