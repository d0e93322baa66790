/*
 * The cost the agent adds to a main loop: an empty poll loop (poll with no
 * descriptors and a zero timeout) timed per iteration; bench-agent.py runs
 * it with and without the agent preloaded.  A zero timeout is no wait to
 * the agent (it passes such polls straight through), so a second loop polls
 * a ready pipe with a timeout: each of its polls goes through the hooks, as
 * a real loop's waits do.  Also, in-process, the explicit
 * hook pair (stallwatch_before_wait/after_wait) alone when the agent is
 * loaded, and the resident memory after an idle second (VmRSS).
 *
 * With the agent loaded, the ready poll loop also runs in blocks that
 * alternate between the hooked poll and the C library's own, in the same
 * process: both sides have the agent's idle threads, and a slow phase of
 * the machine falls on both alike, which separate processes minutes apart
 * cannot promise.  A block is a few milliseconds, well under the agent's
 * threshold, so the blocks that bypass the hook are no stall to it.  With
 * --idle-thread the process has one more thread that only sleeps, as the
 * agent's process has: the C library's waits take their multithreaded path.
 */
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* CPU time of this thread: being preempted on a busy machine does not count. */
static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

static void *idle(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* ns per poll of one block of n polls of a ready descriptor, through poll_fn. */
static double ready_block(int (*poll_fn)(struct pollfd *, nfds_t, int), struct pollfd *p, long n)
{
	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		poll_fn(p, 1, 1000);
	return (now_ns() - t0) / (double)n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * The ready poll loop in alternating blocks through the hooked poll and
 * the C library's own (looked up in libc itself, past the preloaded agent):
 * prints each side's median block and the median of the blocks' paired
 * differences.  The order within a pair alternates too.
 */
static void ready_ab(struct pollfd *p)
{
	enum { PAIRS = 101, BLOCK = 10000 };
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	int (*libc_poll)(struct pollfd *, nfds_t, int);
	*(void **)&libc_poll = libc ? dlsym(libc, "poll") : NULL;
	if (!libc_poll || libc_poll == poll)
		return;
	static double hooked[PAIRS], plain[PAIRS], diff[PAIRS];
	ready_block(poll, p, BLOCK); /* the hook's first look at this wait */
	for (int i = 0; i < PAIRS; i++) {
		if (i % 2) {
			plain[i] = ready_block(libc_poll, p, BLOCK);
			hooked[i] = ready_block(poll, p, BLOCK);
		} else {
			hooked[i] = ready_block(poll, p, BLOCK);
			plain[i] = ready_block(libc_poll, p, BLOCK);
		}
		diff[i] = hooked[i] - plain[i];
	}
	printf("ab-hook-diff ns/iteration %.1f\n", median(diff, PAIRS));
	printf("ab-hooked ns/iteration %.1f\n", median(hooked, PAIRS));
	printf("ab-libc ns/iteration %.1f\n", median(plain, PAIRS));
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--idle-thread") == 0) {
		pthread_t t;
		if (pthread_create(&t, NULL, idle, NULL) != 0)
			return 1;
		argc--;
		argv++;
	}
	long iters = argc > 1 ? atol(argv[1]) : 1000000;
	double best = 1e18;
	for (int run = 0; run < 7; run++) {
		double t0 = now_ns();
		for (long i = 0; i < iters; i++)
			poll(NULL, 0, 0);
		double per = (now_ns() - t0) / (double)iters;
		if (per < best)
			best = per;
	}
	printf("poll-loop ns/iteration %.1f\n", best);
	int fds[2] = {-1, -1};
	bool ready = pipe(fds) == 0 && write(fds[1], "x", 1) == 1; /* a pipe poll finds readable */
	struct pollfd ready_fd = {.fd = fds[0], .events = POLLIN};
	if (ready) {
		best = 1e18;
		for (int run = 0; run < 9; run++) {
			double per = ready_block(poll, &ready_fd, iters);
			if (per < best)
				best = per;
		}
		printf("ready-poll-loop ns/iteration %.1f\n", best);
	}
	void (*before)(void), (*after)(void);
	*(void **)&before = dlsym(RTLD_DEFAULT, "stallwatch_before_wait");
	*(void **)&after = dlsym(RTLD_DEFAULT, "stallwatch_after_wait");
	if (before && ready)
		ready_ab(&ready_fd);
	if (before && after) {
		double hb = 1e18;
		for (int run = 0; run < 5; run++) {
			double t0 = now_ns();
			for (long i = 0; i < iters * 10; i++) {
				before();
				after();
			}
			double per = (now_ns() - t0) / (double)(iters * 10);
			if (per < hb)
				hb = per;
		}
		printf("hook-pair ns/iteration %.1f\n", hb);
	}
	struct timespec ts = {1, 0};
	nanosleep(&ts, NULL);
	poll(NULL, 0, 200);
	printf("rss-kib %ld\n", rss_kib());
	return 0;
}
