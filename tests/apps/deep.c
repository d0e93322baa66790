/*
 * Deep recursion for the agent's tests: `deep N...` recurses N deep with
 * 200-byte frames and spins 400 ms at the bottom, once per argument, with
 * the loop idle between.  3000 deep is about 700 KiB of stack: past the
 * agent's first stack copy (256 KiB) and its frame limit (512).
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;

NOINLINE static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

NOINLINE static void deep_spin(int ms)
{
	long long end = now_ms() + ms;
	while (now_ms() < end)
		sink++;
	sink++;
}

NOINLINE int deep_recurse(int n, int ms);
NOINLINE int deep_recurse(int n, int ms)
{
	volatile char pad[200];
	pad[0] = (char)n;
	if (n <= 1)
		deep_spin(ms);
	else
		deep_recurse(n - 1, ms);
	return pad[0] + (int)(sink & 1);
}

NOINLINE static void deep_outer(int n)
{
	deep_recurse(n, 400);
	sink++;
}

NOINLINE static void idle(int n)
{
	for (int i = 0; i < n; i++)
		poll(NULL, 0, 10);
}

int main(int argc, char **argv)
{
	idle(10);
	for (int i = 1; i < argc; i++) {
		deep_outer(atoi(argv[i]));
		idle(30);
	}
	printf("done\n");
	return 0;
}
