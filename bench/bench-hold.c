/*
 * What sampling costs the sampled thread: the main thread starts one loop
 * iteration (a poll) and spins for a while reading the clock; every gap
 * between two reads longer than GAP_NS is time it did not run (the agent's
 * signal handler, or a preemption).  Gaps longer than LONG_NS are another
 * process's time slice on a busy machine, not the agent's doing: they are
 * counted apart.  It writes the gaps' counts and totals, and its
 * involuntary context switches over the spin (from
 * /proc/self/task/TID/status), to the file named by its first argument;
 * bench-hold.py runs it under `stallwatch run` and divides by the samples.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define GAP_NS  500
#define LONG_NS 1000000

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

static unsigned long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	long ms = argc > 2 ? atol(argv[2]) : 2000;
	poll(NULL, 0, 100); /* the loop waited: its next iteration is watched */
	long nv0 = nonvoluntary();
	unsigned long long start = now_ns(), prev = start, end = start + ms * 1000000ull;
	unsigned long long gaps = 0, gap_ns = 0, long_gaps = 0, long_ns = 0;
	while (prev < end) {
		unsigned long long t = now_ns();
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
	FILE *f = fopen(argv[1], "w");
	if (!f)
		return 1;
	fprintf(f, "gaps %llu\ngap-ns %llu\nlong-gaps %llu\nlong-ns %llu\npreemptions %ld\n", gaps,
		gap_ns, long_gaps, long_ns, nv1 - nv0);
	fclose(f);
	return 0;
}
