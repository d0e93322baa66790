/*
 * Functions built with frame pointers (tests/test-unwind-compact.py
 * compiles this file with -fno-omit-frame-pointer), and enough small ones,
 * alternating leaf and non-leaf so the linker cannot fold their entries,
 * to need more than one second-level page of __unwind_info.
 */
extern volatile int sink;
int leaf(int x);
int saves_many(int a, int b, int c, int d, int e, int f);

int ext(int x)
{
	return x + sink;
}

__attribute__((noinline)) int framed(int x)
{
	return leaf(x) + saves_many(x, x, x, x, x, x) + 2;
}

#define PAIR(n)                                                                                    \
	__attribute__((noinline)) int pl##n(int x)                                                 \
	{                                                                                          \
		return x + n;                                                                      \
	}                                                                                          \
	__attribute__((noinline)) int pc##n(int x)                                                 \
	{                                                                                          \
		return pl##n(x) * ext(x) + n;                                                      \
	}
#define PAIR8(n)                                                                                   \
	PAIR(n##0)                                                                                 \
	PAIR(n##1) PAIR(n##2) PAIR(n##3) PAIR(n##4) PAIR(n##5) PAIR(n##6) PAIR(n##7)
#define PAIR64(n)                                                                                  \
	PAIR8(n##0)                                                                                \
	PAIR8(n##1) PAIR8(n##2) PAIR8(n##3) PAIR8(n##4) PAIR8(n##5) PAIR8(n##6) PAIR8(n##7)

PAIR64(1)
PAIR64(2)
PAIR64(3)
PAIR64(4)
PAIR64(5)
PAIR64(6)
PAIR64(7)
PAIR64(8)
PAIR64(9)
PAIR64(10)
PAIR64(11)
PAIR64(12)

int main(void)
{
	return framed(1) + pc1000(2) + pc1277(3);
}
