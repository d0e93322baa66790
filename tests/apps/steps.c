/*
 * The stalls of the agent's test apps (see steps.h).  Every function that
 * must show up in a stack is noinline and does work after its call, so
 * neither inlining nor tail calls remove it from the stack; the test checks
 * these names with llvm-symbolizer.
 *
 *   busy:MS          stall_busy_outer -> stall_busy_inner spins MS
 *   hitch:MS         stall_hitch spins MS (below the threshold: no stall)
 *   mutex:MS         a helper thread holds a mutex MS; stall_mutex waits for it
 *   sleep:MS         stall_sleep: one nanosleep of MS, EINTR ignored, not retried
 *   recurse:N:MS     stall_recurse N deep, spinning MS at the bottom
 *   threads:N        N idle threads blocked on a condition variable
 *   burst:N:MS       N iterations each busy MS (short: SIGSTOP test)
 *   idle:MS          the loop idles MS
 *   child:MS         a child (this program, re-executed) stalls MS and reports
 *                    whether the agent is loaded in it
 *   plugin:MS        dlopen $STALLAPP_PLUGIN and stall MS in plugin_outer ->
 *                    plugin_inner, then dlclose it
 *   gap:MS           idle time between the following steps
 *   pollwait:MS      stall_pollwait: a blocking poll of a silent pipe for MS
 *   zeropoll:MS      stall_zeropoll spins MS with a zero-timeout poll each 1 ms
 *   readypoll:MS     stall_readypoll spins MS, polling a ready pipe with a
 *                    100 ms timeout each 2 ms (returns at once: no wait)
 *
 * and the hazards of hazards.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "steps.h"

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif

int step_gap_ms = 200;
static volatile unsigned long sink;

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

NOINLINE static void spin_ms(int ms)
{
	long long end = now_ns() + ms * 1000000LL;
	while (now_ns() < end)
		sink++;
	__asm__ volatile("" ::: "memory");
}

NOINLINE void stall_busy_inner(int ms);
NOINLINE void stall_busy_inner(int ms)
{
	spin_ms(ms);
	sink += 1;
}

NOINLINE void stall_busy_outer(int ms);
NOINLINE void stall_busy_outer(int ms)
{
	stall_busy_inner(ms);
	sink += 2;
}

NOINLINE void stall_hitch(int ms);
NOINLINE void stall_hitch(int ms)
{
	spin_ms(ms);
	sink += 3;
}

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t ready_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_cond = PTHREAD_COND_INITIALIZER;
static int holder_ready;

static void *holder(void *arg)
{
	int ms = (int)(long)arg;
	pthread_mutex_lock(&held);
	pthread_mutex_lock(&ready_lock);
	holder_ready = 1;
	pthread_cond_signal(&ready_cond);
	pthread_mutex_unlock(&ready_lock);
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	pthread_mutex_unlock(&held);
	return NULL;
}

NOINLINE void stall_mutex(int ms);
NOINLINE void stall_mutex(int ms)
{
	pthread_t t;
	holder_ready = 0;
	pthread_create(&t, NULL, holder, (void *)(long)ms);
	pthread_mutex_lock(&ready_lock);
	while (!holder_ready)
		pthread_cond_wait(&ready_cond, &ready_lock);
	pthread_mutex_unlock(&ready_lock);
	pthread_mutex_lock(&held);
	pthread_mutex_unlock(&held);
	pthread_join(t, NULL);
	sink += 4;
}

NOINLINE void stall_sleep(int ms);
NOINLINE void stall_sleep(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	int r = nanosleep(&ts, NULL); /* EINTR deliberately not retried */
	if (r < 0)
		printf("sleep interrupted\n");
	sink += 5;
}

NOINLINE int stall_recurse(int depth, int ms);
NOINLINE int stall_recurse(int depth, int ms)
{
	volatile char pad[16];
	pad[0] = (char)depth;
	if (depth <= 1)
		spin_ms(ms);
	else
		stall_recurse(depth - 1, ms);
	return pad[0] + (int)(sink & 1);
}

static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cond = PTHREAD_COND_INITIALIZER;

static void *idle_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&idle_lock);
	for (;;)
		pthread_cond_wait(&idle_cond, &idle_lock);
	return NULL;
}

static void start_idle_threads(int n)
{
	for (int i = 0; i < n; i++) {
		pthread_t t;
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setstacksize(&a, 64 * 1024);
		if (pthread_create(&t, &a, idle_thread, NULL) == 0)
			pthread_detach(t);
		pthread_attr_destroy(&a);
	}
}

NOINLINE static void stall_plugin(int ms)
{
	const char *path = getenv("STALLAPP_PLUGIN");
	void *h = path ? dlopen(path, RTLD_NOW) : NULL;
	void (*fn)(int) = NULL;
	if (h)
		*(void **)&fn = dlsym(h, "plugin_outer");
	if (!fn) {
		printf("plugin unavailable\n");
		return;
	}
	fn(ms);
	dlclose(h);
	sink += 6;
}

static void run_child(int ms)
{
	char self[4096], arg[32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return;
	self[n] = '\0';
	snprintf(arg, sizeof(arg), "busy:%d", ms);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		execl(self, self, "--child", "gap:50", arg, (char *)NULL);
		_exit(127);
	}
	int status;
	waitpid(pid, &status, 0);
	printf("child pid=%d status=%d\n", (int)pid, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* A blocking call inside a callback: the loop is not waiting, it is stuck. */
NOINLINE void stall_pollwait(int ms);
NOINLINE void stall_pollwait(int ms)
{
	int fds[2];
	if (pipe(fds) < 0)
		return;
	struct pollfd p = {.fd = fds[0], .events = POLLIN};
	long long end = now_ns() + ms * 1000000LL;
	while (now_ns() < end) /* EINTR: wait out the rest */
		poll(&p, 1, (int)((end - now_ns()) / 1000000) + 1);
	close(fds[0]);
	close(fds[1]);
	sink++;
}

/* Polls that return at once are not waits: this is a busy stall. */
NOINLINE void stall_zeropoll(int ms);
NOINLINE void stall_zeropoll(int ms)
{
	long long end = now_ns() + ms * 1000000LL;
	while (now_ns() < end) {
		poll(NULL, 0, 0);
		spin_ms(1);
	}
	sink++;
}

/*
 * Polls with a timeout that find their descriptor ready (a callback reading
 * a child's output as it comes): they never wait, so this is a busy stall,
 * however many of them it makes.
 */
NOINLINE void stall_readypoll(int ms);
NOINLINE void stall_readypoll(int ms)
{
	int fds[2];
	if (pipe(fds) < 0 || write(fds[1], "x", 1) != 1)
		return;
	struct pollfd p = {.fd = fds[0], .events = POLLIN};
	long long end = now_ns() + ms * 1000000LL;
	while (now_ns() < end) {
		poll(&p, 1, 100);
		spin_ms(2);
	}
	close(fds[0]);
	close(fds[1]);
	sink++;
}

int run_step(const char *step)
{
	char kind[32];
	int a = 0, b = 0;
	const char *colon = strchr(step, ':');
	size_t len = colon ? (size_t)(colon - step) : strlen(step);
	if (len >= sizeof(kind))
		return -1;
	memcpy(kind, step, len);
	kind[len] = '\0';
	if (colon)
		sscanf(colon + 1, "%d:%d", &a, &b);
	if (!strcmp(kind, "gap")) {
		step_gap_ms = a;
		return 0;
	}
	if (!strcmp(kind, "idle"))
		return 0; /* the loop idles; see the apps */
	long long t0 = now_ns();
	printf("step %s begin %lld\n", kind, t0);
	if (!strcmp(kind, "busy"))
		stall_busy_outer(a);
	else if (!strcmp(kind, "hitch"))
		stall_hitch(a);
	else if (!strcmp(kind, "mutex"))
		stall_mutex(a);
	else if (!strcmp(kind, "sleep"))
		stall_sleep(a);
	else if (!strcmp(kind, "recurse"))
		stall_recurse(a, b);
	else if (!strcmp(kind, "threads"))
		start_idle_threads(a);
	else if (!strcmp(kind, "burst"))
		return -2; /* handled by the loop: several iterations */
	else if (!strcmp(kind, "plugin"))
		stall_plugin(a);
	else if (!strcmp(kind, "child"))
		run_child(a);
	else if (!strcmp(kind, "pollwait"))
		stall_pollwait(a);
	else if (!strcmp(kind, "zeropoll"))
		stall_zeropoll(a);
	else if (!strcmp(kind, "readypoll"))
		stall_readypoll(a);
	else if (hazard_step(kind, a, b) < 0)
		return -1;
	long long t1 = now_ns();
	printf("step %s end %lld elapsed_ms=%.3f\n", kind, t1, (double)(t1 - t0) / 1e6);
	fflush(stdout);
	return 0;
}
