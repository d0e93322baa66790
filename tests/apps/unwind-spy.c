/*
 * Preloaded beside the agent by test-agent.py's "hook" scenario: the C
 * runtime's unwinder, slowed down on the main thread.  Each main-thread
 * call of _Unwind_Backtrace spins SW_UNWIND_SPY_MS milliseconds before the
 * real unwinder runs, and appends "unwind BEGIN END" (CLOCK_MONOTONIC
 * nanoseconds) to the file SW_UNWIND_SPY names.  The agent's reference
 * binds here: a preloaded library comes before libgcc_s in the lookup
 * order.  Samples taken during the spin show where the agent's wait hook
 * unwinds, and whether that time falls inside a stall.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct _Unwind_Context;
typedef int (*trace_fn)(struct _Unwind_Context *, void *);

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) static void spy_spin(long long until)
{
	while (now_ns() < until)
		;
}

__attribute__((visibility("default"))) int _Unwind_Backtrace(trace_fn fn, void *arg);
int _Unwind_Backtrace(trace_fn fn, void *arg)
{
	static int (*real)(trace_fn, void *);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "_Unwind_Backtrace");
	if (!real)
		abort();
	if (gettid() != getpid())
		return real(fn, arg);
	const char *ms = getenv("SW_UNWIND_SPY_MS");
	long long t0 = now_ns();
	spy_spin(t0 + (ms ? atoll(ms) : 0) * 1000000LL);
	int r = real(fn, arg);
	long long t1 = now_ns();
	const char *path = getenv("SW_UNWIND_SPY");
	int fd = path ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600) : -1;
	if (fd >= 0) {
		char line[64];
		int n = snprintf(line, sizeof(line), "unwind %lld %lld\n", t0, t1);
		if (write(fd, line, (size_t)n) != n)
			abort();
		close(fd);
	}
	return r;
}
