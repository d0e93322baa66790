/*
 * What sampling costs the sampled thread: the main thread starts one loop
 * iteration (a poll) and spins for a while reading the clock; every gap
 * between two reads longer than GAP_NS is time it did not run (the agent's
 * signal handler, or a preemption).  Gaps longer than LONG_NS are another
 * process's time slice on a busy machine, not the agent's doing: they are
 * counted apart.  It writes the gaps' counts and totals, and its
 * involuntary context switches over the spin (from
 * /proc/self/task/TID/status) and its thread id, to the file named by its first argument,
 * with every gap over OFF_NS as "off BEGIN END" (monotonic ns): when the
 * main thread could not have been sampled.  bench-hold.py runs it under
 * `stallwatch run` and divides by the samples.
 *
 * With --sleeper (and no agent) a second thread runs the watchdog's timing
 * alone: the same priority, no timer slack, a sleep to each point of an
 * absolute 1 ms grid; its wake-ups go to the file as "wake NS".  That is the
 * machine's own share of the sampling's gaps.  With --signaller that thread
 * also sends the main thread one real-time signal per wake-up, queued the
 * way the agent queues its own (rt_tgsigqueueinfo), to a handler that does
 * nothing but note the time it ran: what any signal costs here, the floor
 * under the agent's held time ("signals N" in the file), and how evenly a
 * signal sent on that schedule is answered, the floor under any sampler
 * that interrupts the thread with a signal ("handled NS" per signal).
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define GAP_NS      500
#define LONG_NS     1000000
#define OFF_NS      100000
#define MAX_OFF     100000
#define INTERVAL_NS 1000000ull

static unsigned long long off[MAX_OFF][2], *wakes, *handled;
static atomic_size_t nhandled;
static unsigned long long grid; /* where the sleeper's grid begins */
static size_t noff, nwakes, max_wakes, nsignals;
static volatile int spinning = 1;
static bool signaller;
static pid_t main_tid;

static unsigned long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Notes when it ran: clock_gettime() is async-signal-safe. */
static void empty_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	size_t i = atomic_fetch_add(&nhandled, 1);
	if (i < max_wakes)
		handled[i] = now_ns();
}

static long nonvoluntary(void)
{
	char path[64], line[256];
	long n = -1;
	snprintf(path, sizeof(path), "/proc/self/task/%ld/status", (long)syscall(SYS_gettid));
	FILE *f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "nonvoluntary_ctxt_switches: %ld", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/* The watchdog's schedule without its work (see swa_plat_raise_priority). */
static void *sleeper(void *arg)
{
	(void)arg;
	prctl(PR_SET_TIMERSLACK, 1ul, 0ul, 0ul, 0ul);
	struct sched_param sp = {.sched_priority = 1};
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) != 0) {
		setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), -5);
		struct {
			uint32_t size, policy;
			uint64_t flags;
			int32_t nice;
			uint32_t priority;
			uint64_t runtime, deadline, period;
		} attr = {.size = 48, .policy = SCHED_OTHER, .runtime = 100000};
		errno = 0;
		int nice = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
		attr.nice = errno ? 0 : nice;
		syscall(SYS_sched_setattr, 0, &attr, 0u); /* a 100 us slice */
	}
	unsigned long long next = now_ns();
	grid = next;
	while (spinning && nwakes < max_wakes) {
		next += INTERVAL_NS;
		struct timespec ts = {.tv_sec = (time_t)(next / 1000000000ull),
				      .tv_nsec = (long)(next % 1000000000ull)};
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		wakes[nwakes++] = now_ns();
		if (signaller) {
			siginfo_t si = {.si_signo = SIGRTMIN + 6, .si_code = SI_QUEUE};
			si.si_pid = getpid();
			si.si_uid = getuid();
			nsignals += syscall(SYS_rt_tgsigqueueinfo, getpid(), main_tid, SIGRTMIN + 6,
					    &si) == 0;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	long ms = argc > 2 ? atol(argv[2]) : 2000;
	pthread_t th;
	signaller = argc > 3 && strcmp(argv[3], "--signaller") == 0;
	bool with_sleeper = signaller || (argc > 3 && strcmp(argv[3], "--sleeper") == 0);
	main_tid = (pid_t)syscall(SYS_gettid);
	if (signaller) {
		struct sigaction sa = {.sa_sigaction = empty_handler,
				       .sa_flags = SA_SIGINFO | SA_RESTART};
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGRTMIN + 6, &sa, NULL) != 0)
			return 1;
	}
	if (with_sleeper) {
		max_wakes = (size_t)ms * 2 + 16;
		wakes = calloc(max_wakes, sizeof(*wakes));
		handled = calloc(max_wakes, sizeof(*handled));
		if (!wakes || !handled || pthread_create(&th, NULL, sleeper, NULL) != 0)
			return 1;
	}
	poll(NULL, 0, 100); /* the loop waited: its next iteration is watched */
	long nv0 = nonvoluntary();
	unsigned long long start = now_ns(), prev = start, end = start + ms * 1000000ull;
	unsigned long long gaps = 0, gap_ns = 0, long_gaps = 0, long_ns = 0;
	while (prev < end) {
		unsigned long long t = now_ns();
		if (t - prev > OFF_NS && noff < MAX_OFF) {
			off[noff][0] = prev;
			off[noff++][1] = t;
		}
		if (t - prev > LONG_NS) {
			long_gaps++;
			long_ns += t - prev;
		} else if (t - prev > GAP_NS) {
			gaps++;
			gap_ns += t - prev;
		}
		prev = t;
	}
	long nv1 = nonvoluntary();
	poll(NULL, 0, 0); /* the iteration ends */
	if (with_sleeper) {
		spinning = 0;
		pthread_join(th, NULL);
	}
	FILE *f = fopen(argv[1], "w");
	if (!f)
		return 1;
	fprintf(f, "gaps %llu\ngap-ns %llu\nlong-gaps %llu\nlong-ns %llu\npreemptions %ld\n", gaps,
		gap_ns, long_gaps, long_ns, nv1 - nv0);
	fprintf(f, "spin %llu %llu\n", start, end);
	fprintf(f, "tid %ld\n", (long)syscall(SYS_gettid));
	for (size_t i = 0; i < noff; i++)
		fprintf(f, "off %llu %llu\n", off[i][0], off[i][1]);
	if (with_sleeper)
		fprintf(f, "grid %llu\n", grid);
	if (signaller)
		fprintf(f, "signals %zu\n", nsignals);
	for (size_t i = 0; i < nwakes; i++)
		if (wakes[i] <= end)
			fprintf(f, "wake %llu\n", wakes[i]);
	size_t nh = atomic_load(&nhandled);
	for (size_t i = 0; i < nh && i < max_wakes; i++)
		if (handled[i] <= end)
			fprintf(f, "handled %llu\n", handled[i]);
	fclose(f);
	return 0;
}
