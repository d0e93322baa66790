/*
 * What the benchmarks share: a clock read in seconds and a small, fast
 * pseudo-random generator (xorshift64) whose seed each benchmark picks, so
 * that its input is the same from run to run.
 */
#ifndef SW_BENCH_H
#define SW_BENCH_H

#include <stdint.h>
#include <time.h>

/* Seconds on clock: CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID, ... */
static inline double bench_seconds(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The next number of the sequence *state (never 0) holds. */
static inline uint64_t bench_xorshift(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

#endif
