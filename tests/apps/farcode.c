/*
 * A program with code in a second executable segment, for the agent's
 * tests: far_outer() and far_inner() live in their own section, which the
 * test links far from .text (-Wl,--section-start), so the linker gives it
 * a PT_LOAD of its own.  The loop idles, far_outer() spins 400 ms inside
 * one iteration, the loop idles again.
 */
#include <poll.h>
#include <stdio.h>
#include <time.h>

#define FAR __attribute__((noinline, section("fartext")))

static volatile unsigned long sink;

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

FAR void far_inner(int ms);
FAR void far_inner(int ms)
{
	long long end = now_ms() + ms;
	while (now_ms() < end)
		sink++;
	sink++;
}

FAR void far_outer(int ms);
FAR void far_outer(int ms)
{
	far_inner(ms);
	sink++;
}

/* the loop's one wait */
__attribute__((noinline)) static void idle(int n)
{
	for (int i = 0; i < n; i++)
		poll(NULL, 0, 10);
}

int main(void)
{
	idle(20);
	far_outer(400);
	idle(20);
	printf("done\n");
	return 0;
}
