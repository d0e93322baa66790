/*
 * A library the test app loads with dlopen() just before it stalls in it:
 * the agent must learn the new image (its unwind tables, its build id) in
 * time for that stall.
 */
#include <time.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline, visibility("default")))
#else
#define NOINLINE __attribute__((noinline, noclone, visibility("default")))
#endif

static volatile unsigned long sink;

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

NOINLINE void plugin_inner(int ms);
NOINLINE void plugin_inner(int ms)
{
	long long end = now_ns() + ms * 1000000LL;
	while (now_ns() < end)
		sink++;
	sink += 1;
}

NOINLINE void plugin_outer(int ms);
NOINLINE void plugin_outer(int ms)
{
	plugin_inner(ms);
	sink += 2;
}
