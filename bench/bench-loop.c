/*
 * The cost the agent adds to a main loop: an empty poll loop (poll with no
 * descriptors and a zero timeout) timed per iteration; bench-agent.py runs
 * it with and without the agent preloaded.  A zero timeout is no wait to
 * the agent (it passes such polls straight through), so a second loop polls
 * a ready pipe with a timeout: each of its polls goes through the hooks, as
 * a real loop's waits do.  Also, in-process, the explicit
 * hook pair (stallwatch_before_wait/after_wait) alone when the agent is
 * loaded, and the resident memory after an idle second (VmRSS).  With
 * --idle-thread the process has one more thread that only sleeps, as the
 * agent's process has: the C library's waits take their multithreaded path.
 */
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
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
	int fds[2];
	if (pipe(fds) == 0 && write(fds[1], "x", 1) == 1) {
		struct pollfd p = {.fd = fds[0], .events = POLLIN};
		best = 1e18;
		for (int run = 0; run < 9; run++) {
			double t0 = now_ns();
			for (long i = 0; i < iters; i++)
				poll(&p, 1, 1000); /* ready: returns at once */
			double per = (now_ns() - t0) / (double)iters;
			if (per < best)
				best = per;
		}
		printf("ready-poll-loop ns/iteration %.1f\n", best);
	}
	void (*before)(void), (*after)(void);
	*(void **)&before = dlsym(RTLD_DEFAULT, "stallwatch_before_wait");
	*(void **)&after = dlsym(RTLD_DEFAULT, "stallwatch_after_wait");
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
