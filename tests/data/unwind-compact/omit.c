/*
 * Functions built without frame pointers (tests/test-unwind-compact.py
 * compiles this file with -fomit-frame-pointer): leaves, frameless
 * functions with small and large stack frames (x86_64 keeps the size of a
 * large one in its `sub` instruction), and ones that save many registers
 * (the permutation of the pushes; some fall back to DWARF).
 */
volatile int sink;
int ext(int x);
int framed(int x);

__attribute__((noinline)) int leaf(int x)
{
	return x * 3 + sink;
}

__attribute__((noinline)) int small_frame(int x)
{
	volatile char buf[40];
	buf[x & 31] = 1;
	return ext(buf[(x + 1) & 31]) + 1;
}

__attribute__((noinline)) int medium_frame(int x)
{
	volatile char buf[1000];
	buf[x & 511] = 1;
	return ext(buf[(x + 1) & 511]);
}

__attribute__((noinline)) int large_frame(int x)
{
	volatile char buf[70000];
	buf[x & 4095] = 1;
	return ext(buf[(x + 1) & 4095]);
}

__attribute__((noinline)) int huge_frame(int x)
{
	volatile char buf[1 << 20];
	buf[x & 4095] = 1;
	return framed(buf[(x + 1) & 4095]);
}

__attribute__((noinline)) int saves_many(int a, int b, int c, int d, int e, int f)
{
	int r = ext(a);
	r += ext(b) * a;
	r += ext(c) * b;
	r += ext(d) * c;
	r += ext(e) * d;
	r += ext(f) * e;
	return r + a + b + c + d + e + f;
}

__attribute__((noinline)) long saves_six(long a, long b, long c, long d, long e, long f)
{
	long v[6] = {a, b, c, d, e, f};
	long r = 0;
	for (int i = 0; i < 6; i++)
		r += ext((int)v[i]) * v[(i + 1) % 6];
	return r + a * b + c * d + e * f + ext((int)(a ^ f));
}

__attribute__((noinline)) int saves_one(int x)
{
	int y = sink;
	return ext(x) + y;
}
